"""``drsearch shard`` (split an index into exact shards) and ``drsearch serve --shards``
(the broker over their servers); docs/SCALING.md "Exact shards"."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..contract import InvalidInputError
from ..index import BlockList, read_jsonl
from .argtypes import int_in

if TYPE_CHECKING:
    from ..index.shards import ShardReport


def _blocklist(option: str | None) -> BlockList | None:
    """``--blocked-docids FILE|none`` of a split (None: not given)."""
    if option in (None, "none"):
        return None if option is None else BlockList.empty()
    return BlockList.from_file(option)


def cmd_shard(args: argparse.Namespace, out: TextIO) -> int:
    from ..index.shards import split_index

    reports = split_index(args.database, args.out, args.shards, blocklist=_blocklist(args.blocked_docids),
                          allow_missing_blocked=args.allow_missing_blocked, overwrite=args.force)
    _print_reports(reports, args.json, out)
    return 0


def build_shards_cli(args: argparse.Namespace, settings: Any, out: TextIO) -> int:
    """``drsearch build DOCS --shards S --out DIR``: the files ``drsearch shard`` would write
    from ``drsearch build``'s index, without keeping that index (drsearch.index.shards)."""
    from ..index.shards import build_shards
    from .progress import StageBars

    exclude = BlockList.from_file(args.exclude_docids) if args.exclude_docids else None
    blocklist = _blocklist(args.blocked_docids)
    bars = StageBars(args.quiet)
    try:
        reports = build_shards(read_jsonl(args.docs), args.out, args.shards, settings, blocklist=blocklist,
                               allow_missing_blocked=args.allow_missing_blocked, overwrite=args.force,
                               progress=bars.build if bars.draw else None,
                               on_start=bars.build_start if bars.draw else None, exclude=exclude)
    finally:
        bars.close()
    _print_reports(reports, args.json, out)
    return 0


def _print_reports(reports: list[ShardReport], as_json: bool, out: TextIO) -> None:
    for r in reports:
        line = {"path": str(r.path), "index": r.index, "documents": r.documents, "chunks": r.chunks,
                "identity": r.identity}
        print(json.dumps(line, sort_keys=True) if as_json else
              f"{r.path}: shard {r.index}, {r.documents} documents, {r.chunks} chunks, identity {r.identity}",
              file=out)


def add_build_shard_options(p: argparse.ArgumentParser) -> None:
    """``drsearch build``'s options that write shards instead of one index."""
    p.add_argument("--shards", type=int_in(1, 4096), metavar="S",
                   help="write S shard files that rank exactly as the whole index (--out: their "
                        "directory; docs/SCALING.md)")
    p.add_argument("--blocked-docids", metavar="FILE|none",
                   help="with --shards: the blocklist every shard will be served with (default none)")
    p.add_argument("--allow-missing-blocked", action="store_true",
                   help="with --shards: accept a blocklist naming docids the documents lack")


def serve_shards(args: argparse.Namespace) -> int:
    """``drsearch serve --shards URL...``: check the shards, then serve the broker."""
    import uvicorn

    from ..server.broker import connect_shards, create_broker_app
    from .binding import check_bindable

    if args.database is not None:
        raise InvalidInputError("give --database (serve one index) or --shards (a broker), not both")
    check_bindable(args.host, args.port)
    shards = connect_shards(args.shards, allow_missing_blocked=args.allow_missing_blocked)
    print(f"drsearch: broker over {len(shards.shards)} shards of corpus {shards.corpus} "
          f"(split {shards.split}, blocklist sha256 {shards.blocklist_sha256}) "
          f"on http://{args.host}:{args.port}", file=sys.stderr)
    uvicorn.run(create_broker_app(shards, time_limit_s=args.time_limit + 5.0), host=args.host, port=args.port,
                log_level=args.log_level, access_log=args.access_log)
    return 0


def register(sub: Any) -> None:
    """Add the ``shard`` verb to the CLI's subparsers."""
    p = sub.add_parser("shard", help="split an index into shard files that rank exactly as it does "
                                     "(docs/SCALING.md)")
    p.add_argument("--database", required=True, metavar="CORPUS", help="the whole index to split")
    p.add_argument("--shards", required=True, type=int_in(1, 4096), metavar="S", help="how many shards")
    p.add_argument("--out", required=True, type=Path, metavar="DIR",
                   help="directory for shard-I-of-S.sqlite3 (must exist)")
    p.add_argument("--blocked-docids", metavar="FILE|none",
                   help="the blocklist every shard will be served with (a release's own by default); "
                        "a shard refuses any other")
    p.add_argument("--allow-missing-blocked", action="store_true",
                   help="accept a blocklist naming docids the index lacks")
    p.add_argument("--force", action="store_true", help="replace existing shard files")
    p.add_argument("--json", action="store_true", help="one JSON line per shard")
    p.set_defaults(handler=cmd_shard)
