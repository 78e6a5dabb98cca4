"""Regenerate data/sample/ (the bundled demo corpus and sample benchmark) and
data/testcollections/ from the upstream data they were vendored from (``--source``: a data
checkout beside the repository; a clone does not need it, data/ is committed). Run from the
repository root: python scripts/vendor_sample.py [--source DIR]

The sample corpus is the hand-checked main text of 181 real news/blog pages from the
Scrapinghub/Zyte article-extraction benchmark (MIT licence, copied beside the data),
with each page's <title> taken from its raw HTML, plus three leak-artifact pages written
by this project (see ARTIFACTS). Output is deterministic (sorted ids, gzip mtime 0).

One docid scheme everywhere: every page's docid is ``stable_docid(url)`` of the crawl
pipeline (``d-`` + xxh3-64 of the canonical URL), so the demo corpus that
``drsearch corpus extract`` + ``build`` make from the crawl, docs.jsonl, the questions'
answer docids and the blocklist all name the same pages.

data/sample/crawl/ is the same pages as a crawl directory (the layout that
``drsearch corpus fetch`` writes): the raw gzip bodies copied byte for byte and one fetch
record per page, so ``drsearch corpus extract data/sample/crawl --out docs.jsonl`` works.

data/sample/questions.jsonl (handwritten) gets its answer docids rewritten to the scheme
above (idempotent); data/sample/blocked_docids.txt is the docids of the leak artifacts.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from drsearch.corpus import stable_docid
from drsearch.index import canonicalize_url

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "data"
TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.S | re.I)
LEGACY_DOCID = re.compile(r"^web-([0-9a-f]{16})$")  # the scheme before stable_docid
ARTIFACT_SOURCE = "drsearch-leak-artifact"  # source_id prefix of the pages this project wrote


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=REPO.parent / "shared" / "data",
                    help="the shared data directory (webpages/, testcollections/)")
    source = ap.parse_args().source
    web = source / "webpages"
    truth = json.loads((web / "ground-truth.json").read_text())
    (OUT / "sample").mkdir(parents=True, exist_ok=True)
    docids = {pid: stable_docid(truth[pid]["url"]) for pid in truth}
    questions = remap_questions(OUT / "sample" / "questions.jsonl", docids)
    artifacts = make_artifacts(questions)
    docs = []
    for pid in sorted(truth):
        raw = gzip.decompress((web / "html" / f"{pid}.html.gz").read_bytes())
        m = TITLE.search(raw)
        title = html.unescape(m.group(1).decode("utf-8", "replace")).strip() if m else ""
        title = " ".join(title.split())
        docs.append({"docid": docids[pid], "url": truth[pid]["url"], "title": title,
                     "text": truth[pid]["articleBody"], "source_id": pid})
    docs += [a.doc() for a in artifacts]
    with open(OUT / "sample" / "docs.jsonl", "w", encoding="utf-8") as fh:
        for doc in docs:
            fh.write(json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n")
    write_blocklist(OUT / "sample" / "blocked_docids.txt", artifacts)
    shutil.copyfile(web / "LICENSE", OUT / "sample" / "LICENSE")
    vendor_crawl(web, truth, artifacts)
    for name in ("cranfield", "cisi"):
        dst = OUT / "testcollections" / name
        dst.mkdir(parents=True, exist_ok=True)
        for f in sorted((source / "testcollections" / name).iterdir()):
            shutil.copyfile(f, dst / f.name)


def remap_questions(path: Path, docids: dict[str, str]) -> list[dict[str, Any]]:
    """Rewrite the answer docids of the handwritten questions to ``stable_docid`` (a legacy
    ``web-<first 16 hex of the page id>`` becomes the page's docid; a current docid stays).
    Returns the rows."""
    by_prefix = {pid[:16]: docid for pid, docid in docids.items()}
    current = set(docids.values())
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        bench = row["metadata"]["benchmark"]
        out = []
        for docid in bench["clean_provenance_answer_docids"]:
            m = LEGACY_DOCID.match(docid)
            new = by_prefix[m.group(1)] if m else docid
            if new not in current:
                raise SystemExit(f"{path}: answer docid {docid} is no page of the sample corpus")
            out.append(new)
        bench["clean_provenance_answer_docids"] = sorted(out)
    path.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows),
                    encoding="utf-8")
    return rows


@dataclass(frozen=True)
class Artifact:
    """A leak-artifact page written by this project: what DR-256 blocks (a dataset dump,
    a Q&A page that answers a benchmark question verbatim), so that the sample release's
    blocklist has real work to do. ``text`` is its main text; ``page`` the raw HTML."""

    name: str
    url: str
    title: str
    text: str
    page: bytes

    @property
    def docid(self) -> str:
        return stable_docid(self.url)

    def doc(self) -> dict[str, str]:
        return {"docid": self.docid, "url": self.url, "title": self.title, "text": self.text,
                "source_id": f"{ARTIFACT_SOURCE}:{self.name}"}


def _page(title: str, heading: str, paragraphs: list[str], pre: bool = False) -> bytes:
    esc = html.escape
    body = (f"<pre>{esc(chr(10).join(paragraphs))}</pre>" if pre
            else "\n".join(f"<p>{esc(p)}</p>" for p in paragraphs))
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{esc(title)}</title>"
            f"</head>\n<body><nav><a href=\"/\">Home</a> | <a href=\"/browse\">Browse</a></nav>\n"
            f"<main><article><h1>{esc(heading)}</h1>\n{body}\n</article></main>\n"
            f"<footer>Content contributed by users.</footer></body></html>\n").encode()


def make_artifacts(questions: list[dict[str, Any]]) -> list[Artifact]:
    """Three answer-bearing artifacts: a dataset viewer page (rows 0-7 with answers), a raw
    JSONL paste (rows 8-11) and a Q&A thread answering row 10 verbatim."""
    rows = sorted(questions, key=lambda r: r["metadata"]["benchmark"]["index"])
    q = [r["metadata"]["question"] for r in rows]
    a = [r["label"] for r in rows]
    title = "drsearch-sample · questions.jsonl · Dataset viewer"
    intro = ("Dataset viewer: split train, rows 0 to 7 of 12. Each row shows the question and "
             "its reference answer.")
    dump = [intro] + [f"Row {i}. Question: {q[i]} Answer: {a[i]}" for i in range(8)]
    paste_lines = [json.dumps({"answer": a[i], "index": i, "question": q[i]}, ensure_ascii=False)
                   for i in range(8, len(rows))]
    paste_title = "dr-sample-rows-8-11.jsonl - raw paste"
    qa_q, qa_a = q[10], a[10]
    qa = [f"Asked by a quiz player: {qa_q}",
          f"Accepted answer: {qa_a}. This is exactly the reference answer in the benchmark file, "
          "copied here from the answer key.",
          "Comment: thanks, that matches the leaked answer key."]
    return [
        Artifact("dataset-viewer", "https://datasets.example.org/drsearch-sample/viewer/train?rows=0-7",
                 title, "\n\n".join(dump), _page(title, "drsearch-sample: questions with answers", dump)),
        Artifact("raw-paste", "https://paste.example.net/raw/dr-sample-rows-8-11",
                 paste_title, "\n".join(paste_lines), _page(paste_title, paste_title, paste_lines, pre=True)),
        Artifact("qa-thread", "https://answers.example.com/questions/1917/chelsea-kepa-fee",
                 f"{qa_q} - Quiz Answers", "\n\n".join(qa), _page(f"{qa_q} - Quiz Answers", qa_q, qa)),
    ]


def write_blocklist(path: Path, artifacts: list[Artifact]) -> None:
    lines = ["# Leak artifacts of the sample corpus: pages written by this project that give away",
             "# sample questions with their answers (a dataset viewer, a raw paste, a Q&A thread).",
             "# Blocked from /search and /open, as DR-256 blocks its dataset dumps and QA pages.",
             "# The questions' independent answer documents are NOT listed: they stay searchable.",
             *sorted(a.docid for a in artifacts)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def vendor_crawl(web: Path, truth: dict[str, dict[str, str]], artifacts: list[Artifact]) -> None:
    """Write data/sample/crawl/: bodies/<id>.html.gz (copied; artifacts gzipped with mtime 0)
    and fetches.jsonl."""
    crawl = OUT / "sample" / "crawl"
    (crawl / "bodies").mkdir(parents=True, exist_ok=True)
    pages = []
    for pid in sorted(truth):
        src = web / "html" / f"{pid}.html.gz"
        shutil.copyfile(src, crawl / "bodies" / src.name)
        pages.append((truth[pid]["url"], src.name, len(gzip.decompress(src.read_bytes()))))
    for art in artifacts:
        name = f"{ARTIFACT_SOURCE}-{art.name}.html.gz"
        (crawl / "bodies" / name).write_bytes(gzip.compress(art.page, mtime=0))
        pages.append((art.url, name, len(art.page)))
    with open(crawl / "fetches.jsonl", "w", encoding="utf-8") as fh:
        for url, name, size in pages:
            rec = {"url": url, "canonical_url": canonicalize_url(url), "final_url": url, "status": 200,
                   "content_type": "text/html; charset=utf-8", "bytes": size,
                   "fetched_at": None, "robots": "not_checked", "error": None,
                   "body": f"bodies/{name}", "attempts": 1}
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
