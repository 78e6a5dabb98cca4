"""Ranking quality of drsearch's retrievers (bm25, dense, hybrid) on Cranfield, CISI and the sample.

The collections, documents, judgments and metrics (nDCG@10, MAP@100, Recall@100) of Cranfield
and CISI are ``benchmarks/quality.py``'s. ``sample`` is the web-like set: the bundled sample
corpus (``data/sample/docs.jsonl``, built as ``drsearch build`` builds it: 800-word chunks)
with its blocklist applied (``data/sample/blocked_docids.txt``, as it is served), and its
questions (``data/sample/questions.jsonl``); a question's relevant documents are its answer
documents (``metadata.benchmark.clean_provenance_answer_docids``), and it is scored by
answer-document recall@1, @3, @10 and @100 (the share of its answer documents in the top k,
averaged over the questions) and the mean reciprocal rank of the first answer document.

Each collection is built once as a drsearch index (porter tokenizer) in ``--workdir``,
embedded with ``drsearch.dense.embed_corpus`` (the pinned MiniLM int8 model; the sidecar is
kept there, so a rerun or an interrupted run resumes instead of embedding again), and every
query is run through ``open_retriever(path, blocklist, kind)``:

``bm25``              the engine (exact BM25, k1 = 1.2, b = 0.75);
``dense``             exact inner product over the chunk vectors (int8 with row scales);
``hybrid:rrf``        reciprocal-rank fusion (k = 60) of the two, each at depth 100;
``hybrid:linear=W``   ``W · dense + (1 − W) · bm25`` of their min-max normalised scores, each
                      list at depth 100 (``--weights``, default 0.3 0.5 0.7).

Usage::

    python benchmarks/retriever_quality.py [--collections cranfield cisi sample] [--weights W ...]
                                           [--workdir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
if str(REPO / "src") not in sys.path:
    sys.path.append(str(REPO / "src"))

from quality import DEPTH, METRICS, Collection, evaluate, load_collection, recall  # noqa: E402

from drsearch.dense import Embedder, default_sidecar, embed_corpus, open_retriever  # noqa: E402
from drsearch.index import BlockList, BuildSettings, Engine, build  # noqa: E402

COLLECTIONS = ("cranfield", "cisi", "sample")
SAMPLE_DIR = REPO / "data" / "sample"
SAMPLE_METRICS = ("recall@1", "recall@3", "recall@10", "recall@100", "mrr")
DEFAULT_WEIGHTS = (0.3, 0.5, 0.7)


def load_sample(data_dir: Path = SAMPLE_DIR) -> Collection:
    """The sample corpus and its questions; gain 1 for each answer document."""
    docs = [json.loads(line) for line in (data_dir / "docs.jsonl").read_text("utf-8").splitlines() if line]
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for line in (data_dir / "questions.jsonl").read_text("utf-8").splitlines():
        if not line.strip():
            continue
        meta = json.loads(line)["metadata"]
        answers = meta["benchmark"]["clean_provenance_answer_docids"]
        if answers:
            queries[meta["qid"]] = meta["question"]
            qrels[meta["qid"]] = {d: 1 for d in answers}
    return Collection("sample", docs, queries, qrels)


def evaluate_sample(run: Mapping[str, Sequence[str]], coll: Collection) -> dict[str, float]:
    """Mean answer-document recall@1, @3, @10 and @100 over the questions, and the mean
    reciprocal rank of the first answer document (0 beyond the top 100)."""
    out: dict[str, float] = {}
    rankings = {q: list(dict.fromkeys(run.get(q, []))) for q in coll.queries}
    n = max(len(rankings), 1)
    for depth in (1, 3, 10, 100):
        out[f"recall@{depth}"] = sum(recall(r, coll.relevant(q), depth) for q, r in rankings.items()) / n
    out["mrr"] = sum(next((1 / i for i, d in enumerate(r[:DEPTH], 1) if d in coll.relevant(q)), 0.0)
                     for q, r in rankings.items()) / n
    return out


def kinds(weights: Sequence[float]) -> list[str]:
    return ["bm25", "dense", "hybrid:rrf", *(f"hybrid:linear={w:g}" for w in weights)]


def measure(name: str, workdir: Path, embedder: Embedder, weights: Sequence[float]) -> dict[str, object]:
    coll = load_sample() if name == "sample" else load_collection(name)
    blocklist = BlockList.from_file(SAMPLE_DIR / "blocked_docids.txt") if name == "sample" else None
    path = workdir / f"{name}-porter.sqlite3"
    if not path.exists():
        build(coll.docs, path, BuildSettings(tokenizer="porter"))
    started = time.perf_counter()
    with Engine.open(path) as engine:
        report = embed_corpus(engine, default_sidecar(path), embedder)
    embed_s = time.perf_counter() - started
    out: dict[str, object] = {"documents": len(coll.docs), "queries": len(coll.queries),
                              "chunks": report.rows, "embedded_now": report.embedded,
                              "embed_seconds": round(embed_s, 1)}
    for kind in kinds(weights):
        with open_retriever(path, blocklist, kind, embedder=embedder) as r:  # type: ignore[attr-defined]
            run = {qid: [h.docid for h in r.search(q, DEPTH, with_text=False).hits]
                   for qid, q in coll.queries.items()}
        got = evaluate_sample(run, coll) if name == "sample" else evaluate(run, coll)
        out[kind] = {m: round(v, 4) for m, v in got.items()}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--collections", nargs="+", choices=COLLECTIONS, default=list(COLLECTIONS))
    ap.add_argument("--weights", nargs="*", type=float, default=list(DEFAULT_WEIGHTS),
                    help="the W of each hybrid:linear=W run (default 0.3 0.5 0.7)")
    ap.add_argument("--workdir", type=Path, default=REPO / "benchmarks" / ".cache" / "retrievers",
                    help="indexes and vectors kept here (default benchmarks/.cache/retrievers)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    embedder = Embedder()
    report = {name: measure(name, args.workdir, embedder, args.weights) for name in args.collections}
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
        return 0
    for name, got in report.items():
        metrics = SAMPLE_METRICS if name == "sample" else METRICS
        print(f"{'collection':<10} {'retriever':<18} " + " ".join(f"{m:>10}" for m in metrics))
        for kind in kinds(args.weights):
            row = got[kind]
            assert isinstance(row, dict)
            print(f"{name:<10} {kind:<18} " + " ".join(f"{row[m]:>10.4f}" for m in metrics))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
