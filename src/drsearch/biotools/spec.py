"""What a biomedical tool is: a schema, the service it calls, and how one call runs.

A :class:`BioTool` is data plus one function: ``run(session, args)`` makes the documented
requests through a :class:`Session` (which records each request as a line of provenance)
and returns an :class:`Outcome`. The agents layer sees only :func:`envelope` bytes: what a
call answered, canonical JSON, the unit that the replay cache and tool snapshots store.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode

from ..contract import canonical_json
from .http import Expect, Reply, ServiceClient
from .schema import check_arguments

Transport = Literal["http", "mcp"]
MAX_CONTENT_CHARS = 200_000
"""Characters of a service's answer kept in the envelope (the model sees the preset's cap)."""
TRUNCATED = " …[truncated]"


@dataclass(frozen=True, slots=True)
class Outcome:
    """A call's answer: success (the service's own verdict), its format and its text."""

    ok: bool
    status: int
    content: str
    format: Literal["json", "text"]


class Session:
    """The requests of one tool call to one service, each recorded (without credentials)."""

    def __init__(
        self,
        client: ServiceClient | None,
        key_param: tuple[str, str] | None = None,
        key_header: tuple[str, str] | None = None,
        endpoint: str = "",
    ) -> None:
        self.client = client
        self.key_param, self.key_header = key_param, key_header
        self.endpoint = endpoint  # the base URL or, for an MCP tool, the server's address
        self.requests: list[str] = []

    def record(self, line: str) -> None:
        self.requests.append(line if len(line) <= 300 else line[:300] + "…")

    def call(
        self, method: str, path: str, expect: Expect, params: dict[str, Any] | None = None, body: Any = None
    ) -> Reply:
        assert self.client is not None
        shown = f"{method} {path}" + (f"?{urlencode(params)}" if params else "")
        self.record(shown)
        sent = dict(params or {})
        if self.key_param is not None:
            sent[self.key_param[0]] = self.key_param[1]
        headers = dict([self.key_header]) if self.key_header is not None else None
        return self.client.request(method, path, expect, params=sent or None, body=body, headers=headers)


def json_outcome(reply: Reply) -> Outcome:
    """A JSON reply as canonical JSON text (one spelling of one answer); a 4xx that is not
    JSON is kept as text."""
    try:
        content = canonical_json(json.loads(reply.text))
        fmt: Literal["json", "text"] = "json"
    except ValueError:
        content, fmt = reply.text, "text"
    return Outcome(reply.ok, reply.status, content, fmt)


def text_outcome(reply: Reply) -> Outcome:
    return Outcome(reply.ok, reply.status, reply.text, "text")


@dataclass(frozen=True)
class BioTool:
    """One agent tool over one public service.

    ``endpoints``: every request the tool may make (``METHOD /path``), the API it is bound
    to (a tool snapshot records them; a snapshot of other endpoints is refused). ``rate_per_s``:
    polite request starts per second (``rate_with_key_per_s`` when ``key_env`` is set in the
    environment). ``refine`` checks what the schema cannot say (exactly one of two arguments).
    """

    name: str
    service: str
    description: str
    parameters: dict[str, Any]
    endpoints: tuple[str, ...]
    base_url: str
    run: Callable[[Session, dict[str, Any]], Outcome]
    rate_per_s: float = 1.0
    limiter: str = ""
    key_env: str | None = None
    rate_with_key_per_s: float | None = None
    transport: Transport = "http"
    refine: Callable[[dict[str, Any]], None] | None = None
    docs: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def check(self, args: object) -> dict[str, Any]:
        """The canonical arguments of a call (InvalidArgumentsError when they do not fit)."""
        canonical = check_arguments(self.name, self.parameters, args)
        if self.refine is not None:
            self.refine(canonical)
        return canonical

    def signature(self) -> dict[str, Any]:
        """What binds a recorded answer to this tool's API: service and endpoints."""
        return {"endpoints": list(self.endpoints), "service": self.service}

    def schema(self) -> dict[str, Any]:
        return {"description": self.description, "name": self.name, "parameters": self.parameters}


def envelope(
    tool: BioTool, args: dict[str, Any], outcome: Outcome, requests: list[str], accessed: str
) -> bytes:
    """The stored answer of one call: canonical JSON of the tool, its arguments, the service,
    the requests made, the access date (UTC, ``YYYY-MM-DD``), status and content (capped)."""
    content = outcome.content
    if len(content) > MAX_CONTENT_CHARS:
        content = content[: MAX_CONTENT_CHARS - len(TRUNCATED)] + TRUNCATED
    body = {
        "accessed": accessed,
        "arguments": args,
        "biotool": tool.name,
        "content": content,
        "format": outcome.format,
        "ok": outcome.ok,
        "requests": requests,
        "service": tool.service,
        "status": outcome.status,
    }
    return canonical_json(body).encode("utf-8")


def provenance(body: dict[str, Any]) -> str:
    """The one line of provenance the model sees above an answer."""
    return (
        f"[source: {body['service']} · {'; '.join(body['requests']) or 'no request'} · "
        f"accessed {body['accessed']}]"
    )


def render(body_bytes: bytes, limit: int) -> str:
    """What the model reads for a stored answer: the provenance line, then the content,
    the whole capped at ``limit`` characters; a service's refusal reads as a tool error."""
    body = json.loads(body_bytes)
    head = provenance(body)
    if body["ok"]:
        text = f"{head}\n{body['content']}"
    else:
        text = canonical_json(
            {
                "error": {
                    "message": f"HTTP {body['status']}: {body['content']}"[:2000],
                    "type": "service_refused",
                },
                "source": head,
            }
        )
    return text if len(text) <= limit else text[: limit - len(TRUNCATED)] + TRUNCATED


__all__ = [
    "MAX_CONTENT_CHARS",
    "BioTool",
    "Outcome",
    "Session",
    "envelope",
    "json_outcome",
    "provenance",
    "render",
    "text_outcome",
]
