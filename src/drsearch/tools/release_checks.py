"""Cross-file checks of a release: corpus meta, summaries, counts and pinned identities.

Each function returns :class:`~drsearch.tools.validate.Check` records and never raises
for bad content. The summaries' count keys this validator knows (others are ignored):

- ``benchmark/summary.json``: ``questions``/``num_questions``, ``calibration_tiers``/``tiers``,
  ``difficulty``, ``blocked_docids``, and corpus counts (``documents``, ``chunks``,
  ``content_identity``, top level or under ``corpus``).
- ``search/coverage_summary.json`` and ``search/source_manifest_summary.json``: corpus
  counts (``documents``, ``indexed_documents``, ``empty_documents``, ``chunks``); coverage
  also ``answer_docids``, ``answer_docids_in_corpus``, ``questions_with_answer_in_corpus``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..index import BlockList, DrsearchError, missing_docids, sha256_file
from .dr256 import PINNED_RELEASES, PinnedRelease, QuestionSet, pinned_for, pins_named
from .manifest import (
    CORPUS_BUILD_KEYS,
    CORPUS_COUNT_KEYS,
    COVERAGE,
    DATABASE,
    QUESTIONS,
    SOURCES,
    SUMMARY,
    Manifest,
)
from .report import Check
from .report import check as _check

_CORPUS_KEYS = ("documents", "indexed_documents", "empty_documents", "chunks", "content_identity")


def _agree(n: int) -> str:
    return "1 count agrees" if n == 1 else f"{n} counts agree"


def _differs(what: str, found: object, expected: object, source: str) -> str:
    return f"{what} is {found!r} but {source} has {expected!r}"


def corpus_meta_check(meta: dict[str, Any], manifest: Manifest | None) -> Check:
    """The index's ``meta`` agrees with the manifest's corpus section (identity, build, counts)."""
    ok = (f"identity {meta.get('content_identity')}, {meta.get('documents'):,} documents, "
          f"{meta.get('chunks'):,} chunks, chunks {meta.get('chunk_words')}/{meta.get('chunk_stride')}")
    if manifest is None:
        return _check("corpus meta", [], ok + " (no manifest to compare)")
    corpus = manifest.corpus
    problems = []
    for key in ("content_identity", "schema_version", "application_id", *CORPUS_COUNT_KEYS):
        if key in corpus and corpus[key] != meta.get(key):
            problems.append(_differs(f"meta {key}", meta.get(key), corpus[key], "manifest.json"))
    for key, value in corpus.get("build", {}).items():
        if key in CORPUS_BUILD_KEYS and value != meta.get(key):
            problems.append(_differs(f"meta {key}", meta.get(key), value, "manifest.json"))
    return _check("corpus meta", problems, ok + ", as in manifest.json")


def _read_json(root: Path, rel: str) -> tuple[dict[str, Any] | None, str | None]:
    try:
        data = json.loads((root / rel).read_bytes())
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        return None, f"{rel}: not valid JSON ({e})"
    if not isinstance(data, dict):
        return None, f"{rel}: must be a JSON object"
    return data, None


def _corpus_count_problems(data: dict[str, Any], meta: dict[str, Any], rel: str) -> tuple[list[str], int]:
    problems, seen = [], 0
    for scope in (data, data.get("corpus")):
        if not isinstance(scope, dict):
            continue
        for key in _CORPUS_KEYS:
            if key in scope:
                seen += 1
                if scope[key] != meta.get(key):
                    problems.append(_differs(f"{rel} {key}", scope[key], meta.get(key), "the corpus meta"))
    return problems, seen


def _first(data: dict[str, Any], *keys: str) -> tuple[str, Any] | None:
    return next(((k, data[k]) for k in keys if k in data), None)


def summary_check(root: Path, meta: dict[str, Any], qs: QuestionSet, blocklist: BlockList | None) -> Check:
    """benchmark/summary.json counts agree with the questions, blocklist and corpus meta."""
    data, error = _read_json(root, SUMMARY)
    if error or data is None:
        return _check("summary counts", [error or f"{SUMMARY} missing"], "")
    problems, seen = _corpus_count_problems(data, meta, SUMMARY)
    expected: list[tuple[tuple[str, ...], Any]] = [
        (("questions", "num_questions"), len(qs.rows)),
        (("calibration_tiers", "tiers"), qs.tiers),
        (("difficulty",), qs.difficulties),
    ]
    if blocklist is not None:
        expected.append((("blocked_docids", "num_blocked_docids"), len(blocklist)))
    for keys, actual in expected:
        found = _first(data, *keys)
        if found is None:
            continue
        seen += 1
        key, value = found
        value = {str(k): v for k, v in value.items()} if isinstance(value, dict) else value
        if value != actual:
            problems.append(_differs(f"{SUMMARY} {key}", value, actual, "the release"))
    if not seen and not problems:
        return Check("summary counts", "WARN", f"{SUMMARY} has no count this validator knows")
    return _check("summary counts", problems, f"{_agree(seen)} with questions, blocklist and corpus")


def coverage_checks(root: Path, meta: dict[str, Any], qs: QuestionSet) -> list[Check]:
    """The coverage and source-manifest summaries agree with the corpus (and questions)."""
    checks = []
    in_corpus = set(qs.answer_docids) - set(missing_docids(root / DATABASE, qs.answer_docids))
    answered = sum(any(d in in_corpus for d in r.metadata.benchmark.clean_provenance_answer_docids)
                   for r in qs.rows)
    coverage_facts = {"answer_docids": len(qs.answer_docids), "answer_docids_in_corpus": len(in_corpus),
                      "questions_with_answer_in_corpus": answered}
    for name, rel, facts in (("coverage summary", COVERAGE, coverage_facts),
                             ("source manifest summary", SOURCES, {})):
        data, error = _read_json(root, rel)
        if error or data is None:
            checks.append(_check(name, [error or f"{rel} missing"], ""))
            continue
        problems, seen = _corpus_count_problems(data, meta, rel)
        for key, actual in facts.items():
            if key in data:
                seen += 1
                if data[key] != actual:
                    problems.append(_differs(f"{rel} {key}", data[key], actual, "the release"))
        checks.append(_check(name, problems, f"{_agree(seen)} with the corpus"
                             + (" and questions" if facts else "")))
    return checks


def answer_docid_check(root: Path, qs: QuestionSet, blocklist: BlockList | None) -> Check:
    """Answer-bearing docids exist in the corpus and are blocked (a WARN, not a FAIL:
    construction metadata, and a release may deliberately leave them out)."""
    docids = qs.answer_docids
    missing = missing_docids(root / DATABASE, docids)
    unblocked = sorted(d for d in docids if blocklist is not None and d not in blocklist)
    notes = []
    if missing:
        notes.append(f"{len(missing)} not in the corpus ({', '.join(missing[:3])})")
    if unblocked:
        notes.append(f"{len(unblocked)} not blocked ({', '.join(unblocked[:3])})")
    if notes:
        return Check("answer docids", "WARN", f"of {len(docids)} answer docids: " + "; ".join(notes))
    return Check("answer docids", "PASS", f"{len(docids)} answer docids, all in the corpus and blocked")


def manifest_counts_check(meta: dict[str, Any], qs: QuestionSet, blocklist: BlockList | None,
                          manifest: Manifest) -> Check:
    """The manifest's ``counts`` agree with what the release holds."""
    actual: dict[str, Any] = {"questions": len(qs.rows), "calibration_tiers": qs.tiers,
                              "difficulty": qs.difficulties, "documents": meta.get("documents"),
                              "chunks": meta.get("chunks")}
    if blocklist is not None:
        actual["blocked_docids"] = len(blocklist)
    problems = [_differs(f"manifest counts.{k}", manifest.counts[k], v, "the release")
                for k, v in actual.items() if k in manifest.counts and manifest.counts[k] != v]
    return _check("manifest counts", problems, "counts agree with the release")


