"""The MCP layer: drsearch's corpus as Model Context Protocol tools (docs/CLIENTS.md).

Public API (pinned by tests/mcpserver/test_mcp.py)::

    McpSettings(k, snippet_chars, max_k); tool_definitions(settings); TOOL_NAMES
    call_tool(name, arguments, searcher, settings) -> Answer(text, is_error)

The SDK wiring (``build_server``, ``run_stdio``, ``run_streamable_http``) is in
``drsearch.mcpserver.server`` and needs the ``mcp`` extra; this package imports without it.
"""

from .tools import (
    SEARCH_K_DEFAULT,
    SNIPPET_CHARS_DEFAULT,
    TOOL_NAMES,
    Answer,
    McpSettings,
    call_tool,
    tool_definitions,
)

__all__ = [
    "SEARCH_K_DEFAULT",
    "SNIPPET_CHARS_DEFAULT",
    "TOOL_NAMES",
    "Answer",
    "McpSettings",
    "call_tool",
    "tool_definitions",
]
