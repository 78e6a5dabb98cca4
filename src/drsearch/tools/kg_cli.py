"""``drsearch kg serve``: a local SPARQL 1.1 endpoint over a Turtle file (docs/GENERATE.md).

::

    drsearch kg serve --data data/kg/kg.ttl [--host 127.0.0.1] [--port 0]

Prints the endpoint URL (``http://HOST:PORT/sparql``) as one line on stdout once it listens,
then serves until Ctrl-C. A file that does not parse is ``file:line`` on stderr, exit 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO


def cmd_kg_serve(args: argparse.Namespace, out: TextIO) -> int:
    from ..benchmark.generate.drbencher.kgstore import KGStore, make_server
    from ..contract import InvalidInputError

    store = KGStore(args.data)  # KGDataError (exit 2) before binding
    try:
        server = make_server(store, args.host, args.port)
    except OSError as e:
        raise InvalidInputError(f"--host {args.host} --port {args.port}: cannot listen "
                                f"({e.strerror})") from None
    print(f"http://{args.host}:{server.server_address[1]}/sparql", file=out, flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


def register(sub: Any) -> None:
    """Add the ``kg`` verb (``kg serve``) to the CLI's subparsers."""
    kg = sub.add_parser("kg", help="knowledge-graph tools of the DrBencher-style generator")
    verbs = kg.add_subparsers(dest="kg_verb", required=True)
    p = verbs.add_parser("serve", help="serve a Turtle file over the SPARQL 1.1 protocol")
    p.add_argument("--data", required=True, type=Path, metavar="KG.ttl", help="Turtle file to load")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=0, help="port (default 0: a free one, printed)")
    p.set_defaults(handler=cmd_kg_serve)
