"""The ten tools of OpenBioRQ (in the paper's order) and the live caller that runs them.

:class:`LiveBioTools` makes live calls: one :class:`ServiceClient` per service (created on
first use, closed with it), rate limiters per limiter name (PubMed and NCBI Datasets each
have NCBI's own), keys from the environment (never recorded), base URLs overridable per
tool (:func:`load_endpoints`: the local servers of ``drsearch dev apis``, a mirror).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from ..contract import InvalidInputError
from ..contract.retry import RetryPolicy
from .biomcp import BIOMCP
from .domains import DOMAIN_TOOLS
from .http import DEFAULT_USER_AGENT, RateLimiter, ServiceClient
from .services import HTTP_TOOLS
from .spec import BioTool, Session, envelope

BIOTOOL_NAMES: tuple[str, ...] = tuple(t.name for t in (*HTTP_TOOLS, BIOMCP))
"""OpenBioRQ's ten tools, in the paper's order: pubmed, clinicaltrialsgov, openfda,
opentargets, chembl, uniprot, pubchem, kegg, ncbi_datasets, biomcp."""
DOMAIN_TOOL_NAMES: tuple[str, ...] = tuple(t.name for t in DOMAIN_TOOLS)
"""DrBencher's financial and security tools (:mod:`.domains`): sec_tickers, sec_xbrl, nvd,
epss, cisa_kev."""
BIOTOOLS: dict[str, BioTool] = {t.name: t for t in (*HTTP_TOOLS, BIOMCP, *DOMAIN_TOOLS)}
"""name -> tool, every agent tool over an outside service: the ten, then the domain tools."""


LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


def load_endpoints(path: str | Path | None) -> dict[str, str]:
    """``{tool: base URL or MCP endpoint}`` from a JSON file (None: no overrides).
    InvalidInputError, in one line, for a file that is not such an object."""
    if path is None:
        return {}
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise InvalidInputError(f"--tool-endpoints {p}: not readable JSON ({e})") from None
    if not isinstance(data, dict) or not all(isinstance(v, str) and v for v in data.values()):
        raise InvalidInputError(f"--tool-endpoints {p}: expected a JSON object of tool -> URL")
    unknown = sorted(set(data) - set(BIOTOOLS))
    if unknown:
        raise InvalidInputError(
            f"--tool-endpoints {p}: unknown tool(s) {', '.join(unknown)} (tools: {', '.join(BIOTOOL_NAMES)})"
        )
    return dict(data)


def utc_date() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


class LiveBioTools:
    """Live calls of the biomedical tools. ``env``: where keys are read (default os.environ);
    ``transport``: an httpx transport for every client (tests); ``today``: the access date;
    ``rates``: request starts per second by tool, where the caller sets the politeness itself
    (a generator config's ``domain_apis``), replacing the tool's own rate and the loopback
    rule; ``user_agent``: the ``User-Agent`` every client sends (default the toolkit's);
    ``sleep``: the rate limiters' waits (tests count them)."""

    def __init__(
        self,
        endpoints: Mapping[str, str] | None = None,
        *,
        env: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        today: Callable[[], str] = utc_date,
        policy: RetryPolicy | None = None,
        rates: Mapping[str, float] | None = None,
        user_agent: str | None = None,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self.endpoints = dict(endpoints or {})
        self.rates = dict(rates or {})
        self.user_agent = user_agent
        self._sleep = sleep
        self.env = os.environ if env is None else env
        self.transport = transport
        self.today = today
        self.policy = policy
        self._clients: dict[str, ServiceClient] = {}
        self._limiters: dict[str, RateLimiter] = {}
        self._lock = threading.Lock()

    def endpoint(self, tool: BioTool) -> str:
        return self.endpoints.get(tool.name, tool.base_url)

    def rate(self, tool: BioTool) -> float:
        """Request starts per second for ``tool``'s service (its key's rate when the key is set);
        unlimited (1000/s) for an endpoint on this machine: politeness is owed to public services,
        and a local stand-in or mirror is not one. A rate the caller gave (``rates``) wins."""
        if tool.name in self.rates:
            return self.rates[tool.name]
        if urlsplit(self.endpoint(tool)).hostname in LOOPBACK:
            return 1000.0
        if tool.key_env and self.env.get(tool.key_env) and tool.rate_with_key_per_s:
            return tool.rate_with_key_per_s
        return tool.rate_per_s

    def _client(self, tool: BioTool) -> ServiceClient:
        with self._lock:
            client = self._clients.get(tool.name)
            if client is None:
                limiter = self._limiters.setdefault(tool.limiter or tool.name,
                                                    RateLimiter(self.rate(tool), sleep=self._sleep))
                client = ServiceClient(
                    tool.service,
                    self.endpoint(tool),
                    self.rate(tool),
                    transport=self.transport,
                    limiter=limiter,
                    policy=self.policy,
                    user_agent=self.user_agent or DEFAULT_USER_AGENT,
                )
                self._clients[tool.name] = client
            return client

    def session(self, tool: BioTool) -> Session:
        if tool.transport == "mcp":
            return Session(None, endpoint=self.endpoint(tool))
        key = self.env.get(tool.key_env, "") if tool.key_env else ""
        key_header = tool.extra.get("key_header")
        return Session(
            self._client(tool),
            key_param=("api_key", key) if key and not key_header else None,
            key_header=(str(key_header), key) if key and key_header else None,
            endpoint=self.endpoint(tool),
        )

    def call(self, name: str, args: dict[str, Any]) -> bytes:
        """The envelope of the live call ``name(**args)`` (``args`` already canonical).
        Raises ServiceError when the service cannot answer."""
        tool = BIOTOOLS[name]
        session = self.session(tool)
        outcome = tool.run(session, args)
        return envelope(tool, args, outcome, session.requests, self.today())

    def close(self) -> None:
        with self._lock:
            for c in self._clients.values():
                c.close()
            self._clients.clear()


def signatures(names: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``{tool: {service, endpoints}}`` of the named biomedical tools."""
    return {n: BIOTOOLS[n].signature() for n in names if n in BIOTOOLS}


__all__ = ["BIOTOOLS", "BIOTOOL_NAMES", "DOMAIN_TOOL_NAMES", "LiveBioTools", "load_endpoints", "signatures",
           "utc_date"]
