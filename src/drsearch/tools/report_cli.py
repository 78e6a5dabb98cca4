"""``drsearch report RUN [RUN …] --out DIR``: graded runs as a static HTML page plus CSV/Parquet rows
(drsearch.benchmark.report; docs/GRADING.md, "The report").

Bad input (not a run directory, a run never scored, runs of different question sets, a
questions file that is not the one graded) exits 2 with one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO


def cmd_report(args: argparse.Namespace, out: TextIO) -> int:
    import scipy  # type: ignore[import-untyped]  # noqa: F401  (the grading extra: one line without it)

    from ..benchmark.report import write_report

    files = write_report(list(args.runs), args.out, args.questions)
    for line in files.warnings:
        print(f"drsearch: warning: {line}", file=sys.stderr)
    if args.json:
        print(json.dumps({"episodes": files.episodes, "files": [str(p) for p in files.frames],
                          "html": str(files.html), "parquet": files.parquet, "tool_calls": files.tool_calls,
                          "warnings": list(files.warnings)}, sort_keys=True), file=out)
        return 0
    print(f"wrote {files.html} ({files.episodes} episode(s), {files.tool_calls} tool call(s))", file=out)
    print("rows: " + " ".join(str(p) for p in files.frames), file=out)
    if not files.parquet:
        print("(no Parquet files: pip install 'drsearch[report]' for pyarrow)", file=out)
    return 0


def register(sub: Any) -> None:
    """Add the ``report`` verb to the CLI's subparsers."""
    p = sub.add_parser("report", help="graded runs as an HTML report and CSV/Parquet rows (docs/GRADING.md)")
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                   help="run directories graded by `drsearch score` (two or more: paired comparison)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="directory for index.html, episodes.csv/.parquet, tool_calls.csv/.parquet")
    p.add_argument("--questions", type=Path, metavar="FILE",
                   help="the questions file graded (default: the one scores.json names), for the gold "
                        "answers, question text and groups")
    p.add_argument("--json", action="store_true",
                   help="print what was written as one JSON object (html, files, episodes, tool_calls)")
    p.set_defaults(handler=cmd_report)
