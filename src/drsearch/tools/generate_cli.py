"""``drsearch generate NAME ...``: the benchmark generators (docs/GENERATE.md).

::

    drsearch generate drbencher --config GEN.json --out GEN_DIR [--until STAGE] [--cache-mode M]
                                [--concurrency N] [--quiet]
    drsearch generate openbiorq STAGE OBRQ_DIR ...   (openbiorq_cli.py)

The generator prints its JSON summary on stdout; bad input (config, endpoint probe) is one
line on stderr and exit 2 before anything is written; a failed stage exit 1.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO


def cmd_generate_drbencher(args: argparse.Namespace, out: TextIO) -> int:
    from ..benchmark.generate.drbencher.pipeline import main
    from .progress import GeneratorBars

    bars = GeneratorBars(args.quiet)  # drawn on a terminal's stderr only, never with --quiet
    try:
        return main(args, out, bars if bars.draw else None)
    finally:
        bars.close()


def register(sub: Any) -> None:
    """Add the ``generate`` verb (``generate drbencher``, ``generate openbiorq``) to the CLI."""
    from ..benchmark.generate.drbencher.options import add_arguments  # pure argparse: no extra
    from .openbiorq_cli import register as register_openbiorq

    gen = sub.add_parser("generate", help="run a benchmark generator (docs/GENERATE.md)")
    names = gen.add_subparsers(dest="generator", required=True, metavar="GENERATOR")
    p = names.add_parser("drbencher", help="answer-first numeric questions from knowledge-graph chains")
    add_arguments(p)
    p.set_defaults(handler=cmd_generate_drbencher)
    register_openbiorq(names)
