"""The construction recipe's fixture, read from ``data/construct/`` (its README gives provenance).

- ``upstream.jsonl``: the upstream pool. The twelve sample questions (data/sample) as rows whose
  visited URLs are their answer documents plus two ordinary sample pages, their case,
  whitespace, ligature and thousands-separator variants (which must merge), one conflicting
  label, an invented question whose pages hold no answer, a URL no crawler can fetch, the
  sample's dataset-viewer dump among the visited URLs of a question it does not answer; and
  six invented multi-hop questions that need research.
- ``multihop.json``: those six questions with their *hop* page (named by the question, naming
  a person or ship but not the answer), *answer page* (about that person or ship, without the
  question's words) and three *distractor* pages (the questions' words, no answer).
- ``blocked_docids.txt``: the reviewer's blocklist (the dump page).
- ``reference_agent.json``: the offline reference agent's plan (``driver.py``).

Every URL is served by the loopback crawl site (``crawl_site.py``: the sample crawl's pages,
with the multi-hop pages added by :func:`crawl_server`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from drsearch.release.repo_data import SAMPLE_RELEASE

from .crawl_site import CrawlServer, Reply, _key

REPO = Path(__file__).resolve().parents[2]
# the paths the repository's manifest.json names as the sample release's inputs
UPSTREAM = REPO / str(SAMPLE_RELEASE["upstream"])
PAGES = REPO / str(SAMPLE_RELEASE["pages"])
BLOCKED = REPO / str(SAMPLE_RELEASE["blocked_docids"])
REFERENCE_AGENT = REPO / str(SAMPLE_RELEASE["reference_agent"])

DUMP_URL = "https://datasets.example.org/drsearch-sample/viewer/train?rows=0-7"
ARTIFACT_HOSTS = ("datasets.example.org", "paste.example.net", "answers.example.com")
INVENTED = "Which colour was the invented lighthouse of the drsearch construction fixture painted in 1899?"
BAD_URL = "ftp://files.invalid/question.txt"

_PAGES = json.loads(PAGES.read_text(encoding="utf-8"))
# (question, answer, hop [url, title, text], answer_page [url, title, text], query)
MULTIHOP: list[dict[str, Any]] = _PAGES["multihop"]
DISTRACTORS: list[list[str]] = _PAGES["distractors"]
_FILLER: str = _PAGES["filler"]
_PAGE = ("<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{paragraphs}"
         "</article></body></html>")


def _html(title: str, text: str) -> bytes:
    paragraphs = f"<p>{text}</p><p>{_FILLER}</p>"
    return _PAGE.format(title=title, paragraphs=paragraphs).encode()


def pages() -> dict[str, bytes]:
    """url -> HTML of every multi-hop fixture page (hops, answer pages, distractors)."""
    out = {}
    for q in MULTIHOP:
        for url, title, text in (q["hop"], q["answer_page"]):
            out[url] = _html(title, text)
    for url, title, text in DISTRACTORS:
        out[url] = _html(title, text)
    return out


def multihop_upstream_rows() -> list[dict[str, Any]]:
    """The six multi-hop questions as upstream rows: each visited its hop page, its answer page
    and the three distractors."""
    return [{"id": f"hop-{i}", "question": q["question"], "answer": q["answer"],
             "urls": [q["hop"][0], q["answer_page"][0], *(d[0] for d in DISTRACTORS)],
             "queries": [q["query"]], "difficulty": 3, "teacher_correct": False}
            for i, q in enumerate(MULTIHOP)]


def upstream_rows() -> list[dict[str, Any]]:
    """The rows of ``data/construct/upstream.jsonl``."""
    return [json.loads(line) for line in UPSTREAM.read_text(encoding="utf-8").splitlines()]


def multihop_qids() -> list[str]:
    from drsearch.release.construct import qid_of

    return [qid_of(q["question"]) for q in MULTIHOP]


def install(site: Any) -> None:
    """Serve the multi-hop pages from a crawl site (``crawl_site.Site``)."""
    for url, body in pages().items():
        site.routes[_key(url)] = Reply(body=body)


def crawl_server() -> CrawlServer:
    """The loopback crawl server with the multi-hop pages added."""
    server = CrawlServer()
    install(server.site)
    return server


def write_upstream(path: Path, rows: list[dict[str, Any]] | None = None) -> Path:
    """Write ``rows`` (default: the fixture's upstream pool) as JSONL to ``path``."""
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n"
                            for r in (rows if rows is not None else upstream_rows())), encoding="utf-8")
    return path
