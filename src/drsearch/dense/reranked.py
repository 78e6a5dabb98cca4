"""``RerankedRetriever``: any retriever's top ``depth`` reordered by an :class:`LLMReranker`.

Ranks with the base retriever (BM25: the engine; dense; hybrid), reads the candidates' chunk
texts, and returns them in the model's order (``drsearch.dense.rerank``); a result holds at
most ``depth`` documents. Blocked documents are never candidates (the base never returns them).
The configuration is the base's plus the reranker's (mode, depth, model, prompt SHA-256), so
the fleet identity and the replay keys tell a reranked retriever from its base.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..index import Engine
from .over_engine import OverEngine
from .rerank import LLMReranker

Ranked = list[tuple[int, float]]


class RerankedRetriever(OverEngine):
    """``base`` (an Engine, or a retriever over ``engine``) reranked by ``reranker``; owns both."""

    def __init__(self, base: Engine | OverEngine, reranker: LLMReranker) -> None:
        self.base = base
        self.reranker = reranker
        self.depth = reranker.config.depth
        engine = base if isinstance(base, Engine) else base.engine
        self.base_kind = "bm25" if isinstance(base, Engine) else str(getattr(base, "kind", "dense"))
        self.kind = self.base_kind
        base_config = "bm25" if isinstance(base, Engine) else base.config
        self._base_rank: Callable[[str, int], Ranked] = (
            (lambda q, n: engine.rank(q, n, max_k=n)) if isinstance(base, Engine) else base.rank)
        super().__init__(engine, f"{base_config}+{reranker.config_string()}")

    def rank(self, query: str, k: int) -> Ranked:
        """The base's ``depth`` best in the model's order, the first ``k``. Raises
        UpstreamUnavailableError when the model cannot answer (never the unreranked list)."""
        candidates = self._base_rank(query, self.depth)
        texts = self.engine.chunk_texts([chunk for chunk, _ in candidates])
        order = self.reranker.rerank(query, list(texts))
        return [(candidates[i][0], score) for i, score in order[:k]]

    def stats(self) -> dict[str, Any]:
        body = self.base.stats()
        body["scorer"] = f"{self.base_kind}+rerank"
        retriever = body.get("retriever") or {"kind": "bm25"}
        body["retriever"] = {**retriever, "config": self.config, "rerank": self.reranker.describe()}
        return body

    def close(self) -> None:
        try:
            self.reranker.close()
        finally:
            self.base.close()


__all__ = ["RerankedRetriever"]
