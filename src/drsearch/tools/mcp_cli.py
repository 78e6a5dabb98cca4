"""``drsearch mcp``: serve an index as MCP tools over stdio or streamable HTTP.

Bad options are one line on stderr and exit 2 before anything is served: a missing or
foreign index, a malformed blocklist, --host/--port with stdio, an address that cannot be
bound. On stdio, stdout carries the protocol only; every message goes to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TextIO

from ..contract import MAX_K, InvalidInputError
from ..mcpserver import SEARCH_K_DEFAULT, SNIPPET_CHARS_DEFAULT
from .argtypes import int_in, seconds
from .binding import check_bindable
from .blocking import add_blocklist_options, requested_blocklist
from .embed_cli import add_retriever_options, open_checked


def cmd_mcp(args: argparse.Namespace, out: TextIO) -> int:
    from ..agents import EngineSearcher  # the agents extra (httpx)
    from ..mcpserver import McpSettings
    from ..mcpserver.server import (  # the mcp extra (the SDK)
        MAX_SESSIONS_DEFAULT,
        SESSION_IDLE_TIMEOUT_S_DEFAULT,
        build_server,
        run_stdio,
        run_streamable_http,
    )

    http = args.transport == "streamable-http"
    if not http and (args.host is not None or args.port is not None):
        raise InvalidInputError("--host/--port: only with --transport streamable-http")
    if not http and (args.max_sessions is not None or args.session_idle_timeout is not None):
        raise InvalidInputError("--max-sessions/--session-idle-timeout: only with streamable-http")
    max_sessions = MAX_SESSIONS_DEFAULT if args.max_sessions is None else args.max_sessions
    idle_s = args.session_idle_timeout or SESSION_IDLE_TIMEOUT_S_DEFAULT  # given: positive
    host, port = args.host or "127.0.0.1", 8000 if args.port is None else args.port
    if http:
        check_bindable(host, port)
    settings = McpSettings(k=args.k, snippet_chars=args.snippet_chars, page_chars=args.page_chars)
    listed, policy = requested_blocklist(args)
    # --retriever: dense/hybrid need their vectors and model (one line, exit 2 without them)
    engine = open_checked(args, listed, policy, check_blocklist=not args.allow_missing_blocked)
    with contextlib.closing(engine):
        print(f"drsearch mcp: serving {engine.path} (identity {engine.meta['content_identity']}, "
              f"{len(engine.blocklist)} blocked docids; retriever {args.retriever}; k={settings.k}, "
              f"snippet_chars={settings.snippet_chars}, page_chars={settings.page_chars}) "
              f"over {args.transport}", file=sys.stderr, flush=True)
        server = build_server(EngineSearcher(engine), settings)
        if http:
            run_streamable_http(server, host, port, args.log_level, max_sessions=max_sessions,
                                session_idle_timeout_s=idle_s)
        else:
            run_stdio(server)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("mcp", help="serve an index as MCP tools: search, get_document, open "
                                   "(docs/CLIENTS.md)")
    p.add_argument("--database", required=True, metavar="CORPUS",
                   help="index file (.sqlite3), or a release directory (its search/corpus.sqlite3)")
    add_blocklist_options(p)
    p.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio",
                   help="stdio (a client launches this command; default) or streamable-http (at /mcp)")
    p.add_argument("--host", help="address to bind with streamable-http (default 127.0.0.1)")
    p.add_argument("--port", type=int_in(0, 65535), help="port with streamable-http (default 8000)")
    p.add_argument("--k", type=int_in(1, MAX_K), default=SEARCH_K_DEFAULT,
                   help=f"results of a search that gives no k (1..{MAX_K}; default {SEARCH_K_DEFAULT}, "
                        "as BrowseComp-Plus)")
    p.add_argument("--snippet-chars", type=int_in(1), default=SNIPPET_CHARS_DEFAULT, metavar="N",
                   help=f"characters of each search result's snippet (default {SNIPPET_CHARS_DEFAULT})")
    p.add_argument("--page-chars", type=int_in(1), default=10_000, metavar="N",
                   help="default and largest length of a get_document or open page (default 10000)")
    p.add_argument("--max-sessions", type=int_in(1, 1_000_000), metavar="N",
                   help="open sessions at once with streamable-http; one more gets 503 (default 64)")
    p.add_argument("--session-idle-timeout", type=seconds(86400), metavar="S",
                   help="close a streamable-http session idle this long (default 600)")
    p.add_argument("--log-level", default="warning",
                   choices=["critical", "error", "warning", "info", "debug"],
                   help="uvicorn's log level with streamable-http (default warning)")
    add_retriever_options(p)
    p.set_defaults(handler=cmd_mcp)


__all__ = ["cmd_mcp", "register"]
