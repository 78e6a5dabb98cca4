"""The options every generator takes (``--out``, ``--until``, ``--cache-mode`` …), apart from
the machinery that runs them (cli.py): pure argparse, so that ``drsearch --help`` defines
the generators' verbs without importing the agents extra (httpx)."""

from __future__ import annotations

import argparse


def add_generate_arguments(parser: argparse.ArgumentParser) -> None:
    """The options every generator takes."""
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (resumed if present)")
    parser.add_argument("--until", metavar="STAGE", help="stop after this stage")
    parser.add_argument("--cache-mode", default="record",
                        choices=["off", "record", "replay", "replay-then-live"],
                        help="model response cache (default record into DIR/cache.sqlite3); "
                             "replay is offline")
    parser.add_argument("--cache", metavar="FILE", help="cache file (default DIR/cache.sqlite3)")
    parser.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    parser.add_argument("--max-attempts", type=int, default=6, help="tries per model call (default 6)")
    parser.add_argument("--backoff", type=float, default=1.0, metavar="S",
                        help="first retry wait (default 1 s)")
    parser.add_argument("--concurrency", type=int, default=1, metavar="N",
                        help="items a stage processes at once, e.g. model calls in flight (default 1; "
                             "the outputs do not depend on it and changing it reruns nothing)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


__all__ = ["add_generate_arguments"]
