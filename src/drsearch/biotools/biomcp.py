"""``biomcp``: the tool is an MCP client of a BioMCP server (its ``search`` and ``fetch`` tools).

BioMCP (genomoncology/biomcp) is itself an MCP server over PubMed/PubTator3, ClinicalTrials.gov,
variant and gene sources; its unified tools are ``search(domain?, query)`` and
``fetch(domain, id)``. The endpoint is a streamable-HTTP URL (``biomcp run --mode
streamable_http``: ``http://HOST:PORT/mcp``) or a command that speaks MCP on stdio (the
default, ``biomcp run``). Each call opens a session, calls one tool and closes it: nothing
is kept between calls. The answer is the tool result's text content; ``isError`` is a
refusal the model sees. No session, or a session that breaks, is a ServiceError.
"""

from __future__ import annotations

import shlex
from typing import Any

from ..contract import canonical_json
from .errors import InvalidArgumentsError, ServiceError
from .spec import BioTool, Outcome, Session

DOMAINS = ("article", "trial", "variant", "gene", "drug", "disease")
TIMEOUT_S = 60.0


async def _call(endpoint: str, tool: str, arguments: dict[str, Any]) -> Outcome:
    from mcp import Client, StdioServerParameters

    server: Any
    if endpoint.startswith(("http://", "https://")):
        server = endpoint
    else:
        argv = shlex.split(endpoint)
        server = StdioServerParameters(command=argv[0], args=argv[1:])
    async with Client(server, read_timeout_seconds=TIMEOUT_S) as client:
        result = await client.call_tool(tool, arguments)
    texts = [str(getattr(c, "text", "")) for c in result.content if getattr(c, "type", "") == "text"]
    is_error = bool(getattr(result, "is_error", False) or getattr(result, "isError", False))
    return Outcome(not is_error, 200, "\n".join(texts), "text")


def _biomcp(s: Session, a: dict[str, Any]) -> Outcome:
    import anyio

    tool = a["action"]
    arguments: dict[str, Any] = {k: a[k] for k in ("domain", "query", "id") if k in a}
    s.record(f"MCP tools/call {tool} {canonical_json(arguments)}")
    try:
        return anyio.run(_call, s.endpoint, tool, arguments)
    except ImportError as e:
        raise ServiceError(
            f"biomcp: the MCP client is not installed ({e}); pip install 'drsearch[mcp]'"
        ) from None
    except Exception as e:  # any transport or protocol failure: no answer came
        raise ServiceError(f"biomcp at {s.endpoint}: {e.__class__.__name__}: {str(e)[:300]}") from None


def _refine(a: dict[str, Any]) -> None:
    if a["action"] == "fetch" and not ("id" in a and "domain" in a and "query" not in a):
        raise InvalidArgumentsError("biomcp: fetch takes domain and id")
    if a["action"] == "search" and ("query" not in a or "id" in a):
        raise InvalidArgumentsError("biomcp: search takes query (and optionally domain), not id")


BIOMCP = BioTool(
    name="biomcp",
    service="BioMCP (MCP server)",
    description=(
        "Ask BioMCP (literature via PubTator3/PubMed, ClinicalTrials.gov, variants, genes, drugs): "
        "action 'search' with a `query` (optionally a `domain`), or 'fetch' a record by "
        "`domain` and `id` (a PMID, an NCT id, an rsid, …)."
    ),
    parameters={
        "type": "object",
        "additionalProperties": False,
        "required": ["action"],
        "properties": {
            "action": {"type": "string", "enum": ["search", "fetch"]},
            "domain": {"type": "string", "enum": list(DOMAINS)},
            "query": {"type": "string", "minLength": 1, "maxLength": 500},
            "id": {"type": "string", "minLength": 1, "maxLength": 100},
        },
    },
    endpoints=("MCP tools/call search", "MCP tools/call fetch"),
    base_url="biomcp run",
    run=_biomcp,
    rate_per_s=2.0,
    limiter="biomcp",
    transport="mcp",
    refine=_refine,
    docs="https://github.com/genomoncology/biomcp",
)

__all__ = ["BIOMCP"]
