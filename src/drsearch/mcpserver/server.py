"""The MCP server on the official SDK (``mcp`` 2.x, its low-level ``Server``).

The low-level server rather than the decorator API, so the tool schemas are exactly
:func:`~drsearch.mcpserver.tools.tool_definitions` (strict-compatible, hand-written) and
every call, however malformed, reaches :func:`~drsearch.mcpserver.tools.call_tool`, whose
answer is a tool result (``isError`` for refusals). Engine calls run on worker threads:
the engine is thread-safe and its C kernel releases the GIL, so one slow query does not
hold up the other sessions of a streamable-HTTP server.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from .. import __version__
from ..contract import Searcher
from .tools import McpSettings, call_tool, tool_definitions

SERVER_NAME = "drsearch"


def build_server(searcher: Searcher, settings: McpSettings) -> Server[Any]:
    """An MCP server whose tools answer from ``searcher`` (see drsearch.mcpserver.tools)."""
    tools = [types.Tool(name=t["name"], description=t["description"], input_schema=t["inputSchema"])
             for t in tool_definitions(settings)]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments: object = {} if params.arguments is None else params.arguments
        answer = await anyio.to_thread.run_sync(call_tool, params.name, arguments, searcher, settings)
        return types.CallToolResult(content=[types.TextContent(type="text", text=answer.text)],
                                    is_error=answer.is_error)

    return Server(SERVER_NAME, version=__version__, on_list_tools=list_tools, on_call_tool=call,
                  instructions="Search a frozen, reproducible web corpus: search, then get_document or open.")


def run_stdio(server: Server[Any]) -> None:
    """Serve one client on stdin/stdout until it closes them (logs go to stderr only)."""

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


MAX_SESSIONS_DEFAULT = 64
SESSION_IDLE_TIMEOUT_S_DEFAULT = 600.0


def run_streamable_http(server: Server[Any], host: str, port: int, log_level: str = "warning", *,
                        max_sessions: int = MAX_SESSIONS_DEFAULT,
                        session_idle_timeout_s: float = SESSION_IDLE_TIMEOUT_S_DEFAULT) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` (uvicorn) until interrupted.

    At most ``max_sessions`` sessions are open at once (a request that would open another
    gets 503 until one ends); a session without a request for ``session_idle_timeout_s``
    seconds is closed, so that clients that go away without ending theirs do not hold the
    places forever. Both are the SDK's own session manager's limits (its defaults: 10,000
    sessions, 30 minutes).
    """
    import uvicorn

    app = server.streamable_http_app(host=host, max_sessions=max_sessions,
                                     session_idle_timeout=session_idle_timeout_s)
    print(f"drsearch mcp: streamable HTTP on http://{host}:{port}/mcp", file=sys.stderr, flush=True)
    uvicorn.run(app, host=host, port=port, log_level=log_level)


__all__ = ["MAX_SESSIONS_DEFAULT", "SERVER_NAME", "SESSION_IDLE_TIMEOUT_S_DEFAULT", "build_server",
           "run_stdio", "run_streamable_http"]
