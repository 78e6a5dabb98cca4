"""``construct urls``: the pool's visited URLs → the crawl's URL list and each question's URLs.

``urls.txt`` holds every usable URL of the pool once per canonical form
(:func:`~drsearch.index.canonicalize_url`, the form the corpus looks URLs up by), in
canonical order. The line is a spelling an agent actually visited (the smallest one, so
row order does not matter), not the canonical form itself: canonicalisation sorts query
parameters and drops trailing slashes and tracking parameters, which a server need not
answer the same way; the crawl records the canonical form of each fetch anyway.
``url_map.jsonl`` gives each qid its canonical URLs (sorted). A URL the crawler could not
fetch (not absolute http(s), no host, whitespace: the corpus URL list's own rule) is left
out with reason ``invalid_url``. ``drsearch corpus build --urls urls.txt`` then crawls them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...benchmark.generate import StageContext
from ...contract.atomic import write_bytes_atomic
from ...corpus.urllist import url_problem
from ...index import canonicalize_url
from .work import POOL_FILE, read_rows, run_stage, stage_input

INVALID_URL = "invalid_url"


def _run(ctx: StageContext) -> None:
    pool = read_rows(Path(ctx.stage.inputs[0]))
    spelling: dict[str, str] = {}  # canonical -> smallest visited spelling
    lines = []
    given = 0
    for row in pool:
        canonical: set[str] = set()
        for url in row["urls"]:
            given += 1
            problem = url_problem(url)
            if problem is not None:
                ctx.reject(f"{row['qid']} {url}", {"qid": row["qid"], "url": url}, INVALID_URL, problem)
                continue
            key = canonicalize_url(url)
            canonical.add(key)
            spelling[key] = min(url, spelling.get(key, url))
        lines.append({"qid": row["qid"], "urls": sorted(canonical)})
    ctx.count_in(given)
    ctx.count_out(given - len(ctx.rejections))
    ctx.write_jsonl("url_map.jsonl", lines)
    urls = [spelling[key] for key in sorted(spelling)]
    write_bytes_atomic(ctx.path("urls.txt"), "".join(f"{u}\n" for u in urls).encode("utf-8"))
    ctx.write_json("facts.json", {"questions": len(pool), "urls_given": given,
                                  "invalid_urls": len(ctx.rejections), "distinct_urls": len(urls),
                                  "questions_without_urls": sum(not line["urls"] for line in lines)})


def collect_urls(pool: str | Path) -> dict[str, Any]:
    """Write ``POOL/urls/urls.txt`` and ``url_map.jsonl`` from ``POOL/consolidate/pool.jsonl``;
    returns the stage's record. InvalidInputError (exit 2) when the pool is missing."""
    source = stage_input(Path(pool), POOL_FILE)
    return run_stage(pool, "urls", _run, inputs=(source,),
                     outputs=("urls.txt", "url_map.jsonl", "facts.json"),
                     settings={"canonicalisation": "drsearch.index.canonicalize_url",
                               "spelling": "smallest visited"})


__all__ = ["INVALID_URL", "collect_urls"]
