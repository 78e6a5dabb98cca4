"""Regenerate data/sample/ (the bundled demo corpus) and data/testcollections/ from the
upstream data they were vendored from (``SHARED`` below: a data checkout beside the
repository; a clone does not need it, data/ is committed). Run from the repository root:
python scripts/vendor_sample.py

The sample corpus is the hand-checked main text of 181 real news/blog pages from the
Scrapinghub/Zyte article-extraction benchmark (MIT licence, copied beside the data),
with each page's <title> taken from its raw HTML. Output is deterministic (sorted ids).

data/sample/crawl/ is the same 181 pages as a crawl directory (the layout that
``drsearch corpus fetch`` writes): the raw gzip bodies copied byte for byte and one fetch
record per page, so ``drsearch corpus extract data/sample/crawl --out docs.jsonl`` works.
"""

from __future__ import annotations

import gzip
import html
import json
import re
import shutil
from pathlib import Path

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
OUT = Path(__file__).resolve().parents[1] / "data"
TITLE = re.compile(rb"<title[^>]*>(.*?)</title>", re.S | re.I)


def main() -> None:
    web = SHARED / "webpages"
    truth = json.loads((web / "ground-truth.json").read_text())
    (OUT / "sample").mkdir(parents=True, exist_ok=True)
    with open(OUT / "sample" / "docs.jsonl", "w", encoding="utf-8") as fh:
        for pid in sorted(truth):
            raw = gzip.decompress((web / "html" / f"{pid}.html.gz").read_bytes())
            m = TITLE.search(raw)
            title = html.unescape(m.group(1).decode("utf-8", "replace")).strip() if m else ""
            title = " ".join(title.split())
            doc = {"docid": f"web-{pid[:16]}", "url": truth[pid]["url"], "title": title,
                   "text": truth[pid]["articleBody"], "source_id": pid}
            fh.write(json.dumps(doc, ensure_ascii=False, sort_keys=True) + "\n")
    shutil.copyfile(web / "LICENSE", OUT / "sample" / "LICENSE")
    vendor_crawl(web, truth)
    for name in ("cranfield", "cisi"):
        dst = OUT / "testcollections" / name
        dst.mkdir(parents=True, exist_ok=True)
        for f in sorted((SHARED / "testcollections" / name).iterdir()):
            shutil.copyfile(f, dst / f.name)


def vendor_crawl(web: Path, truth: dict[str, dict[str, str]]) -> None:
    """Write data/sample/crawl/: bodies/<id>.html.gz (copied) and fetches.jsonl."""
    from drsearch.index import canonicalize_url

    crawl = OUT / "sample" / "crawl"
    (crawl / "bodies").mkdir(parents=True, exist_ok=True)
    with open(crawl / "fetches.jsonl", "w", encoding="utf-8") as fh:
        for pid in sorted(truth):
            src = web / "html" / f"{pid}.html.gz"
            shutil.copyfile(src, crawl / "bodies" / src.name)
            url = truth[pid]["url"]
            rec = {"url": url, "canonical_url": canonicalize_url(url), "final_url": url, "status": 200,
                   "content_type": "text/html; charset=utf-8",
                   "bytes": len(gzip.decompress(src.read_bytes())),
                   "fetched_at": None, "robots": "not_checked", "error": None,
                   "body": f"bodies/{src.name}", "attempts": 1}
            fh.write(json.dumps(rec, ensure_ascii=False, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
