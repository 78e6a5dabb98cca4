"""The upstream fixture of the construction tests: the sample questions as an upstream pool.

Each sample question becomes an upstream row whose visited URLs are its answer documents'
URLs plus two ordinary sample pages (distractors), then repeated as case, whitespace and
ligature variants (and one answer spelt with a thousands separator removed) that must merge,
once with a different answer (the conflict), plus an invented question whose URLs hold no
answer, one URL no crawler can fetch, and the sample's dataset-viewer dump page among the
visited URLs of a question the dump does not answer; and six invented multi-hop questions
that need research (tests/release/construct_pages.py). The URLs are served by the loopback
crawl server (tests/corpus/crawlserver.py), which holds every sample page, with the
multi-hop pages added (:func:`crawl_server`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from drsearch.release.dr256 import load_questions

from ..corpus.crawlserver import CrawlServer
from ..helpers import DATA
from . import construct_pages

DUMP_URL = "https://datasets.example.org/drsearch-sample/viewer/train?rows=0-7"
ARTIFACT_HOSTS = ("datasets.example.org", "paste.example.net", "answers.example.com")
INVENTED = "Which colour was the invented lighthouse of the drsearch construction fixture painted in 1899?"
BAD_URL = "ftp://files.invalid/question.txt"


def sample_rows() -> list[Any]:
    return load_questions(DATA / "sample" / "questions.jsonl").rows


def sample_urls() -> dict[str, str]:
    """docid -> url of the sample corpus."""
    return {d["docid"]: d["url"] for d in map(json.loads, (DATA / "sample" / "docs.jsonl").read_text().splitlines())}


def upstream_rows() -> list[dict[str, Any]]:
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
        *construct_pages.upstream_rows(),
    ]
    return out


def multihop_qids() -> list[str]:
    from drsearch.release.construct import qid_of

    return [qid_of(q["question"]) for q in construct_pages.MULTIHOP]


def crawl_server() -> CrawlServer:
    """The loopback crawl server with the multi-hop pages added."""
    server = CrawlServer()
    construct_pages.install(server.site)
    return server


def write_upstream(path: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (rows or upstream_rows())),
                    encoding="utf-8")
    return path
