"""``drsearch cache verify|upgrade``: check a replay or judge cache row by row (docs/AGENTS.md).

``verify PATH...``: each PATH is a cache file, or a directory whose ``cache.sqlite3`` and
``judge_cache.sqlite3`` are checked (a run directory, a generator's output). Prints one
line per file with its rows by kind; exit 0 when every row matches its digest, 2 when a row
does not (each listed, key and call) or a file is from before digests. ``upgrade FILE``
signs the rows of such an old cache as they are now (the user vouches for them).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from ..contract import InvalidInputError

CACHE_NAMES = ("cache.sqlite3", "judge_cache.sqlite3")  # what run, generate and score write by default


def _cache_files(path: Path) -> list[Path]:
    if path.is_dir():
        found = [path / name for name in CACHE_NAMES if (path / name).is_file()]
        if not found:
            raise InvalidInputError(f"{path}: no {' or '.join(CACHE_NAMES)} there")
        return found
    if not path.is_file():
        raise InvalidInputError(f"{path}: no such cache file or directory")
    return [path]


def cmd_cache_verify(args: argparse.Namespace, out: TextIO) -> int:
    from ..agents.errors import CacheError
    from ..agents.replay import verify_cache

    failed = 0
    report: list[dict[str, Any]] = []
    for path in [f for p in args.paths for f in _cache_files(p)]:
        try:
            check = verify_cache(path)
        except CacheError as e:
            print(f"drsearch: error: {e.message}", file=sys.stderr)
            report.append({"path": str(path), "error": e.error_type, "rows": None, "bad": None})
            failed += 1
            continue
        report.append({"path": str(path), "rows": check.rows,
                       "bad": [{"key": k, "kind": kind, "call": call} for k, kind, call in check.bad]})
        if args.json:
            failed += not check.ok
            continue
        kinds = ", ".join(f"{kind} {n}" for kind, n in check.rows.items()) or "empty"
        total = sum(check.rows.values())
        if check.ok:
            print(f"{path}: {total} row(s) ({kinds}), every row matches its digest", file=out)
            continue
        failed += 1
        print(f"{path}: {total} row(s) ({kinds}), {len(check.bad)} do not match their digest "
              "(edited or damaged; never replayed):", file=out)
        for key, kind, call in check.bad:
            print(f"  {key} {kind} {call[:200]}", file=out)
        print(f"drsearch: error: corrupt_cache: {len(check.bad)} bad row(s) in {path}", file=sys.stderr)
    if args.json:
        print(json.dumps({"caches": report, "ok": not failed}, sort_keys=True), file=out)
    return 2 if failed else 0


def cmd_cache_upgrade(args: argparse.Namespace, out: TextIO) -> int:
    from ..agents.replay import upgrade_cache

    signed = upgrade_cache(args.file)
    if args.json:
        print(json.dumps({"path": str(args.file), "signed": signed}, sort_keys=True), file=out)
        return 0
    print(f"{args.file}: signed {signed} row(s) as they are now; `drsearch cache verify` checks them "
          "from here on", file=out)
    return 0


def register(sub: Any) -> None:
    """Add ``cache verify`` and ``cache upgrade`` to the CLI's subparsers."""
    cache = sub.add_parser("cache", help="check replay and judge caches row by row")
    verbs = cache.add_subparsers(dest="cache_verb", required=True, metavar="VERB")
    p = verbs.add_parser("verify", help="check every row of a cache against its digest (exit 2 on a bad row)")
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                   help="a cache file, or a directory holding cache.sqlite3 / judge_cache.sqlite3")
    p.add_argument("--json", action="store_true", help="print the report as one line of JSON")
    p.set_defaults(handler=cmd_cache_verify)
    p = verbs.add_parser("upgrade", help="sign the rows of a cache made before row digests, as they are now")
    p.add_argument("file", type=Path, metavar="FILE", help="the cache file")
    p.add_argument("--json", action="store_true", help="print {path, signed} as one line of JSON")
    p.set_defaults(handler=cmd_cache_upgrade)
