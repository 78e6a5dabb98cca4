"""Extraction quality and throughput on the 181 pages with ground truth.

Reproduces the scoring of the public article-extraction benchmark (Scrapinghub/Zyte),
from the benchmark's own description of its metric: each text is split into word tokens
(maximal runs of ``\\w``), tokens are joined into 4-word shingles, and the extracted and
expected shingles are compared as multisets (true positives = the multiset
intersection). Per page: precision = tp/(tp+fp), recall = tp/(tp+fn); a page with nothing
expected and nothing extracted scores 1.0 for both, a side with no shingles scores 0.0.
Precision and recall are averaged over pages and F1 = 2PR/(P+R) of the averages.

Two systems are scored in the same run on the vendored sample crawl (data/sample/crawl,
ground truth = data/sample/docs.jsonl, the hand-checked ``articleBody`` of each page):

``drsearch``  the corpus pipeline's extraction (``drsearch.corpus.extract_records``:
              trafilatura, selectolax fallback), run in ``--workers`` processes; its
              throughput (pages/s, wall clock, bodies read from disk) is printed too.
``baseline``  whole-page visible text (selectolax: body text without scripts/styles).

Usage: ``.venv/bin/python benchmarks/extract_quality.py [--workers 2] [--min-f1 0.958]``
(exits 1 when drsearch's F1 is below ``--min-f1``). Results: docs/EXTRACTION.md.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from drsearch.corpus.crawl import read_body, read_records
from drsearch.corpus.extract import ExtractSettings, decode_body
from drsearch.corpus.extract_run import extract_records

REPO = Path(__file__).resolve().parents[1]
CRAWL = REPO / "data" / "sample" / "crawl"
TRUTH = REPO / "data" / "sample" / "docs.jsonl"
PUBLISHED = {"trafilatura 2.0.0": 0.958, "whole-page text": 0.665}
_TOKEN = re.compile(r"\w+")
SHINGLE = 4


def shingles(text: str, n: int = SHINGLE) -> Counter[str]:
    """The multiset of n-word shingles of ``text`` (a text shorter than n is one shingle)."""
    tokens = _TOKEN.findall(text or "")
    return Counter(" ".join(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens)


def page_scores(expected: str, extracted: str) -> tuple[float, float]:
    """(precision, recall) of one page by shingle-multiset matching."""
    want, got = shingles(expected), shingles(extracted)
    tp = sum((want & got).values())
    fp, fn = sum(got.values()) - tp, sum(want.values()) - tp
    if not want and not got:
        return 1.0, 1.0
    return (tp / (tp + fp) if tp + fp else 0.0), (tp / (tp + fn) if tp + fn else 0.0)


def corpus_scores(pairs: Iterable[tuple[str, str]]) -> dict[str, float]:
    """Averaged precision and recall over pages, and F1 of the averages."""
    scores = [page_scores(e, x) for e, x in pairs]
    p = sum(s[0] for s in scores) / len(scores)
    r = sum(s[1] for s in scores) / len(scores)
    return {"pages": len(scores), "precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def ground_truth(path: Path = TRUTH) -> dict[str, str]:
    """URL → expected main text of the 181 benchmark pages (the leak-artifact pages this
    project wrote for the sample benchmark are not extraction ground truth)."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        doc = json.loads(line)
        if not doc["source_id"].startswith("drsearch-leak-artifact:"):
            out[doc["url"]] = doc["text"]
    return out


def whole_page_text(html: str) -> str:
    """The baseline: every visible text node of the body."""
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    for node in tree.css("script, style, noscript, template"):
        node.decompose()
    root = tree.body or tree.root
    return root.text(separator=" ") if root is not None else ""


def run(workers: int, settings: ExtractSettings | None = None) -> dict[str, dict[str, float]]:
    """Score the pipeline and the baseline on the sample crawl; returns both results."""
    truth = ground_truth()
    records = sorted((r for r in read_records(CRAWL).records if r.url in truth),  # not the leak artifacts
                     key=lambda r: r.canonical_url)
    settings = replace(settings or ExtractSettings(), workers=workers)
    t0 = time.perf_counter()
    pages = list(extract_records(CRAWL, records, settings))
    wall = time.perf_counter() - t0
    ours = corpus_scores((truth[p.url], p.text) for p in pages)
    ours.update(seconds=wall, pages_per_s=len(pages) / wall, workers=workers,
                fallbacks=sum(p.extractor != "trafilatura" for p in pages))
    base = corpus_scores((truth[r.url], whole_page_text(decode_body(read_body(CRAWL, r), r.content_type)))
                         for r in records)
    return {"drsearch": ours, "baseline": base}


def _print(results: Mapping[str, Mapping[str, float]]) -> None:
    print(f"{'system':<10} {'pages':>5} {'precision':>9} {'recall':>7} {'F1':>7}")
    for name, r in results.items():
        print(f"{name:<10} {r['pages']:>5} {r['precision']:>9.4f} {r['recall']:>7.4f} {r['f1']:>7.4f}")
    ours = results["drsearch"]
    print(f"throughput: {ours['pages_per_s']:.1f} pages/s ({ours['pages']} pages in {ours['seconds']:.2f} s, "
          f"{ours['workers']} worker process(es)); selectolax fallbacks: {ours['fallbacks']}")
    print("published: " + ", ".join(f"{k} F1 {v}" for k, v in PUBLISHED.items()))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2, help="extraction processes (default 2)")
    ap.add_argument("--min-f1", type=float, default=0.958, help="fail below this F1 (default 0.958)")
    ap.add_argument("--no-favor-precision", action="store_true", help="trafilatura's balanced mode")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    args = ap.parse_args()
    settings = ExtractSettings(favor_precision=not args.no_favor_precision)
    results = run(args.workers, settings)
    if args.json:
        print(json.dumps(results, indent=2, sort_keys=True))
    else:
        _print(results)
    if results["drsearch"]["f1"] < args.min_f1:
        print(f"FAIL: F1 {results['drsearch']['f1']:.4f} < {args.min_f1}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
