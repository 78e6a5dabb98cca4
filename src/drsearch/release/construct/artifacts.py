"""``construct artifacts``: documents that would hand an agent pool answers (leak-artifact candidates).

Three signals, each with its evidence in ``artifact_candidates.jsonl`` (one line per
flagged document, docid order):

- ``verbatim_questions``: the document's text holds at least ``min_questions`` pool
  questions verbatim (both normalised as the answer match normalises: case, whitespace,
  thousands separators);
- ``qa_pairs``: at least ``min_pairs`` of those questions are followed within
  ``pair_window`` characters by their answer (a dump of questions *with* answers);
- ``url_pattern``: the document's URL matches one of ``url_patterns`` (regular expressions,
  searched case-insensitively: dataset hubs, raw data files, Q&A sites; :data:`URL_PATTERNS`
  by default, or one per line of a ``--url-patterns`` file).

The text signals look for a question only in the documents ranking in the top
``candidate_k`` for that question's text (a document holding a question verbatim ranks high
for it), so the scan costs one search per question and at most ``candidate_k`` text checks
per question, not questions × documents; the URL signal reads every document's URL.
Nothing is blocked here: a reviewer turns the candidates into
``blocked_docids.txt`` with ``# reason`` comments, and :func:`check_blocklist` refuses one
that blocks an independent answer document (exit 2 naming both).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import apsw

from ...benchmark.generate import StageContext
from ...benchmark.leak_audit import contains_answer
from ...benchmark.leak_audit import normalise as normalise_text
from ...contract import InvalidInputError
from ...index import BlockList, Engine
from .audit import refuse_blocked_answers
from .work import ANSWERS_FILE, ARTIFACTS_FILE, POOL_FILE, read_rows, run_stage, stage_input

URL_PATTERNS = (
    r"^https?://([^/]+\.)?huggingface\.co/datasets/",          # dataset hubs
    r"^https?://([^/]+\.)?kaggle\.com/datasets/",
    r"^https?://([^/]+\.)?(zenodo\.org/records?|figshare\.com/articles)/",
    r"^https?://raw\.githubusercontent\.com/",                   # raw files
    r"\.(jsonl|ndjson|json|csv|tsv|parquet)(\.gz)?([?#]|$)",
    r"^https?://([^/]+\.)?(quora\.com|stackexchange\.com|stackoverflow\.com|answers\.com|brainly\.[a-z.]+"
    r"|chegg\.com|coursehero\.com|answers\.yahoo\.com)/",          # Q&A sites
    r"^https?://([^/]+\.)?reddit\.com/r/[^/]+/comments/",
)
SETTINGS = {"candidate_k": 20, "min_questions": 2, "min_pairs": 2, "pair_window": 300}


def read_url_patterns(path: str | Path) -> tuple[str, ...]:
    """One regular expression per line (blank lines and ``#`` comments skipped).
    InvalidInputError (exit 2, ``file:line``) for one that does not compile or a file without any."""
    patterns = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            re.compile(text)
        except re.error as e:
            raise InvalidInputError(f"{path}:{n}: not a regular expression ({e})") from None
        patterns.append(text)
    if not patterns:
        raise InvalidInputError(f"{path}: no URL patterns")
    return tuple(patterns)


def _all_urls(database: str) -> list[tuple[str, str]]:
    """(docid, url) of every document, docid order (read-only, as the integrity checks read)."""
    conn = apsw.Connection(f"file:{Path(database).resolve()}?mode=ro&immutable=1",
                           flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        return [(d, u) for d, u in conn.execute("SELECT docid, url FROM documents ORDER BY docid")]
    finally:
        conn.close()


def text_evidence(text: str, pool: list[dict[str, Any]], window: int) -> tuple[list[str], list[str]]:
    """The qids whose question ``text`` holds verbatim, and those of them followed within
    ``window`` characters by their answer."""
    body = normalise_text(text)
    verbatim, pairs = [], []
    for row in pool:
        needle = normalise_text(row["question"])
        at = body.find(needle)
        if at < 0:
            continue
        verbatim.append(row["qid"])
        end = at + len(needle)
        if contains_answer(body[end:end + window], row["answer"]):
            pairs.append(row["qid"])
    return verbatim, pairs


def _run(ctx: StageContext) -> None:
    s = ctx.settings
    pool = read_rows(Path(ctx.stage.inputs[0]))
    patterns = [re.compile(p, re.I) for p in s["url_patterns"]]
    flagged: dict[str, dict[str, Any]] = {}
    with Engine.open(s["database"], release_blocklist="ignore") as engine:  # finds what to block
        surfaced: dict[str, list[dict[str, Any]]] = {}  # docid -> the questions whose search found it
        for row in pool:
            for h in engine.search(row["question"], s["candidate_k"], with_text=False).hits:
                surfaced.setdefault(h.docid, []).append(row)
        candidates = sorted(surfaced)
        for docid in candidates:
            doc = engine.open_document(docid=docid)
            verbatim, pairs = text_evidence(doc.text, surfaced[docid], s["pair_window"])
            signals = {}
            if len(verbatim) >= s["min_questions"]:
                signals["verbatim_questions"] = verbatim
            if len(pairs) >= s["min_pairs"]:
                signals["qa_pairs"] = pairs
            if signals:
                flagged[docid] = {"docid": docid, "url": doc.url, "title": doc.title, "signals": signals}
        urls = _all_urls(s["database"])
        for docid, url in urls:
            hit = next((p.pattern for p in patterns if p.search(url)), None)
            if hit is not None:
                entry = flagged.setdefault(docid, {"docid": docid, "url": url,
                                                   "title": engine.open_document(docid=docid).title,
                                                   "signals": {}})
                entry["signals"]["url_pattern"] = hit
    ctx.count_in(len(urls))
    ctx.count_out(len(flagged))
    rows = [flagged[d] for d in sorted(flagged)]
    ctx.write_jsonl("artifact_candidates.jsonl", rows)
    by_signal = {name: sum(name in r["signals"] for r in rows)
                 for name in ("verbatim_questions", "qa_pairs", "url_pattern")}
    ctx.write_json("facts.json", {"documents": len(urls), "text_candidates_scanned": len(candidates),
                                  "flagged": len(rows), "flagged_by_signal": by_signal})


def find_artifacts(pool: str | Path, database: str | Path, *, url_patterns: tuple[str, ...] = URL_PATTERNS,
                   **overrides: int) -> dict[str, Any]:
    """Write ``POOL/artifacts/artifact_candidates.jsonl``; returns the stage's record.
    ``overrides`` replace :data:`SETTINGS` values (all recorded in the stage's settings)."""
    source = stage_input(Path(pool), POOL_FILE)
    unknown = sorted(set(overrides) - set(SETTINGS))
    if unknown:
        raise InvalidInputError(f"unknown artifact setting {unknown[0]!r}")
    with Engine.open(database, release_blocklist="ignore") as engine:
        identity = engine.meta["content_identity"]
    settings = {**SETTINGS, **overrides, "url_patterns": list(url_patterns),
                "database": str(Path(database).resolve()), "corpus_identity": identity}
    return run_stage(pool, "artifacts", _run, inputs=(source,),
                     outputs=("artifact_candidates.jsonl", "facts.json"), settings=settings)


def check_blocklist(pool: str | Path, blocked: str | Path) -> dict[str, Any]:
    """Compare a reviewer's ``blocked_docids.txt`` with the pool's answer documents and the
    artifact candidates. InvalidInputError (exit 2) naming the docid and its question when
    a blocked docid is an independent answer document; otherwise the counts
    ``{blocked, candidates, candidates_blocked, candidates_not_blocked, blocked_not_candidates}``."""
    root = Path(pool)
    blocklist = BlockList.from_file(blocked)
    refuse_blocked_answers(read_rows(stage_input(root, ANSWERS_FILE)), blocklist, blocked)
    candidates = {r["docid"] for r in read_rows(stage_input(root, ARTIFACTS_FILE))}
    listed = set(blocklist.docids)
    return {"blocked": len(listed), "candidates": len(candidates),
            "candidates_blocked": len(candidates & listed),
            "candidates_not_blocked": sorted(candidates - listed),
            "blocked_not_candidates": sorted(listed - candidates)}


__all__ = ["SETTINGS", "URL_PATTERNS", "check_blocklist", "find_artifacts", "read_url_patterns",
           "text_evidence"]