def content_checks(root: Path, meta: dict[str, Any], qs: QuestionSet, blocklist: BlockList | None,
                   manifest: Manifest | None) -> list[Check]:
    """Every cross-file check that needs a readable corpus and questions."""
    try:
        checks = [summary_check(root, meta, qs, blocklist), *coverage_checks(root, meta, qs),
                  answer_docid_check(root, qs, blocklist)]
    except DrsearchError as e:
        return [_check("cross-file counts", [e.message], "")]
    if manifest is not None:
        checks.append(manifest_counts_check(meta, qs, blocklist, manifest))
    return checks


# -- pinned identities ---------------------------------------------------------------------


def _recognise(manifest: Manifest | None, questions_sha: str | None,
               pins: tuple[PinnedRelease, ...]) -> tuple[PinnedRelease | None, str]:
    if manifest is not None:
        pin = pinned_for(manifest.release.name, manifest.release.revision, pins)
        if pin is not None:
            return pin, f"names itself {pin.label}"
    db = manifest.entry(DATABASE) if manifest is not None else None
    for pin in pins:
        if questions_sha == pin.questions_sha256:
            return pin, f"its questions are those of {pin.label}"
        if db is not None and db.sha256 == pin.database_sha256:
            return pin, f"its manifest lists the corpus of {pin.label}"
    return None, ""


