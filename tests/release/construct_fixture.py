"""The construction fixture (``data/construct/``, read by ``scripts/offline_recipe/fixture.py``),
re-exported for the tests, and :func:`derived_upstream_rows`: how ``upstream.jsonl`` was made
from the sample questions (tests/release/test_construct.py pins the shipped file to it).

Each sample question becomes an upstream row whose visited URLs are its answer documents'
URLs plus two ordinary sample pages (distractors), then repeated as case, whitespace and
ligature variants (and one answer spelt with a thousands separator removed) that must merge,
once with a different answer (the conflict), plus an invented question whose URLs hold no
answer, one URL no crawler can fetch, and the sample's dataset-viewer dump page among the
visited URLs of a question the dump does not answer; and the six invented multi-hop
questions that need research (``data/construct/multihop.json``).
"""

from __future__ import annotations

import json
from typing import Any

from offline_recipe.fixture import (
    ARTIFACT_HOSTS,
    BAD_URL,
    DUMP_URL,
    INVENTED,
    crawl_server,
    multihop_qids,
    multihop_upstream_rows,
    upstream_rows,
    write_upstream,
)

from drsearch.release.dr256 import load_questions

from ..helpers import DATA

__all__ = ["ARTIFACT_HOSTS", "BAD_URL", "DUMP_URL", "INVENTED", "crawl_server", "derived_upstream_rows",
           "multihop_qids", "sample_rows", "sample_urls", "upstream_rows", "write_upstream"]


def sample_rows() -> list[Any]:
    return load_questions(DATA / "sample" / "questions.jsonl").rows


def sample_urls() -> dict[str, str]:
    """docid -> url of the sample corpus."""
    return {d["docid"]: d["url"] for d in map(json.loads, (DATA / "sample" / "docs.jsonl").read_text().splitlines())}


def derived_upstream_rows() -> list[dict[str, Any]]:
    rows = sample_rows()
    urls = sample_urls()
    answer_docids = {d for r in rows for d in r.metadata.benchmark.clean_provenance_answer_docids}
    plain = sorted(u for d, u in urls.items() if d not in answer_docids and not any(h in u for h in ARTIFACT_HOSTS))
    out: list[dict[str, Any]] = []
    for i, r in enumerate(sorted(rows, key=lambda r: r.metadata.benchmark.index)):
        m = r.metadata
        visited = [urls[d] for d in m.benchmark.clean_provenance_answer_docids] + plain[2 * i:2 * i + 2]
        if i == 9:  # a search that wandered onto the dump page, which does not answer this question
            visited.append(DUMP_URL)
        if i == 4:
            visited.append(BAD_URL)
        out.append({"id": f"row-{i}", "question": m.question, "answer": r.label, "urls": visited,
                    "queries": [" ".join(m.question.split()[:6])], "difficulty": m.difficulty,
                    "teacher_correct": i % 2 == 0})
    q = {row["id"]: row for row in out}
    out += [
        {**q["row-0"], "id": "var-case", "question": "  " + q["row-0"]["question"].upper().replace(" ", "  "),
         "urls": [plain[40]], "queries": ["emirates 787-9 order"]},
        {**q["row-0"], "id": "var-ligature", "question": q["row-0"]["question"].replace("fi", "\ufb01"),
         "urls": []},
        {**q["row-1"], "id": "var-whitespace", "question": q["row-1"]["question"].replace(" ", "\t", 3) + " \n"},
        {**q["row-6"], "id": "var-separator", "answer": "30154"},
        {**q["row-3"], "id": "var-conflict", "answer": "Martin Tyler"},
        {"id": "row-invented", "question": INVENTED, "answer": "ultramarine", "urls": plain[30:32],
         "queries": ["invented lighthouse"]},
        *multihop_upstream_rows(),
    ]
    return out
