"""Assemble a release directory (DR-256 layout) from documents, questions and a blocklist.

``assemble_release`` copies the questions and blocklist verbatim (their bytes are the
release's identity), builds ``search/corpus.sqlite3`` with the engine, derives
``benchmark/summary.json``, ``search/coverage_summary.json`` and
``search/source_manifest_summary.json`` from what it built, and writes the manifest and
checksums. The same inputs always give byte-identical releases.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..contract import InvalidInputError
from ..contract.dirlock import LOCK_NAME, entries, lock_dir
from ..corpus import source_summary
from ..index import BlockList, BuildReport, BuildSettings, build, read_jsonl, sha256_file
from .checks import answer_coverage
from .documents import ReleaseDocuments, write_documents
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
    manifest_json,
    write_release_manifest,
)


def coverage_summary(report: BuildReport, questions: QuestionSet, database: Path) -> dict[str, Any]:
    """Corpus counts and how many answer-bearing documents the corpus holds."""
    return {
        "documents": report.documents,
        "indexed_documents": report.indexed_documents,
        "empty_documents": report.empty_documents,
        "chunks": report.chunks,
        "chunks_per_document": round(report.chunks / max(1, report.indexed_documents), 4),
        **answer_coverage(database, questions),
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
    try:
        qs = load_questions(questions)
    except OSError as e:
        raise InvalidInputError(f"cannot read questions {questions}: {e.strerror}") from e
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
    documents: ReleaseDocuments | None = None,
) -> Manifest:
    """Write a complete release to directory ``out``; returns its manifest.

    ``out`` must not exist or be empty unless ``overwrite`` (which replaces the release
    files and keeps, and inventories, any others). Raises InvalidInputError (invalid
    questions, blocklist or documents; ``out`` not a directory, or not empty) and
    BuildError. The corpus is built before any other file is written, so bad documents
    leave an existing release as it was. ``documents``: README.md and TERMS.md rendered from
    completed templates, and tools/ with LICENSE-CODE (drsearch.release.documents); checked
    before anything is built (PlaceholderError, exit 2, while placeholders remain unless
    allowed). None: no release documents (``validate`` warns).
    """
    root = Path(out)
    if root.exists() and not root.is_dir():
        raise InvalidInputError(f"{root} exists and is not a directory")
    _check_empty(root, overwrite)
    qs, blocklist = _check_inputs(Path(questions), Path(blocked))
    release_docs = documents or ReleaseDocuments()
    release_docs.check()
    made = [d for d in (root, root / "search") if not d.exists()]
    with lock_dir(root, "release directory"):  # one writer: a second assemble exits 2 naming this pid
        _check_empty(root, overwrite)  # again, locked: the holder may just have finished
        (root / "search").mkdir(exist_ok=True)
        try:
            report = build(read_jsonl(docs), root / DATABASE, settings, overwrite=True,
                           progress=build_progress)
        except BaseException:
            for d in reversed(made):  # a failed build leaves them empty: rerunning needs no --force
                with contextlib.suppress(OSError):
                    if d == root:
                        (root / LOCK_NAME).unlink()
                    d.rmdir()
            raise
        return _write_release(root, docs, questions, blocked, qs, blocklist, report, name, revision,
                              hash_progress, release_docs)


def _check_empty(root: Path, overwrite: bool) -> None:
    if root.exists() and entries(root) and not overwrite:
        raise InvalidInputError(f"{root} exists and is not empty (use --force to replace the release)")


def _write_release(root: Path, docs: str | os.PathLike[str], questions: str | os.PathLike[str],
                   blocked: str | os.PathLike[str], qs: QuestionSet, blocklist: BlockList, report: Any,
                   name: str, revision: str, hash_progress: ProgressFactory | None,
                   documents: ReleaseDocuments) -> Manifest:
    (root / "benchmark").mkdir(exist_ok=True)
    shutil.copyfile(questions, root / QUESTIONS)
    shutil.copyfile(blocked, root / BLOCKED)
    summaries = {
        SUMMARY: benchmark_summary(name, revision, qs, blocklist, report),
        COVERAGE: coverage_summary(report, qs, root / DATABASE),
        SOURCES: source_summary(read_jsonl(docs), None, Path(docs).name, sha256_file(docs)),
    }
    for rel, body in summaries.items():
        (root / rel).write_bytes(manifest_json(body))
    write_documents(root, documents, release_facts(name, revision, qs, blocklist, report, root / QUESTIONS))
    return write_release_manifest(root, name, revision, hash_progress)


def release_facts(name: str, revision: str, qs: QuestionSet, blocklist: BlockList, report: Any,
                  questions: Path) -> dict[str, Any]:
    """The ``{{field}}`` values of the release documents' templates (documents.FIELDS)."""
    return {"blocked_docids": len(blocklist), "chunks": report.chunks,
            "content_identity": report.content_identity,
            "documents": report.documents, "name": name, "questions": len(qs.rows),
            "questions_sha256": sha256_file(questions), "revision": revision,
            "tiers": ", ".join(f"{n} {tier}" for tier, n in sorted(qs.tiers.items())) or "no tiers"}


__all__ = ["assemble_release", "benchmark_summary", "coverage_summary", "release_facts"]
