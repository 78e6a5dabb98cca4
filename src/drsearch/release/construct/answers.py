"""``construct answers``: each question's independent answer documents in the crawled corpus.

A question's provenance documents are the corpus documents at its canonical URLs
(``POOL/urls/url_map.jsonl``; a URL the crawl did not turn into a document is counted, not
an error). Its independent answer documents are those whose text contains its answer as
:func:`~drsearch.benchmark.leak_audit.contains_answer` finds it (case folded, whitespace
collapsed, thousands separators ignored, whole tokens: ``30`` is not in ``300``), or finds
it once the space between a number and the word after it is dropped on both sides
(``£71.6 million`` in "paid the £71.6million fee": :func:`answer_in_text`). A question
with none is removed with reason ``no_independent_answer_doc``. The answer documents become
the release rows' ``clean_provenance_answer_docids``: never blocked, never shown to an agent.

The corpus is named in the stage's settings by its content identity (not hashed as a file:
a DR-256-sized corpus is gigabytes), so a rebuilt corpus with other content reruns the stage.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ...benchmark.generate import Keep, Outcome, Reject, StageContext
from ...benchmark.leak_audit import NORMALISATION, contains_answer
from ...contract import DocumentNotFoundError
from ...index import Engine
from .work import POOL_FILE, URL_MAP_FILE, read_rows, run_stage, stage_input

NO_ANSWER_DOC = "no_independent_answer_doc"
MATCH = NORMALISATION + "; or with the space between a digit and a letter dropped on both sides"
_NUMBER_SPACE = re.compile(r"(?<=\d)\s+(?=[^\W\d_])")


def answer_in_text(text: str, answer: str) -> bool:
    """Whether ``text`` holds ``answer`` (see the module doc: the leak audit's whole-token
    match, then the same with number-word spacing ignored)."""
    if contains_answer(text, answer):
        return True
    return contains_answer(_NUMBER_SPACE.sub("", text), _NUMBER_SPACE.sub("", answer))


def _run(ctx: StageContext) -> None:
    pool = read_rows(Path(ctx.stage.inputs[0]))
    url_map = {line["qid"]: line["urls"] for line in read_rows(Path(ctx.stage.inputs[1]))}
    unfetched: dict[str, int] = {}
    with Engine.open(ctx.settings["database"], release_blocklist="ignore") as engine:

        def find(row: dict[str, Any]) -> Outcome:
            provenance: list[str] = []
            answers: list[str] = []
            missing = 0
            for url in url_map.get(row["qid"], []):
                try:
                    doc = engine.open_document(url=url)
                except DocumentNotFoundError:
                    missing += 1
                    continue
                provenance.append(doc.docid)
                if answer_in_text(doc.text, row["answer"]):
                    answers.append(doc.docid)
            unfetched[row["qid"]] = missing
            if not answers:
                return Reject(NO_ANSWER_DOC, f"none of its {len(provenance)} provenance documents "
                              f"({missing} URLs not in the corpus) contains the answer {row['answer']!r}")
            return Keep({"qid": row["qid"], "answer_docids": sorted(set(answers)),
                         "provenance_docids": sorted(set(provenance)), "urls_not_in_corpus": missing})

        kept = ctx.map(pool, key=lambda r: r["qid"], process=find)
    ctx.write_jsonl("answers.jsonl", kept)
    ctx.write_json("facts.json", {"questions": len(pool), "with_answer_doc": len(kept),
                                  "answer_docids": len({d for r in kept for d in r["answer_docids"]}),
                                  "provenance_urls": sum(len(v) for v in url_map.values()),
                                  "provenance_urls_not_in_corpus": sum(unfetched.values())})


def find_answers(pool: str | Path, database: str | Path) -> dict[str, Any]:
    """Write ``POOL/answers/answers.jsonl`` (one line per question kept: ``answer_docids``,
    ``provenance_docids``, ``urls_not_in_corpus``); returns the stage's record.
    InvalidInputError (exit 2) when an earlier stage's output is missing; the corpus errors
    of :meth:`Engine.open` (exit 2) for a database that is not one."""
    root = Path(pool)
    inputs = (stage_input(root, POOL_FILE), stage_input(root, URL_MAP_FILE))
    with Engine.open(database, release_blocklist="ignore") as engine:
        identity = engine.meta["content_identity"]
    return run_stage(pool, "answers", _run, inputs=inputs, outputs=("answers.jsonl", "facts.json"),
                     settings={"database": str(Path(database).resolve()), "corpus_identity": identity,
                               "match": MATCH})


__all__ = ["MATCH", "NO_ANSWER_DOC", "answer_in_text", "find_answers"]
