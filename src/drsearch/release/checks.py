"""Cross-file checks of a release: corpus meta, summaries, counts and pinned identities.

Each function returns :class:`~drsearch.release.report.Check` records and never raises
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
import re
from pathlib import Path
from typing import Any

from ..contract import DrsearchError
from ..index import BlockList, missing_docids, sha256_file
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
    rule = ("as given (pre-chunked)" if meta.get("chunking") == "pre-chunked"
            else f"{meta.get('chunk_words')}/{meta.get('chunk_stride')}")
    ok = (f"identity {meta.get('content_identity')}, {meta.get('documents'):,} documents, "
          f"{meta.get('chunks'):,} chunks, chunks {rule}")
    if manifest is None:
        return _check("corpus meta", [], ok + " (no manifest to compare)")
    corpus = manifest.corpus
    problems = []
    for key in ("content_identity", "schema_version", "application_id", "provenance", *CORPUS_COUNT_KEYS):
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


def _corpus_count_problems(data: dict[str, Any], meta: dict[str, Any] | None,
                           rel: str) -> tuple[list[str], int]:
    problems: list[str] = []
    seen = 0
    if meta is None:  # a foreign corpus: no meta to compare with
        return problems, seen
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


def summary_check(root: Path, meta: dict[str, Any] | None, qs: QuestionSet,
                  blocklist: BlockList | None) -> Check:
    """benchmark/summary.json counts agree with the questions, blocklist and corpus meta
    (``meta`` None: a foreign corpus, whose counts are not checked)."""
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
    against = "questions, blocklist and corpus" if meta is not None else \
        "questions and blocklist (corpus counts not checked: foreign corpus)"
    return _check("summary counts", problems, f"{_agree(seen)} with {against}")


def answer_coverage(database: Path, qs: QuestionSet) -> dict[str, int]:
    """How many answer docids there are, how many the corpus at ``database`` holds, and how
    many questions have an answer document in it (the answer keys of the coverage summary)."""
    answers = qs.answer_docids
    in_corpus = answers - set(missing_docids(database, answers))
    answered = sum(any(d in in_corpus for d in r.metadata.benchmark.clean_provenance_answer_docids)
                   for r in qs.rows)
    return {"answer_docids": len(answers), "answer_docids_in_corpus": len(in_corpus),
            "questions_with_answer_in_corpus": answered}


def coverage_checks(root: Path, meta: dict[str, Any], qs: QuestionSet) -> list[Check]:
    """The coverage and source-manifest summaries agree with the corpus (and questions)."""
    checks = []
    for name, rel, facts in (("coverage summary", COVERAGE, answer_coverage(root / DATABASE, qs)),
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
    """Each question's independent answer documents (``clean_provenance_answer_docids``) are
    in the corpus and NOT blocked: the blocklist holds leak artifacts (dataset dumps, QA
    pages), while the answer documents must stay searchable and openable (only their ids
    are kept from the agent). FAIL otherwise: a blocked or absent answer document makes
    its question unanswerable by construction."""
    docids = qs.answer_docids
    missing = missing_docids(root / DATABASE, docids)
    blocked = sorted(d for d in docids if blocklist is not None and d in blocklist)
    notes = []
    if missing:
        notes.append(f"{len(missing)} not in the corpus ({', '.join(missing[:3])})")
    if blocked:
        notes.append(f"{len(blocked)} blocked ({', '.join(blocked[:3])}): the blocklist must list leak "
                     "artifacts, not the independent answer documents")
    if notes:
        return Check("answer docids", "FAIL", f"of {len(docids)} answer docids: " + "; ".join(notes))
    return Check("answer docids", "PASS", f"{len(docids)} answer docids, all in the corpus and unblocked")


def manifest_counts_check(meta: dict[str, Any] | None, qs: QuestionSet, blocklist: BlockList | None,
                          manifest: Manifest) -> Check:
    """The manifest's ``counts`` agree with what the release holds (``meta`` None: a
    foreign corpus, whose document and chunk counts are not checked)."""
    actual: dict[str, Any] = {"questions": len(qs.rows), "calibration_tiers": qs.tiers,
                              "difficulty": qs.difficulties}
    if meta is not None:
        actual |= {"documents": meta.get("documents"), "chunks": meta.get("chunks")}
    if blocklist is not None:
        actual["blocked_docids"] = len(blocklist)
    problems = [_differs(f"manifest counts.{k}", manifest.counts[k], v, "the release")
                for k, v in actual.items() if k in manifest.counts and manifest.counts[k] != v]
    return _check("manifest counts", problems, "counts agree with the release")


def content_checks(root: Path, meta: dict[str, Any] | None, qs: QuestionSet, blocklist: BlockList | None,
                   manifest: Manifest | None) -> list[Check]:
    """Every cross-file check that needs the questions (and, for most, a readable corpus:
    ``meta`` None means a foreign corpus, and only the question-side counts are checked)."""
    if meta is None:
        checks = [summary_check(root, None, qs, blocklist),
                  Check("corpus counts", "WARN", f"not checked: the corpus is another tool's file, so the "
                        f"corpus counts of {COVERAGE} and {SOURCES} and the answer docids cannot be "
                        "looked up (drsearch import it to check them)")]
        if manifest is not None:
            checks.append(manifest_counts_check(None, qs, blocklist, manifest))
        return checks
    try:
        checks = [summary_check(root, meta, qs, blocklist), *coverage_checks(root, meta, qs),
                  answer_docid_check(root, qs, blocklist)]
    except DrsearchError as e:
        return [_check("cross-file counts", [e.message], "")]
    if manifest is not None:
        checks.append(manifest_counts_check(meta, qs, blocklist, manifest))
    return checks


# -- pinned identities ---------------------------------------------------------------------

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_MAPPING_KEYS = ("table", "docid", "url", "text")


def _size_diff(found: int, pinned: int) -> str:
    diff = found - pinned
    return f"{abs(diff):,} bytes {'more' if diff > 0 else 'short'}"


def _db_size_problem(db_bytes: int, pin: PinnedRelease) -> str:
    return (f"{DATABASE} is {db_bytes:,} bytes, {pin.label} pins {pin.database_bytes:,} "
            f"({_size_diff(db_bytes, pin.database_bytes)})")


def active_pins(pins: tuple[PinnedRelease, ...] | None) -> tuple[PinnedRelease, ...]:
    """``pins``, or :data:`PINNED_RELEASES` as it is now (tests may replace it)."""
    return PINNED_RELEASES if pins is None else pins


def pin_of_corpus_file(sha256: str, size: int,
                       pins: tuple[PinnedRelease, ...] | None = None) -> PinnedRelease | None:
    """The pinned release whose corpus file has exactly this SHA-256 and size, or None."""
    return next((p for p in active_pins(pins) if (p.database_sha256, p.database_bytes) == (sha256, size)),
                None)


def derived_pin(provenance: Any, pins: tuple[PinnedRelease, ...]) -> PinnedRelease | None:
    """The pin that ``provenance.derived_from`` names, if any."""
    derived = provenance.get("derived_from") if isinstance(provenance, dict) else None
    if not isinstance(derived, dict):
        return None
    name, revision = derived.get("name"), derived.get("revision")
    if not isinstance(name, str) or not isinstance(revision, str):
        return None
    return pinned_for(name, revision, pins)


def _recognise(manifest: Manifest | None, questions_sha: str | None, pins: tuple[PinnedRelease, ...],
               db_bytes: int | None = None, foreign: bool = False,
               provenance: Any = None) -> tuple[PinnedRelease | None, str]:
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
    pin = derived_pin(provenance, pins)
    if pin is not None:
        return pin, f"its corpus is derived from {pin.label}"
    for pin in pins:
        if foreign and db_bytes == pin.database_bytes:
            return pin, f"its foreign corpus file has the size {pin.label} pins"
    return None, ""


def recognise_pin(manifest: Manifest | None, questions_sha: str | None,
                  pins: tuple[PinnedRelease, ...] | None = None, *, db_bytes: int | None = None,
                  foreign: bool = False, provenance: Any = None) -> PinnedRelease | None:
    """The pinned release this one is (by name, questions or corpus hash, the corpus'
    recorded provenance, or, for another tool's corpus file, its size), or None."""
    return _recognise(manifest, questions_sha, active_pins(pins), db_bytes, foreign, provenance)[0]


def provenance_problems(provenance: dict[str, Any], pin: PinnedRelease) -> list[str]:
    """How the source an index records differs from ``pin``'s corpus file, field by field."""
    source = provenance.get("source")
    source = source if isinstance(source, dict) else {}
    p = []
    if source.get("bytes") != pin.database_bytes:
        found = source.get("bytes")
        diff = f" ({_size_diff(found, pin.database_bytes)})" if isinstance(found, int) else ""
        p.append(f"meta provenance.source.bytes is {found!r}, {pin.label} pins "
                 f"{pin.database_bytes:,}{diff}")
    if source.get("sha256") != pin.database_sha256:
        p.append(f"meta provenance.source.sha256 is {source.get('sha256')!r}, {pin.label} pins "
                 f"{pin.database_sha256}")
    return p


def pinned_problems(pin: PinnedRelease, questions_sha: str | None, qs: QuestionSet | None,
                    db_bytes: int | None, manifest_db_sha: str | None, db_sha: str | None,
                    provenance: dict[str, Any] | None = None) -> list[str]:
    """Every way a release differs from ``pin``, each stated precisely.

    When the corpus is our index derived from ``pin``'s corpus file (``provenance``
    names it), the recorded source is compared with the pin instead of the file itself.
    """
    p: list[str] = []
    if questions_sha is None:
        p.append(f"{QUESTIONS} missing: {pin.label} pins SHA-256 {pin.questions_sha256}")
    elif questions_sha != pin.questions_sha256:
        p.append(f"{QUESTIONS} SHA-256 is {questions_sha}, {pin.label} pins {pin.questions_sha256}")
    if qs is not None and len(qs.rows) != pin.questions:
        p.append(f"{len(qs.rows)} questions, {pin.label} has {pin.questions}")
    if qs is not None and qs.tiers != pin.tiers:
        p.append(f"calibration tiers {qs.tiers}, {pin.label} has {pin.tiers}")
    if provenance is not None and derived_pin(provenance, (pin,)) is pin:
        return p + provenance_problems(provenance, pin)
    if db_bytes is None:
        p.append(f"{DATABASE} missing: {pin.label} pins {pin.database_bytes:,} bytes")
    elif db_bytes != pin.database_bytes:
        p.append(_db_size_problem(db_bytes, pin))
    if manifest_db_sha is not None and manifest_db_sha != pin.database_sha256:
        p.append(f"manifest.json lists {DATABASE} SHA-256 {manifest_db_sha}, "
                 f"{pin.label} pins {pin.database_sha256}")
    if db_sha is not None and db_sha != pin.database_sha256:
        p.append(f"{DATABASE} re-hashed to SHA-256 {db_sha}, {pin.label} pins {pin.database_sha256}")
    return p


def identity_checks(root: Path, manifest: Manifest | None, qs: QuestionSet | None, hashes: dict[str, str],
                    pins: tuple[PinnedRelease, ...] | None = None, *, foreign: bool = False,
                    provenance: dict[str, Any] | None = None) -> list[Check]:
    """Recognise a pinned release (by name, its questions' or corpus' hash, the corpus'
    provenance, or a foreign corpus file's size) and compare it field by field;
    ``hashes`` holds SHA-256s already computed this run. ``pins`` defaults to
    :data:`PINNED_RELEASES` (looked up at call time)."""
    pins = active_pins(pins)
    qpath, dbpath = root / QUESTIONS, root / DATABASE
    questions_sha = hashes.get(QUESTIONS)
    if questions_sha is None and qpath.is_file():
        try:
            questions_sha = sha256_file(qpath)
        except OSError:
            questions_sha = None  # reported by the file check
    db_bytes = dbpath.stat().st_size if dbpath.is_file() else None
    pin, why = _recognise(manifest, questions_sha, pins, db_bytes, foreign, provenance)
    if pin is None:
        named = manifest.release if manifest is not None else None
        if named is not None and pins_named(named.name, pins):
            known = ", ".join(p.revision for p in pins_named(named.name, pins))
            return [Check("pinned identity", "WARN", f"{named.name} {named.revision} has no pinned "
                          f"identity (pinned revisions: {known})")]
        label = f"{named.name} {named.revision}" if named is not None else "this release"
        return [Check("pinned identity", "PASS", f"no pinned identity applies to {label}")]
    db_entry = manifest.entry(DATABASE) if manifest is not None else None
    listed_sha = db_entry.sha256 if db_entry is not None else None
    problems = pinned_problems(pin, questions_sha, qs, db_bytes, listed_sha, hashes.get(DATABASE), provenance)
    if provenance is not None and derived_pin(provenance, (pin,)) is pin:
        corpus = f"; the corpus is drsearch's index derived from {pin.label}'s corpus file, as pinned"
    elif DATABASE in hashes:
        corpus = ""
    else:
        corpus = "; corpus hash checked by --deep"
    if problems:
        return [Check("pinned identity", "FAIL", f"{why}, but: " + "; ".join(problems),
                      {"pin": pin.label, "problems": problems})]
    return [Check("pinned identity", "PASS", f"matches {pin.label} ({why}){corpus}", {"pin": pin.label})]


def foreign_corpus_check(pin: PinnedRelease, db_bytes: int, db_sha: str | None) -> Check:
    """Another tool's corpus file is accepted only as ``pin``'s: its size (fast) and, when
    re-hashed (``db_sha``, deep), its SHA-256 must be the pinned ones."""
    problems = []
    if db_bytes != pin.database_bytes:
        problems.append(_db_size_problem(db_bytes, pin))
    if db_sha is not None and db_sha != pin.database_sha256:
        problems.append(f"{DATABASE} SHA-256 is {db_sha}, {pin.label} pins {pin.database_sha256}")
    details = {"pin": pin.label, "bytes": db_bytes, "sha256": db_sha}
    if problems:
        return Check("foreign corpus", "FAIL", f"foreign corpus file is not the pinned {pin.label} identity: "
                     + "; ".join(problems), {**details, "problems": problems})
    hashed = "SHA-256 as pinned" if db_sha is not None else "SHA-256 checked by --deep"
    return Check("foreign corpus", "PASS", f"foreign corpus file: pinned {pin.label} identity "
                 f"({db_bytes:,} bytes as pinned; {hashed})", details)


def _provenance_shape(prov: Any) -> list[str]:
    """Structural problems of a ``meta`` provenance record (docs/RELEASE.md)."""
    if not isinstance(prov, dict):
        return [f"meta provenance is {type(prov).__name__}, not an object"]
    source = prov.get("source")
    if not isinstance(source, dict):
        return ["meta provenance.source is missing or not an object"]
    p = []
    if not isinstance(source.get("name"), str):
        p.append("meta provenance.source.name is not a string")
    if source.get("format") not in ("sqlite", "jsonl"):
        p.append(f"meta provenance.source.format is {source.get('format')!r}, not 'sqlite' or 'jsonl'")
    size = source.get("bytes")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        p.append(f"meta provenance.source.bytes is {size!r}, not a byte count")
    if not isinstance(source.get("sha256"), str) or not _SHA256.match(source["sha256"]):
        p.append(f"meta provenance.source.sha256 is {source.get('sha256')!r}, not a SHA-256")
    mapping = prov.get("mapping")
    if mapping is not None and (not isinstance(mapping, dict) or not all(
            isinstance(mapping.get(k), str) for k in _MAPPING_KEYS)):
        p.append("meta provenance.mapping must be null or name table, docid, url and text")
    derived = prov.get("derived_from")
    if derived is not None and (not isinstance(derived, dict) or not all(
            isinstance(derived.get(k), str) and derived[k] for k in ("name", "revision"))):
        p.append("meta provenance.derived_from must name a release: {\"name\", \"revision\"}")
    return p


def _describe_source(prov: dict[str, Any]) -> str:
    src = prov["source"]
    text = (f"{prov.get('method', 'imported')} from {src['name']} ({src['format']}, {src['bytes']:,} bytes, "
            f"SHA-256 {src['sha256'][:16]}…)")
    mapping = prov.get("mapping")
    if isinstance(mapping, dict):
        cols = ", ".join(f"{k}={mapping[k]!r}" for k in ("docid", "url", "title", "text") if mapping.get(k))
        text += f", table {mapping['table']!r} ({cols})"
    chunks, tokenizer = prov.get("chunks"), prov.get("tokenizer")
    if isinstance(chunks, dict) and isinstance(tokenizer, dict):
        text += (f"; its FTS5 table {chunks.get('table')!r} as chunks, tokenizer {tokenizer.get('used')!r}")
    return text


def provenance_check(meta: dict[str, Any], pins: tuple[PinnedRelease, ...] | None = None) -> Check | None:
    """The source an imported index records (``meta`` key ``provenance``), checked against
    the pinned release it says it was derived from; None if the index records none."""
    if "provenance" not in meta:
        return None
    pins = active_pins(pins)
    prov = meta["provenance"]
    shape = _provenance_shape(prov)
    if shape:
        return _check("corpus provenance", shape, "")
    source = _describe_source(prov)
    derived = prov.get("derived_from")
    if derived is None:
        same = pin_of_corpus_file(prov["source"]["sha256"], prov["source"]["bytes"], pins)
        if same is not None:
            return Check("corpus provenance", "WARN", f"{source}: the source is {same.label}'s corpus "
                         "file, but derived_from is not recorded")
        return Check("corpus provenance", "PASS", f"{source}; not derived from a pinned release")
    pin = derived_pin(prov, pins)
    if pin is None:
        return Check("corpus provenance", "WARN", f"derived from {derived['name']} {derived['revision']}, "
                     f"which has no pinned identity to check the recorded source against; {source}")
    problems = provenance_problems(prov, pin)
    if problems:
        return Check("corpus provenance", "FAIL", f"says it is derived from {pin.label}, but: "
                     + "; ".join(problems), {"pin": pin.label, "problems": problems})
    return Check("corpus provenance", "PASS", f"derived from {pin.label}: {source}; the source's size and "
                 "SHA-256 are the pinned ones", {"pin": pin.label})


__all__ = [
    "active_pins",
    "answer_coverage",
    "answer_docid_check",
    "content_checks",
    "corpus_meta_check",
    "coverage_checks",
    "derived_pin",
    "foreign_corpus_check",
    "identity_checks",
    "manifest_counts_check",
    "pin_of_corpus_file",
    "pinned_problems",
    "provenance_check",
    "provenance_problems",
    "recognise_pin",
    "summary_check",
]
