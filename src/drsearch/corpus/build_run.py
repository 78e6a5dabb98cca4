"""The ``build`` stage: docs.jsonl → frozen index + coverage and source reports beside it.

``build_corpus(docs, out)`` reads every line (bad lines are counted and reported, never
fatal), canonicalises URLs and merges exact duplicates (drsearch.corpus.dedup), builds the
frozen index with ``drsearch.index.build`` and writes ``coverage_summary.json`` and
``source_manifest_summary.json`` in the index's directory, each by atomic rename after the
index is complete. If ``docs`` came from ``drsearch corpus extract`` its report (``<stem>.report.json``)
adds the fetch and extraction counts.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract import BuildError, InvalidInputError
from ..index import BuildReport, BuildSettings, build, sha256_file
from .crawl import write_json_atomic
from .dedup import Rejected, deduplicate, read_lines
from .extract_run import report_path
from .reports import coverage_problems, coverage_summary, source_summary

COVERAGE_FILE = "coverage_summary.json"
SOURCES_FILE = "source_manifest_summary.json"


@dataclass(frozen=True)
class CorpusBuild:
    """What ``build_corpus`` wrote: the index report, both summaries and the rejected lines."""

    report: BuildReport
    coverage: dict[str, Any]
    sources: dict[str, Any]
    rejected: list[Rejected]
    notes: list[str]


def _extract_report(docs: Path, input_documents: int, notes: list[str]) -> dict[str, Any] | None:
    path = report_path(docs)
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        notes.append(f"{path}: unreadable extract report ({e}); fetch and extract counts left out")
        return None
    if not isinstance(data, dict) or data.get("documents_file") != docs.name \
            or data.get("extracted") != input_documents:
        notes.append(f"{path} does not describe {docs.name} as it is now (edited since extraction?); "
                     "fetch and extract counts left out")
        return None
    return data


def build_corpus(
    docs: str | os.PathLike[str],
    out: str | os.PathLike[str],
    settings: BuildSettings | None = None,
    *,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> CorpusBuild:
    """Build the frozen index ``out`` from ``docs`` and write the two summaries beside it.

    Raises InvalidInputError (``docs`` unreadable, no valid document at all, or ``out``'s
    directory missing: checked before ``docs`` is read) and BuildError (``out`` exists and
    ``overwrite`` is false; the index cannot be written). Nothing is written unless the
    index build succeeds. ``progress`` and ``on_start`` are :func:`drsearch.index.build`'s.
    """
    src, dest = Path(docs), Path(out)
    if dest.exists() and not overwrite:
        raise BuildError(f"{dest} already exists (use --force to replace it)")
    if not dest.parent.is_dir():
        raise InvalidInputError(f"directory {dest.parent} does not exist (create it first)")
    dedup = deduplicate(read_lines(src))
    if not dedup.documents:
        raise InvalidInputError(f"{src}: no valid document ({len(dedup.rejected)} line(s) rejected)")
    report = build(dedup.documents, dest, settings, overwrite=overwrite, progress=progress,
                   on_start=on_start)
    notes: list[str] = []
    extract = _extract_report(src, dedup.input_documents, notes)
    rejected = Counter(r.reason for r in dedup.rejected)
    coverage = coverage_summary(extract, rejected, dedup.duplicates, dedup.input_documents, report)
    sources = source_summary(dedup.documents, extract, src.name, sha256_file(src))
    problems = coverage_problems(coverage, sources)
    if problems:  # an accounting bug, not bad input: fail loudly rather than ship wrong numbers
        raise BuildError("coverage numbers do not add up: " + "; ".join(problems))
    write_json_atomic(dest.parent / COVERAGE_FILE, coverage)
    write_json_atomic(dest.parent / SOURCES_FILE, sources)
    return CorpusBuild(report, coverage, sources, dedup.rejected, notes)


__all__ = ["COVERAGE_FILE", "SOURCES_FILE", "CorpusBuild", "build_corpus"]
