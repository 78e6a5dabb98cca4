"""``drsearch snapshot freeze|verify|coverage``: tool snapshots (docs/AGENTS.md).

``freeze SOURCE... --out SNAP``: the biomedical tools' answers in run directories (or cache
files) frozen into a new snapshot directory (refused if SNAP exists); ``--base SNAP0``
extends an existing one. ``verify SNAP``: every digest checked (exit 0 or 2, one line).
``coverage SNAP --runs RUN...``: per run, how many of its biomedical calls SNAP answers
and which it does not (exit 0 when all are covered, 1 when some are not).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO


def _describe(snap: Any) -> str:
    m = snap.manifest
    return (
        f"{snap.path}: {m['rows']} row(s), tools {', '.join(sorted(m['tools'])) or 'none'}, accessed "
        f"{', '.join(m['access_dates']) or '-'}, digest {m['digest']}"
    )


def cmd_freeze(args: argparse.Namespace, out: TextIO) -> int:
    from ..agents.snapshot import freeze, load_snapshot

    base = load_snapshot(args.base) if args.base else None
    snap = freeze(list(args.sources), args.out, base)
    if args.json:
        print(
            json.dumps(
                {"digest": snap.digest, "path": str(snap.path), "rows": snap.manifest["rows"]}, sort_keys=True
            ),
            file=out,
        )
    else:
        print(f"froze {_describe(snap)}", file=out)
    return 0


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    from ..agents.snapshot import load_snapshot

    snap = load_snapshot(args.snapshot)  # SnapshotError: one line, exit 2
    if args.json:
        print(
            json.dumps(
                {"digest": snap.digest, "ok": True, "path": str(snap.path), "rows": snap.manifest["rows"]},
                sort_keys=True,
            ),
            file=out,
        )
    else:
        print(f"{_describe(snap)}: every digest matches", file=out)
    return 0


def cmd_coverage(args: argparse.Namespace, out: TextIO) -> int:
    from ..agents.snapshot import coverage, load_snapshot

    report = coverage(load_snapshot(args.snapshot), list(args.runs))
    if args.json:
        print(json.dumps(report, sort_keys=True), file=out)
    else:
        for run, r in report["runs"].items():
            print(f"{run}: {r['covered']}/{r['calls']} biomedical call(s) covered", file=out)
            for m in r["missing"][: args.show]:
                print(f"  missing: {m['qid']} {m['tool']} {m['key'][:16]}", file=out)
        print(f"total: {report['covered']}/{report['calls']} covered by {report['snapshot']}", file=out)
    return 0 if report["covered"] == report["calls"] else 1


def register(sub: Any) -> None:
    """Add ``snapshot freeze|verify|coverage`` to the CLI's subparsers."""
    snap = sub.add_parser("snapshot", help="freeze, verify and measure tool snapshots (biomedical tools)")
    verbs = snap.add_subparsers(dest="snapshot_verb", required=True, metavar="VERB")
    p = verbs.add_parser("freeze", help="freeze the biomedical tools' answers of runs into a snapshot")
    p.add_argument(
        "sources",
        nargs="+",
        type=Path,
        metavar="RUN|CACHE",
        help="run directories (their cache.sqlite3) or cache files",
    )
    p.add_argument("--out", required=True, type=Path, metavar="SNAP", help="the new snapshot directory")
    p.add_argument("--base", type=Path, metavar="SNAP0", help="an existing snapshot to extend")
    p.add_argument("--json", action="store_true", help="print {digest, path, rows} as one JSON line")
    p.set_defaults(handler=cmd_freeze)
    p = verbs.add_parser("verify", help="check a snapshot's digests (exit 2 on a mismatch)")
    p.add_argument("snapshot", type=Path, metavar="SNAP", help="a tool snapshot directory")
    p.add_argument("--json", action="store_true", help="print the result as one JSON line")
    p.set_defaults(handler=cmd_verify)
    p = verbs.add_parser("coverage", help="which biomedical calls of which runs a snapshot answers")
    p.add_argument("snapshot", type=Path, metavar="SNAP", help="a tool snapshot directory")
    p.add_argument("--runs", nargs="+", required=True, type=Path, metavar="RUN", help="run directories")
    p.add_argument(
        "--show", type=int, default=20, metavar="N", help="missing calls listed per run (default 20)"
    )
    p.add_argument("--json", action="store_true", help="print the report as one JSON line")
    p.set_defaults(handler=cmd_coverage)
