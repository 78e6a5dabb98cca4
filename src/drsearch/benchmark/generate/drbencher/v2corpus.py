"""The corpus V2's episodes search (docs/GENERATE.md, the ``v2`` stage).

Three ways to name it, from the config's ``v2``:

- **default** (neither ``corpus`` nor ``search_url``): :func:`build_default_corpus` writes
  ``GEN_DIR/v2_corpus.sqlite3``, the grounding articles of the questions V2 filters (each
  entity's and partner's article from the config's ``articles``) plus ``distractors`` pages that
  look like them, and ``v2_corpus.json`` saying which; the stage serves it itself.
- **a database** (``corpus``: a frozen drsearch index, e.g. a DR-256 release's): its identity
  (content identity, the blocklist the engine gives it by default, a release's own list
  included, and the retriever) is what the served corpus must have (:func:`named_corpus`).
- **a server** (``search_url`` alone): any drsearch server; the identity its ``/health``
  reports is recorded through the replay cache on first use and checked on every answer.

Distractors are the Wikipedia articles of KG entities that are not the questions' own but
look like them: the other entities discover found for the same topics, and the entities one
or two hops away on the questions' chains. The candidates are ranked by SHA-256 of
``SEED:QID`` (then QID); each takes its article from the ``articles`` file, or, with
``v2.wikipedia_api``, fetched through :mod:`.wikipedia` (robots.txt, one request at a time,
retries; through the replay cache, so a replay fetches nothing); the first ``distractors``
with an article are kept: the same inputs choose the same pages.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ....agents import EngineSearcher
from ....contract import CorpusInfo, DrsearchError, InvalidInputError
from ....index import Engine
from ....index.build import build as build_index

CORPUS_DB = "v2_corpus.sqlite3"
CORPUS_REPORT = "v2_corpus.json"


def named_corpus(database: Path, where: str = "v2.corpus") -> CorpusInfo:
    """The identity of the drsearch index at ``database`` as ``drsearch serve --database``
    serves it by default (a release's database with the release's own blocklist):
    InvalidInputError (exit 2) when it is not one."""
    try:
        with Engine.open(database) as engine:
            return EngineSearcher(engine).corpus()
    except DrsearchError as e:
        raise InvalidInputError(f"{where} {database}: not a usable drsearch index "
                                f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None


def identity_of(corpus: CorpusInfo) -> dict[str, Any]:
    """What names a corpus in a stage's settings and outputs (its fleet identity's parts)."""
    return {"blocklist_sha256": corpus.blocklist_sha256, "identity": corpus.identity,
            "retriever": corpus.retriever}


def corpus_from(identity: Mapping[str, Any]) -> CorpusInfo:
    return CorpusInfo(str(identity["identity"]), str(identity["blocklist_sha256"]),
                      retriever=identity.get("retriever"))


def _rank(seed: int, qid: str) -> tuple[str, str]:
    return hashlib.sha256(f"{seed}:{qid}".encode()).hexdigest(), qid


def question_entities(items: Iterable[Mapping[str, Any]]) -> set[str]:
    """The QIDs every question withholds (its entity, and a two-entity template's partner)."""
    out: set[str] = set()
    for c in items:
        out.add(str(c["qid"]))
        out.update(str(e["qid"]) for e in c.get("entities", []))
    return out


def distractor_candidates(items: Sequence[Mapping[str, Any]],
                          entities: Iterable[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """``{QID: (why, label)}`` of the entities that look like the questions' without being
    theirs: ``same_topic`` (another entity discover kept for a question's topic), ``one_hop`` /
    ``two_hop`` (an intermediate or end entity of a question's chains). The first reason in
    that order wins."""
    own = question_entities(items)
    topics = {c.get("topic") for c in items}
    found: dict[str, tuple[str, str]] = {}
    for e in entities:
        if e.get("topic") in topics:
            found.setdefault(str(e["qid"]), ("same_topic", str(e.get("label", ""))))
    for c in items:
        chains = [*c.get("chains", []), *(ch for e in c.get("entities", []) for ch in e.get("chains", []))]
        for ch in chains:
            found.setdefault(str(ch["mid"]), ("one_hop", str(ch.get("mid_label", ""))))
        for ch in chains:
            found.setdefault(str(ch["obj"]), ("two_hop", str(ch.get("obj_label", ""))))
    return {q: v for q, v in sorted(found.items()) if q not in own}


Fetcher = Callable[[list[tuple[str, str]]], list[tuple[dict[str, Any] | None, str]]]
"""``fetch([(QID, label), ...])``: for each entity its article (``{"docid", "qid", "title",
"text", "url"}``, reason ``""``) or ``(None, reason)``, as one polite batch (:mod:`.wikipedia`,
through the replay cache)."""


def build_default_corpus(items: Sequence[Mapping[str, Any]], entities: Iterable[Mapping[str, Any]],
                         articles: Iterable[Mapping[str, Any]], distractors: int, seed: int,
                         out: Path, fetch: Fetcher | None = None) -> dict[str, Any]:
    """Write the default V2 corpus to ``out`` (a drsearch index of the grounding articles plus
    at most ``distractors`` look-alike pages: from ``articles``, else, with ``fetch``, the
    candidate's Wikipedia article); returns the report ``v2_corpus.json`` keeps."""
    rows = [dict(a) for a in articles]
    by_qid = {str(a["qid"]): a for a in rows if "qid" in a}
    by_docid = {str(a["docid"]): a for a in rows}
    wanted = {str(c["article_docid"]) for c in items if c.get("article_docid")}
    wanted |= {str(by_qid[q]["docid"]) for q in question_entities(items) if q in by_qid}
    grounding = sorted(d for d in wanted if d in by_docid)
    candidates = distractor_candidates(items, entities)
    chosen: list[dict[str, str]] = []
    pages: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    ranked = sorted(candidates, key=lambda q: _rank(seed, q))
    fetchable = [q for q in ranked if q not in by_qid and candidates[q][1]]
    fetched: dict[str, tuple[dict[str, Any] | None, str]] = {}
    for qid in ranked:
        if len(chosen) >= distractors:
            break
        why, label = candidates[qid]
        article, source = by_qid.get(qid), "articles"
        if article is None and fetch is not None and label:
            if qid not in fetched:  # the next batch: as many as are still wanted, from this one on
                start = fetchable.index(qid)
                batch = fetchable[start:start + distractors - len(chosen)]
                fetched.update(zip(batch, fetch([(q, candidates[q][1]) for q in batch]), strict=True))
            article, reason = fetched[qid]
            source = "wikipedia"
            if article is None:
                skipped[qid] = reason
        docid = str(article["docid"]) if article is not None else ""
        if article is None or docid in wanted or any(p["docid"] == docid for p in pages):
            continue
        chosen.append({"docid": docid, "qid": qid, "source": source, "why": why})
        pages.append(dict(article))
    docs: list[dict[str, Any]] = [by_docid[d] for d in grounding] + pages
    docs.sort(key=lambda d: str(d["docid"]))
    out.unlink(missing_ok=True)
    build_index(docs, out)
    report: dict[str, Any] = {
        "candidates": len(candidates), "distractors": chosen, "documents": len(docs),
        "grounding": grounding, "kind": "default", "requested_distractors": distractors, "seed": seed,
        **({"skipped": dict(sorted(skipped.items()))} if fetch is not None else {})}
    return report


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


__all__ = ["CORPUS_DB", "CORPUS_REPORT", "Fetcher", "build_default_corpus", "corpus_from",
           "distractor_candidates", "identity_of", "named_corpus", "question_entities", "read_rows"]
