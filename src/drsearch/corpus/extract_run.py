"""The ``extract`` stage: a crawl directory → ``docs.jsonl`` plus its report.

``extract_crawl(crawl, out)`` reads the crawl's fetch records (last record per canonical
URL), extracts every successful fetch in a process pool (``ExtractSettings.workers``),
and writes one document per page with text, sorted by canonical URL, to ``out`` under a
temporary name renamed into place when complete (an interrupted run leaves any earlier
output untouched). Beside it, ``<out stem>.report.json`` holds the counts that the build
stage carries into ``coverage_summary.json`` and ``source_manifest_summary.json``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from itertools import repeat
from pathlib import Path
from typing import Any

from ..contract import InvalidInputError
from .crawl import FETCH_SUMMARY, FetchRecord, atomic_output, read_records, write_json_atomic
from .extract import ExtractSettings, PageText, extract_batch, media_type
from .urllist import host_of


def report_path(docs: str | os.PathLike[str]) -> Path:
    """Where the extract report of ``docs`` lives: ``docs.jsonl`` → ``docs.report.json``."""
    p = Path(docs)
    return p.with_name(p.stem + ".report.json")


def fetch_counts(records: Iterable[FetchRecord]) -> dict[str, Any]:
    """Record, outcome, host, content-type and byte counts of fetch records (pure)."""
    outcomes: Counter[str] = Counter()
    failed: Counter[str] = Counter()
    types: Counter[str] = Counter()
    hosts: dict[str, Counter[str]] = {}
    total_bytes = 0
    for rec in records:
        outcomes[rec.outcome] += 1
        host = hosts.setdefault(host_of(rec.url), Counter())
        host["records"] += 1
        host[rec.outcome] += 1
        if rec.outcome == "failed":
            failed[rec.error or "unknown"] += 1
        elif rec.outcome == "ok":
            types[media_type(rec.content_type) or "(none)"] += 1
            host["bytes"] += rec.bytes or 0
            total_bytes += rec.bytes or 0
    return {
        "url_records": sum(outcomes.values()),
        "fetched_ok": outcomes["ok"],
        "failed": outcomes["failed"],
        "failed_by_reason": dict(sorted(failed.items())),
        "robots_disallowed": outcomes["disallowed"],
        "content_types": dict(sorted(types.items())),
        "bytes": total_bytes,
        "hosts": {h: {k: c[k] for k in ("records", "ok", "failed", "disallowed", "bytes")}
                  for h, c in sorted(hosts.items())},
    }


def _batches(records: list[FetchRecord], size: int) -> list[list[FetchRecord]]:
    return [records[i : i + size] for i in range(0, len(records), size)]


def extract_records(crawl: Path, records: list[FetchRecord], settings: ExtractSettings) -> Iterator[PageText]:
    """Extract the given (successful) records in order, in ``settings.workers`` processes."""
    batches = _batches(records, max(1, settings.batch_size))
    if settings.workers <= 1 or len(batches) <= 1:
        for batch in batches:
            yield from extract_batch(str(crawl), batch, settings)
        return
    with ProcessPoolExecutor(max_workers=settings.workers) as pool:
        for result in pool.map(extract_batch, repeat(str(crawl)), batches, repeat(settings)):
            yield from result


def _fetch_summary(crawl: Path) -> dict[str, Any]:
    try:
        data = json.loads((crawl / FETCH_SUMMARY).read_bytes())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def extract_crawl(
    crawl: str | os.PathLike[str],
    out: str | os.PathLike[str],
    settings: ExtractSettings | None = None,
    *,
    overwrite: bool = False,
    progress: Callable[[PageText], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Write ``out`` (docs.jsonl) and its report from crawl directory ``crawl``; returns the report.

    Raises InvalidInputError when the crawl directory is missing or unreadable, or ``out``
    exists and ``overwrite`` is false. Bad record lines are skipped and listed in the
    report's ``problems`` (and counted in ``invalid_records``). ``on_start(total)`` is
    called once with the number of pages to extract, then ``progress(page)`` for each.
    """
    settings = settings or ExtractSettings()
    root, dest = Path(crawl), Path(out)
    if dest.exists() and not overwrite:
        raise InvalidInputError(f"{dest} already exists (use --force to replace it)")
    if not dest.parent.is_dir():
        raise InvalidInputError(f"directory {dest.parent} does not exist")
    read = read_records(root)
    records = sorted(read.records, key=lambda r: r.canonical_url)
    counts = fetch_counts(records)
    statuses: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    extractors: Counter[str] = Counter()
    pages = [r for r in records if r.outcome == "ok"]
    if on_start is not None:
        on_start(len(pages))
    with atomic_output(dest) as fh:
        for page in extract_records(root, pages, settings):
            statuses[page.status] += 1
            if page.status == "skipped":
                skipped[page.reason or "unknown"] += 1
            elif page.status == "extracted":
                extractors[page.extractor or "unknown"] += 1
                line = json.dumps(page.document(), ensure_ascii=False, sort_keys=True) + "\n"
                fh.write(line.encode("utf-8"))
            if progress:
                progress(page)
    report = {
        "crawl": root.name,
        "documents_file": dest.name,
        **counts,
        "malformed_url_lines": _fetch_summary(root).get("malformed_url_lines", 0),
        "invalid_records": len(read.problems),
        "superseded_records": read.superseded,
        "extracted": statuses["extracted"],
        "extraction_empty": statuses["empty"],
        "skipped": statuses["skipped"],
        "skipped_by_reason": dict(sorted(skipped.items())),
        "extractors": dict(sorted(extractors.items())),
        "problems": read.problems,
    }
    write_json_atomic(report_path(dest), report)
    return report


__all__ = ["extract_crawl", "extract_records", "fetch_counts", "report_path"]
