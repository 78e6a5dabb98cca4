"""Assemble a release directory (DR-256 layout) from documents, questions and a blocklist.

``assemble_release`` copies the questions and blocklist verbatim (their bytes are the
release's identity), builds ``search/corpus.sqlite3`` with the engine, derives
``benchmark/summary.json``, ``search/coverage_summary.json`` and
``search/source_manifest_summary.json`` from what it built, and writes the manifest and
checksums. The same inputs always give byte-identical releases.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..corpus import source_summary as corpus_source_summary
from ..index import (
    BlockList,
    BuildReport,
    BuildSettings,
    InvalidInputError,
    build,
    missing_docids,
    read_jsonl,
    sha256_file,
)
from .dr256 import QuestionSet, load_questions
from .manifest import (
    BLOCKED,
    COVERAGE,
    DATABASE,
    QUESTIONS,
    SOURCES,
    SUMMARY,
    Manifest,
    ProgressFactory,
    canonical_json,
    write_release_manifest,
)


def source_summary(docs: Iterable[dict[str, Any]], input_name: str, input_sha256: str) -> dict[str, Any]:
    """Documents, distinct sources (``source_id``, else docid) and web hosts/domains of the input.

    The corpus builder's summary with no crawl behind it (one definition of the file's keys).
    """
    return corpus_source_summary(docs, None, input_name, input_sha256)


def coverage_summary(report: BuildReport, questions: QuestionSet, database: Path) -> dict[str, Any]:
    """Corpus counts and how many answer-bearing documents the corpus holds."""
    answers = questions.answer_docids
    in_corpus = answers - set(missing_docids(database, answers))
    answered = sum(any(d in in_corpus for d in r.metadata.benchmark.clean_provenance_answer_docids)
                   for r in questions.rows)
    return {
        "documents": report.documents,
        "indexed_documents": report.indexed_documents,
        "empty_documents": report.empty_documents,
        "chunks": report.chunks,
        "chunks_per_document": round(report.chunks / max(1, report.indexed_documents), 4),
        "answer_docids": len(answers),
        "answer_docids_in_corpus": len(in_corpus),
        "questions_with_answer_in_corpus": answered,
    }


def benchmark_summary(name: str, revision: str, questions: QuestionSet, blocklist: BlockList,
                      report: BuildReport) -> dict[str, Any]:
    """The counts of ``benchmark/summary.json``."""
    return {
        "release": {"name": name, "revision": revision},
        "questions": len(questions.rows),
        "calibration_tiers": questions.tiers,
        "difficulty": questions.difficulties,
        "blocked_docids": len(blocklist),
        "corpus": {"documents": report.documents, "chunks": report.chunks,
                   "content_identity": report.content_identity},
    }


def _check_inputs(questions: Path, blocked: Path) -> tuple[QuestionSet, BlockList]:
    qs = load_questions(questions)
    if qs.problems:
        raise InvalidInputError(f"questions are not valid DR-256 rows: {qs.problems[0]}")
    return qs, BlockList.from_file(blocked)


def assemble_release(
    out: str | os.PathLike[str],
    docs: str | os.PathLike[str],
    questions: str | os.PathLike[str],
    blocked: str | os.PathLike[str],
    *,
    name: str,
    revision: str,
    settings: BuildSettings | None = None,
    overwrite: bool = False,
    build_progress: Callable[[int], None] | None = None,
    hash_progress: ProgressFactory | None = None,
) -> Manifest:
    """Write a complete release to directory ``out``; returns its manifest.

    ``out`` must not exist or be empty unless ``overwrite`` (which replaces the release
    files and keeps, and inventories, any others). Raises InvalidInputError (invalid
    questions, blocklist or documents; non-empty ``out``) and BuildError.
    """
    root = Path(out)
    if root.exists() and any(root.iterdir()) and not overwrite:
        raise InvalidInputError(f"{root} exists and is not empty (use --force to replace the release)")
    qs, blocklist = _check_inputs(Path(questions), Path(blocked))
    for sub in ("benchmark", "search"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    shutil.copyfile(questions, root / QUESTIONS)
    shutil.copyfile(blocked, root / BLOCKED)
    report = build(read_jsonl(docs), root / DATABASE, settings, overwrite=True, progress=build_progress)
    summaries = {
        SUMMARY: benchmark_summary(name, revision, qs, blocklist, report),
        COVERAGE: coverage_summary(report, qs, root / DATABASE),
        SOURCES: source_summary(read_jsonl(docs), Path(docs).name, sha256_file(docs)),
    }
    for rel, body in summaries.items():
        (root / rel).write_bytes(canonical_json(body))
    return write_release_manifest(root, name, revision, hash_progress)


__all__ = ["assemble_release", "benchmark_summary", "coverage_summary", "source_summary"]
