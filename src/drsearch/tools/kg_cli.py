"""``drsearch kg serve``: a local SPARQL 1.1 endpoint over a Turtle file (docs/GENERATE.md).

::

    drsearch kg serve --data data/kg/kg.ttl [--host 127.0.0.1] [--port 0] [limits]

Prints the endpoint URL (``http://HOST:PORT/sparql``) as one line on stdout once it listens,
then serves until Ctrl-C. A file that does not parse is ``file:line`` on stderr, exit 2.
The limits (a query's time limit, answer size, query workers, and ``drsearch serve``'s
connection limits) are those of :class:`~drsearch.benchmark.generate.drbencher.kgserve.KGServeSettings`.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from .argtypes import int_in, seconds
from .binding import add_connection_arguments


def cmd_kg_serve(args: argparse.Namespace, out: TextIO) -> int:
    from ..benchmark.generate.drbencher.kgstore import oxigraph

    oxigraph()  # without the kg extra, name its own module (pyoxigraph), not the web stack's
    from ..benchmark.generate.drbencher.kgserve import KGServeSettings, serve_kg
    from ..contract import InvalidInputError
    from ..server import ServerSettings

    http = ServerSettings(time_limit_s=args.time_limit, max_body_bytes=args.max_body_bytes,
                          idle_timeout_s=args.idle_timeout, header_timeout_s=args.header_timeout,
                          max_header_bytes=args.max_header_bytes, max_connections=args.max_connections,
                          max_client_connections=args.max_client_connections)
    settings = KGServeSettings(http=http, max_result_bytes=args.max_result_bytes,
                               query_workers=args.query_workers)
    try:  # KGDataError (exit 2) before binding
        serve_kg(args.data, settings, args.host, args.port, lambda url: print(url, file=out, flush=True))
    except OSError as e:
        raise InvalidInputError(f"--host {args.host} --port {args.port}: cannot listen "
                                f"({e.strerror or e})") from None
    return 0


def register(sub: Any) -> None:
    """Add the ``kg`` verb (``kg serve``) to the CLI's subparsers."""
    kg = sub.add_parser("kg", help="knowledge-graph tools of the DrBencher-style generator")
    verbs = kg.add_subparsers(dest="kg_verb", required=True)
    p = verbs.add_parser("serve", help="serve a Turtle file over the SPARQL 1.1 protocol")
    p.add_argument("--data", required=True, type=Path, metavar="KG.ttl", help="Turtle file to load")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int_in(0, 65535), default=0, help="port (default 0: a free one, printed)")
    p.add_argument("--time-limit", type=seconds(3600), default=30.0, metavar="S",
                   help="a query's time limit in seconds, from its request's start; its worker "
                        "process is killed then (503; default 30)")
    p.add_argument("--max-result-bytes", type=int_in(1024, 1 << 31), default=16 << 20, metavar="N",
                   help="largest answer body (422 beyond; default 16777216)")
    p.add_argument("--query-workers", type=int_in(1, 64), default=2, metavar="N",
                   help="worker processes, each holding the graph: queries run at once (default 2)")
    # drsearch serve's connection limits, with its defaults (docs/SERVER.md)
    p.add_argument("--max-body-bytes", type=int_in(1024, 1 << 30), default=1 << 20, metavar="N",
                   help="largest request body (413 unread beyond; default 1048576)")
    add_connection_arguments(p)
    p.set_defaults(handler=cmd_kg_serve)
