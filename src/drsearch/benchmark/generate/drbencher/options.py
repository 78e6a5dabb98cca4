"""``drsearch generate drbencher``'s options, apart from its pipeline (pipeline.py): pure
argparse, so that ``drsearch --help`` defines the verb without importing the agents extra."""

from __future__ import annotations

import argparse

from ..options import add_generate_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``drsearch generate drbencher``'s options: the toolkit's plus ``--config``."""
    add_generate_arguments(parser)
    parser.add_argument("--config", required=True, metavar="GEN.json",
                        help="the generator config (strict JSON)")
    parser.add_argument("--refresh-kg", action="store_true",
                        help="ask the SPARQL endpoint again every query the finished stages recorded "
                             "and rerun from the first stage whose answers changed (default: reuse them, "
                             "with a warning)")


__all__ = ["add_arguments"]
