"""The ``drsearch corpus fetch|extract|build`` verbs (issue 3): URLs → crawl → docs → corpus.

``register(sub)`` adds the ``corpus`` verb to the main parser (cli.py calls it). Handlers
follow cli.py's contract: an exit code, DrsearchError for bad input (one line on stderr).
Problems that do not stop a stage (malformed URL lines, bad record or document lines) are
printed as warnings on stderr, at most ``_MAX_WARNINGS`` of them, and counted in the reports.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from ..corpus import (
    CorpusBuild,
    ExtractSettings,
    FetchRecord,
    FetchSettings,
    PageText,
    build_corpus,
    extract_crawl,
    fetch_urls,
)
from ..index import BuildSettings

_MAX_WARNINGS = 20


def _warn(problems: Iterable[str]) -> None:
    problems = list(problems)
    for p in problems[:_MAX_WARNINGS]:
        print(f"drsearch: warning: {p}", file=sys.stderr)
    if len(problems) > _MAX_WARNINGS:
        print(f"drsearch: warning: … and {len(problems) - _MAX_WARNINGS} more", file=sys.stderr)


def cmd_fetch(args: argparse.Namespace, out: TextIO) -> int:
    settings = FetchSettings(concurrency=args.concurrency, per_host=args.per_host, timeout_s=args.timeout,
                             retries=args.retries, max_bytes=args.max_bytes, max_redirects=args.max_redirects,
                             obey_robots=not args.ignore_robots)
    bars: list[Any] = []
    counts = {"ok": 0, "failed": 0, "disallowed": 0}

    def start(total: int) -> None:
        if not args.quiet:
            from tqdm import tqdm

            bars.append(tqdm(total=total, desc="fetching", unit=" url", file=sys.stderr, mininterval=0.5))

    def progress(rec: FetchRecord) -> None:
        counts[rec.outcome] += 1
        if bars:
            bars[0].set_postfix(counts, refresh=False)
            bars[0].update(1)

    try:
        summary = fetch_urls(args.urls, args.out, settings, progress=progress, on_start=start)
    finally:
        for bar in bars:
            bar.close()
    _warn(summary["problems"])
    run = summary["run"]
    print(f"fetched {run['fetched']} URLs into {args.out}: {run['ok']} ok, {run['failed']} failed, "
          f"{run['disallowed']} disallowed by robots.txt; {summary['already_fetched']} already fetched, "
          f"{summary['malformed_url_lines']} malformed line(s) skipped", file=out)
    return 0


def cmd_extract(args: argparse.Namespace, out: TextIO) -> int:
    settings = ExtractSettings(workers=args.workers, favor_precision=not args.no_favor_precision)
    bars: list[Any] = []

    def progress(page: PageText) -> None:
        if not bars and not args.quiet:
            from tqdm import tqdm

            bars.append(tqdm(desc="extracting", unit=" page", file=sys.stderr, mininterval=0.5))
        if bars:
            bars[0].update(1)

    try:
        report = extract_crawl(args.crawl, args.out, settings, overwrite=args.force, progress=progress)
    finally:
        for bar in bars:
            bar.close()
    _warn(report["problems"])
    print(f"extracted {report['extracted']} documents to {args.out} "
          f"from {report['url_records']} URL records: "
          f"{report['extraction_empty']} empty, {report['skipped']} skipped, {report['failed']} failed, "
          f"{report['robots_disallowed']} disallowed", file=out)
    return 0


def cmd_build(args: argparse.Namespace, out: TextIO) -> int:
    bars: list[Any] = []

    def progress(n: int) -> None:
        if not bars and not args.quiet:
            from tqdm import tqdm

            bars.append(tqdm(desc="indexing", unit=" chunks", file=sys.stderr, mininterval=0.5))
        if bars:
            bars[0].update(n)

    try:
        result: CorpusBuild = build_corpus(args.docs, args.out, BuildSettings(tokenizer=args.tokenizer),
                                           overwrite=args.force, progress=progress)
    finally:
        for bar in bars:
            bar.close()
    _warn([r.message for r in result.rejected] + result.notes)
    c = result.coverage
    print(f"built {result.report.path}: {c['documents']} documents ({c['duplicates']} duplicates merged, "
          f"{c['rejected_documents']} lines rejected), {c['chunks']} chunks; reports in "
          f"{os.path.dirname(os.path.abspath(args.out))}", file=out)
    return 0


def register(sub: Any) -> None:
    """Add ``corpus fetch|extract|build`` to the CLI's subparsers."""
    corpus = sub.add_parser("corpus", help="make a corpus from URLs: fetch, extract, build")
    verbs = corpus.add_subparsers(dest="corpus_verb", required=True, metavar="STAGE")

    p = verbs.add_parser("fetch", help="fetch a URL list into a crawl directory (resumable)")
    p.add_argument("--urls", required=True, metavar="URLS.txt", help="one URL per line (# comments)")
    p.add_argument("--out", required=True, metavar="CRAWL_DIR")
    p.add_argument("--concurrency", type=int, default=16, help="requests at once (default 16)")
    p.add_argument("--per-host", type=int, default=2, help="requests at once per host (default 2)")
    p.add_argument("--timeout", type=float, default=20.0, help="seconds per request (default 20)")
    p.add_argument("--retries", type=int, default=3, help="retries on 429/5xx/network errors (default 3)")
    p.add_argument("--max-bytes", type=int, default=10 * 1024 * 1024, help="largest body (default 10 MiB)")
    p.add_argument("--max-redirects", type=int, default=5, help="redirects followed (default 5)")
    p.add_argument("--ignore-robots", action="store_true", help="do not fetch or obey robots.txt")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=cmd_fetch)

    p = verbs.add_parser("extract", help="extract main text from a crawl directory into docs.jsonl")
    p.add_argument("crawl", metavar="CRAWL_DIR")
    p.add_argument("--out", required=True, metavar="DOCS.jsonl")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: all cores)")
    p.add_argument("--no-favor-precision", action="store_true", help="trafilatura's balanced mode")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=cmd_extract)

    p = verbs.add_parser("build", help="deduplicate documents and build the frozen index with its reports")
    p.add_argument("docs", metavar="DOCS.jsonl")
    p.add_argument("--out", required=True, metavar="CORPUS.sqlite3")
    p.add_argument("--tokenizer", choices=["porter", "unicode61"], default="porter")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=cmd_build)


__all__ = ["register"]
