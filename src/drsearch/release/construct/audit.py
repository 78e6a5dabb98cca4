"""``construct audit``: shortcut probes — questions an agent could answer without research.

Every question kept by ``construct answers`` is probed through the engine with the
reviewed blocklist applied, and the results are read as the agent reads them: formatted by
the agent tools (:func:`drsearch.agents.tools.execute`, preset ``dr256``), so "in a
snippet" means in the text a model is shown. Three probes, each a removal reason code:

- ``answer_in_snippet``: the answer is in one of the top ``snippet_k`` results shown for the
  question text or for one of its first ``queries`` upstream search queries;
- ``answer_in_early_open``: the answer is in the first page (``open`` with no offset) of one
  of the top ``open_top`` results for the question text;
- ``single_retrieval``: an independent answer document ranks ``<= single_rank`` for the
  question text (one search finds it).

"Holds the answer" is the leak audit's match (:func:`~drsearch.benchmark.leak_audit.contains_answer`).
``audit/shortcuts.jsonl`` has one line per probed question with every probe's evidence (the
query, rank and docid that gave it away) and ``removed``; flagged questions are removed
with their first probe's code (in the order above) and all their flags in the reason.
Every k, page size and rank limit is a recorded setting. The probes are engine calls (no
model), so the stage is resumable as a whole: an interrupted audit reruns.

A blocklist that blocks an independent answer document is exit 2 naming both, before
anything is probed.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...agents import EngineSearcher
from ...agents.preset import DR256
from ...agents.tools import execute
from ...benchmark.generate import StageContext
from ...benchmark.leak_audit import contains_answer
from ...contract import InvalidInputError
from ...index import BlockList, Engine
from .work import ANSWERS_FILE, POOL_FILE, read_rows, run_stage, stage_input

PROBES = ("answer_in_snippet", "answer_in_early_open", "single_retrieval")
SETTINGS = {"snippet_k": 10, "queries": 2, "open_top": 3, "single_rank": 3}
_HIT = re.compile(r"^\[(\d+)\] docid: (\S+)$", re.M)


def shown_hits(text: str) -> list[tuple[int, str, str]]:
    """(rank, docid, block) of each result in a formatted search response (the header,
    which echoes the query, is not part of any block)."""
    marks = list(_HIT.finditer(text))
    ends = [m.start() for m in marks[1:]] + [len(text)]
    return [(int(m.group(1)), m.group(2), text[m.start():end]) for m, end in zip(marks, ends, strict=True)]


def probe(searcher: EngineSearcher, row: dict[str, Any], answer_docids: list[str],
          settings: dict[str, Any]) -> dict[str, Any]:
    """The three probes of one question: ``{probe: evidence or None}``."""
    answer = row["answer"]
    queries = [row["question"], *row["queries"][:settings["queries"]]]
    snippet = None
    question_hits: list[tuple[int, str, str]] = []
    for i, query in enumerate(queries):
        shown = execute("search", {"query": query, "k": settings["snippet_k"]}, searcher, DR256).text
        hits = shown_hits(shown)
        if i == 0:
            question_hits = hits
        found = next(((rank, docid) for rank, docid, block in hits if contains_answer(block, answer)), None)
        if found is not None and snippet is None:
            snippet = {"query": query, "rank": found[0], "docid": found[1]}
    early = None
    for rank, docid, _ in question_hits[:settings["open_top"]]:
        page = execute("open", {"docid": docid}, searcher, DR256).text
        if contains_answer(page, answer):
            early = {"rank": rank, "docid": docid}
            break
    single = next(({"rank": rank, "docid": docid} for rank, docid, _ in question_hits
                   if rank <= settings["single_rank"] and docid in answer_docids), None)
    return {"answer_in_snippet": snippet, "answer_in_early_open": early, "single_retrieval": single}


def _run(ctx: StageContext) -> None:
    s = dict(ctx.settings)
    pool = {r["qid"]: r for r in read_rows(Path(ctx.stage.inputs[0]))}
    answers = read_rows(Path(ctx.stage.inputs[1]))
    lines = []
    with Engine.open(s["database"], BlockList.from_file(ctx.stage.inputs[2]),
                     release_blocklist="ignore") as engine:  # the list under review, as given
        searcher = EngineSearcher(engine)
        for a in answers:
            row = pool[a["qid"]]
            evidence = probe(searcher, row, a["answer_docids"], s)
            flags = [p for p in PROBES if evidence[p] is not None]
            line = {"qid": a["qid"], "probes": evidence, "flags": flags, "removed": bool(flags)}
            lines.append(line)
            if flags:
                ctx.reject(a["qid"], line, flags[0], "flagged by " + ", ".join(flags))
    ctx.count_in(len(lines))
    ctx.count_out(sum(not line["removed"] for line in lines))
    ctx.write_jsonl("shortcuts.jsonl", lines)
    ctx.write_json("facts.json", {"questions": len(lines), "kept": sum(not line["removed"] for line in lines),
                                  "flagged_by_probe": {p: sum(p in line["flags"] for line in lines)
                                                       for p in PROBES}})


def blocked_answer_docs(answers: list[dict[str, Any]], blocklist: BlockList) -> list[tuple[str, str]]:
    """(docid, qid) of every independent answer document the blocklist blocks, sorted."""
    return sorted((d, r["qid"]) for r in answers for d in r["answer_docids"] if d in blocklist)


def refuse_blocked_answers(answers: list[dict[str, Any]], blocklist: BlockList, source: str | Path) -> None:
    """InvalidInputError (exit 2) naming the first blocked answer document and its question."""
    clashes = blocked_answer_docs(answers, blocklist)
    if clashes:
        d, q = clashes[0]
        more = f" (and {len(clashes) - 1} more)" if len(clashes) > 1 else ""
        raise InvalidInputError(f"{source}: blocks {d}, an independent answer document of {q}{more}; "
                                "an answer document is never blocked")


def audit_shortcuts(pool: str | Path, database: str | Path, blocked: str | Path,
                    **overrides: int) -> dict[str, Any]:
    """Write ``POOL/audit/shortcuts.jsonl``; returns the stage's record. ``overrides``
    replace :data:`SETTINGS` values (all recorded)."""
    root = Path(pool)
    unknown = sorted(set(overrides) - set(SETTINGS))
    if unknown:
        raise InvalidInputError(f"unknown audit setting {unknown[0]!r}")
    inputs = (stage_input(root, POOL_FILE), stage_input(root, ANSWERS_FILE), Path(blocked).resolve())
    blocklist = BlockList.from_file(blocked)
    refuse_blocked_answers(read_rows(inputs[1]), blocklist, blocked)
    with Engine.open(database, blocklist, release_blocklist="ignore") as engine:
        identity = engine.meta["content_identity"]
        engine.check_blocklist_complete()
    settings = {**SETTINGS, **overrides, "database": str(Path(database).resolve()),
                "corpus_identity": identity,
                "preset": DR256.name, "open_page_chars": DR256.open_page_chars,
                "max_tool_response_chars": DR256.max_tool_response_chars}
    return run_stage(pool, "audit", _run, inputs=inputs, outputs=("shortcuts.jsonl", "facts.json"),
                     settings=settings)


__all__ = ["PROBES", "SETTINGS", "audit_shortcuts", "blocked_answer_docs", "probe", "refuse_blocked_answers",
           "shown_hits"]
