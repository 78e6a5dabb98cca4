"""Ranking quality of drsearch's retrievers (bm25, dense, hybrid) on Cranfield and CISI.

The collections, documents, judgments and metrics (nDCG@10, MAP@100, Recall@100) are
``benchmarks/quality.py``'s. Each collection is built once as a drsearch index (porter
tokenizer) in ``--workdir``, embedded with ``drsearch.dense.embed_corpus`` (the pinned MiniLM
int8 model; the sidecar is kept there, so a rerun or an interrupted run resumes instead of
embedding again), and every query is run through ``open_retriever(path, None, kind)``:

``bm25``    the engine (exact BM25, k1 = 1.2, b = 0.75);
``dense``   exact inner product over the chunk vectors (int8 with row scales);
``hybrid``  reciprocal-rank fusion (k = 60) of the two, each at depth 100.

Usage::

    python benchmarks/retriever_quality.py [--collections cranfield cisi] [--workdir DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
if str(REPO / "src") not in sys.path:
    sys.path.append(str(REPO / "src"))

from quality import COLLECTIONS, DEPTH, METRICS, evaluate, load_collection  # noqa: E402

from drsearch.dense import Embedder, default_sidecar, embed_corpus, open_retriever  # noqa: E402
from drsearch.index import BuildSettings, Engine, build  # noqa: E402

KINDS = ("bm25", "dense", "hybrid")


def measure(name: str, workdir: Path, embedder: Embedder) -> dict[str, object]:
    coll = load_collection(name)
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
    for kind in KINDS:
        with open_retriever(path, None, kind, embedder=embedder) as r:  # type: ignore[attr-defined]
            run = {qid: [h.docid for h in r.search(q, DEPTH, with_text=False).hits]
                   for qid, q in coll.queries.items()}
        out[kind] = {m: round(v, 4) for m, v in evaluate(run, coll).items()}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    ap.add_argument("--collections", nargs="+", choices=COLLECTIONS, default=list(COLLECTIONS))
    ap.add_argument("--workdir", type=Path, default=REPO / "benchmarks" / ".cache" / "retrievers",
                    help="indexes and vectors kept here (default benchmarks/.cache/retrievers)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    embedder = Embedder()
    report = {name: measure(name, args.workdir, embedder) for name in args.collections}
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
        return 0
    print(f"{'collection':<10} {'retriever':<8} " + " ".join(f"{m:>10}" for m in METRICS))
    for name, got in report.items():
        for kind in KINDS:
            row = got[kind]
            assert isinstance(row, dict)
            print(f"{name:<10} {kind:<8} " + " ".join(f"{row[m]:>10.4f}" for m in METRICS))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
