"""The set-level filter before export: **diversity** (DrBencher's diversity filter, the
toolkit's :func:`~drsearch.benchmark.generate.diversity.diversify` over the int8
all-MiniLM-L6-v2 embeddings of the question texts).

Edges join questions with δ = 1 − cos < ``min_distance`` (0.30); the most-connected question
is removed first until no edge is left. Each removed question is rejected with check
``diversity`` and a reason naming its closest surviving-or-removed neighbour; the stage
records the embedding model (its SHA-256) and the removal order in ``diversity.json``.
"""

from __future__ import annotations

from typing import Any

from ..diversity import dissimilarity_matrix, diversify
from ..embed import Embedder
from ..stages import StageContext


def diversity(ctx: StageContext) -> None:
    items = ctx.read_jsonl("validated.jsonl")
    tau = float(ctx.settings["min_distance"])
    ids = [c["cid"] for c in items]
    ctx.count_in(len(items))
    report: dict[str, Any] = {"embedding": None, "min_distance": tau, "removed": [], "survivors": ids}
    kept = items
    if items:
        embedder = Embedder()
        vectors = embedder.embed([c["question"] for c in items])
        result = diversify(ids, vectors, tau_d=tau)
        delta = dissimilarity_matrix(vectors)
        index = {cid: i for i, cid in enumerate(ids)}
        removed = set(result.removed)
        for cid in result.removed:  # in removal order
            i = index[cid]
            j = min((k for k in range(len(ids)) if k != i), key=lambda k: (float(delta[i, k]), ids[k]))
            ctx.reject(cid, {"cid": cid, "question": items[i]["question"]}, "diversity",
                       f"δ = {float(delta[i, j]):.4f} < {tau:g} to {ids[j]}")
        kept = [c for c in items if c["cid"] not in removed]
        report = {"embedding": embedder.describe(), **result.as_dict(), "min_distance": tau}
    ctx.count_out(len(kept))
    ctx.write_jsonl("diverse.jsonl", kept)
    ctx.write_json("diversity.json", report)


__all__ = ["diversity"]