def pinned_problems(pin: PinnedRelease, questions_sha: str | None, qs: QuestionSet | None,
                    db_bytes: int | None, manifest_db_sha: str | None, db_sha: str | None) -> list[str]:
    """Every way a release differs from ``pin``, each stated precisely."""
    p: list[str] = []
    if questions_sha is None:
        p.append(f"{QUESTIONS} missing: {pin.label} pins SHA-256 {pin.questions_sha256}")
    elif questions_sha != pin.questions_sha256:
        p.append(f"{QUESTIONS} SHA-256 is {questions_sha}, {pin.label} pins {pin.questions_sha256}")
    if qs is not None and len(qs.rows) != pin.questions:
        p.append(f"{len(qs.rows)} questions, {pin.label} has {pin.questions}")
    if qs is not None and qs.tiers != pin.tiers:
        p.append(f"calibration tiers {qs.tiers}, {pin.label} has {pin.tiers}")
    if db_bytes is None:
        p.append(f"{DATABASE} missing: {pin.label} pins {pin.database_bytes:,} bytes")
    elif db_bytes != pin.database_bytes:
        diff = db_bytes - pin.database_bytes
        p.append(f"{DATABASE} is {db_bytes:,} bytes, {pin.label} pins {pin.database_bytes:,} "
                 f"({abs(diff):,} bytes {'more' if diff > 0 else 'short'})")
    if manifest_db_sha is not None and manifest_db_sha != pin.database_sha256:
        p.append(f"manifest.json lists {DATABASE} SHA-256 {manifest_db_sha}, "
                 f"{pin.label} pins {pin.database_sha256}")
    if db_sha is not None and db_sha != pin.database_sha256:
        p.append(f"{DATABASE} re-hashed to SHA-256 {db_sha}, {pin.label} pins {pin.database_sha256}")
    return p


def identity_checks(root: Path, manifest: Manifest | None, qs: QuestionSet | None, hashes: dict[str, str],
                    pins: tuple[PinnedRelease, ...] | None = None) -> list[Check]:
    """Recognise a pinned release (by name, or by its questions' or corpus' hash) and
    compare it field by field; ``hashes`` holds SHA-256s already computed this run.
    ``pins`` defaults to :data:`PINNED_RELEASES` (looked up at call time)."""
    pins = PINNED_RELEASES if pins is None else pins
    qpath, dbpath = root / QUESTIONS, root / DATABASE
    questions_sha = hashes.get(QUESTIONS)
    if questions_sha is None and qpath.is_file():
        try:
            questions_sha = sha256_file(qpath)
        except OSError:
            questions_sha = None  # reported by the file check
    pin, why = _recognise(manifest, questions_sha, pins)
    if pin is None:
        named = manifest.release if manifest is not None else None
        if named is not None and pins_named(named.name, pins):
            known = ", ".join(p.revision for p in pins_named(named.name, pins))
            return [Check("pinned identity", "WARN", f"{named.name} {named.revision} has no pinned "
                          f"identity (pinned revisions: {known})")]
        label = f"{named.name} {named.revision}" if named is not None else "this release"
        return [Check("pinned identity", "PASS", f"no pinned identity applies to {label}")]
    db_entry = manifest.entry(DATABASE) if manifest is not None else None
    problems = pinned_problems(pin, questions_sha, qs, dbpath.stat().st_size if dbpath.is_file() else None,
                               db_entry.sha256 if db_entry is not None else None, hashes.get(DATABASE))
    ok = f"matches {pin.label} ({why})" + ("" if DATABASE in hashes else "; corpus hash checked by --deep")
    if problems:
        return [Check("pinned identity", "FAIL", f"{why}, but: " + "; ".join(problems),
                      {"pin": pin.label, "problems": problems})]
    return [Check("pinned identity", "PASS", ok, {"pin": pin.label})]


__all__ = [
    "answer_docid_check",
    "content_checks",
    "corpus_meta_check",
    "coverage_checks",
    "identity_checks",
    "manifest_counts_check",
    "pinned_problems",
    "summary_check",
]
