"""The ``dedup`` stage: the toolkit's near-duplicate filter over the refined questions.

Items are walked track by track in the configured track order, in file order within a
track; an item whose cosine (MiniLM embeddings of its self-contained text, rounded as
:mod:`..similarity` says) with an already-kept item is >= τ (0.90) is dropped as
``near_duplicate`` naming the kept item. Which source an item came from plays no part: two
sources raising the same question collapse, and distinct questions of one source both stay.
``dedup.json`` records every decision, the pairs near τ to review, and the embedding model.
"""

from __future__ import annotations

from typing import Any

from ..dedup import DedupResult, dedup
from ..stages import StageContext


def walk_order(items: list[dict[str, Any]], tracks: list[str]) -> list[int]:
    """Positions of ``items`` by track (in ``tracks`` order), file order within a track."""
    rank = {t: i for i, t in enumerate(tracks)}
    return sorted(range(len(items)), key=lambda i: rank[items[i]["track"]])  # sorted() is stable


def dedup_items(items: list[dict[str, Any]], vectors: Any, tracks: list[str],
                tau: float) -> tuple[list[dict[str, Any]], DedupResult]:
    """The kept items (walk order) and the decisions; ``vectors[i]`` embeds ``items[i]``."""
    walked = walk_order(items, tracks)
    result = dedup([items[i]["task_id"] for i in walked], [vectors[i] for i in walked], tau=tau)
    kept = set(result.kept)
    return [items[i] for i in walked if items[i]["task_id"] in kept], result


def dedup_stage(ctx: StageContext) -> None:
    from ..embed import Embedder

    items = ctx.read_jsonl("refined.jsonl")
    tau = float(ctx.settings["tau"])
    embedder = Embedder(ctx.settings["embedding_model"])
    vectors: Any = embedder.embed([item["question"] for item in items]) if items else []
    kept, result = dedup_items(items, vectors, list(ctx.settings["tracks"]), tau)
    by_id = {item["task_id"]: item for item in items}
    ctx.count_in(len(items))
    for d in result.duplicates:
        ctx.reject(d.id, by_id[d.id], "near_duplicate",
                   f"cosine {d.cosine:.9g} >= {tau:g} with {d.duplicate_of}")
    ctx.count_out(len(kept))
    ctx.write_jsonl("deduped.jsonl", kept)
    ctx.write_json("dedup.json", {**result.as_dict(), "embedding": embedder.describe(),
                                  "order": f"tracks {', '.join(ctx.settings['tracks'])}, then file order",
                                  "text_field": "question"})


__all__ = ["dedup_items", "dedup_stage", "walk_order"]
