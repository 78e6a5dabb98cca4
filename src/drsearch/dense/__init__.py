"""Dense retrieval over a frozen corpus: chunk vectors in a sidecar, exact inner product.

A layer above ``index`` (it ranks with its own vectors and borrows the engine for
everything else) and below the front-ends, which take any ``drsearch.contract.Retriever``.
The embedding model (onnxruntime, the ``embed`` extra) is imported only when a model is
loaded, never by ``index``. docs/RETRIEVERS.md describes the retrievers and the sidecar.

Public API (pinned by tests/dense/test_dense.py)::

    open_retriever(path, blocklist, spec, vectors=None)  -> Retriever  (bm25|dense|hybrid[:rrf|:linear=W])
    parse_retriever(spec) -> RetrieverSpec
    embed_corpus(engine, out, embedder)                  -> EmbedReport  (drsearch embed)
    DenseRetriever, HybridRetriever, Embedder, default_sidecar(path), VectorsError, EmbeddingModelError
"""

from __future__ import annotations

import os
from pathlib import Path

from ..contract import DEFAULT_TIME_LIMIT_S, InvalidInputError, Retriever
from ..index import BlockList, Engine, ReleasePolicy
from .embed import Embedder, EmbeddingModelError
from .hybrid import DEFAULT_DEPTH, HybridRetriever
from .over_engine import OverEngine
from .rerank import CallCache, LLMReranker, RerankConfig
from .reranked import RerankedRetriever
from .retriever import DenseRetriever, best_per_document
from .sidecar import VectorsError, default_sidecar
from .spec import SYNTAX, RetrieverSpec, parse_retriever
from .vectors import EmbedReport, TextEmbedder, embed_corpus

RETRIEVERS = ("bm25", "dense", "hybrid")


def open_retriever(path: str | os.PathLike[str], blocklist: BlockList | None = None,
                   kind: str | RetrieverSpec = "bm25", *,
                   vectors: str | os.PathLike[str] | None = None, embedder: TextEmbedder | None = None,
                   release_blocklist: ReleasePolicy = "apply", time_limit_s: float = DEFAULT_TIME_LIMIT_S,
                   depth: int = DEFAULT_DEPTH, rerank: RerankConfig | None = None,
                   rerank_cache: CallCache | None = None, probe: bool = True) -> Retriever:
    """The retriever ``kind`` (a spec, ``bm25|dense|hybrid[:rrf|:linear=W]``, or a parsed
    :class:`RetrieverSpec`) over the corpus at ``path`` with ``blocklist``.

    ``bm25``: the engine itself. ``dense``: its sidecar (``vectors``, default
    ``PATH.vectors``) and the model that made it (``embedder``, default the pinned MiniLM
    int8). ``hybrid`` (``hybrid:rrf``): both, fused by reciprocal rank (k = 60) of each one's
    ``depth`` best; ``hybrid:linear=W``: by ``W · dense + (1 − W) · bm25`` of their min-max
    normalised scores. Raises CorpusFileError (VectorsError: no, damaged, truncated or another
    corpus' vectors), EmbeddingModelError (model absent or not the sidecar's),
    InvalidInputError (a spec that does not parse; ``+rerank`` without ``rerank``, or
    ``rerank`` without ``+rerank``). ``+rerank``: the top ``rerank.depth`` reordered by an LLM
    (``drsearch.dense.rerank``), its requests through ``rerank_cache`` where given; with
    ``probe`` the endpoint is asked once first (UpstreamUnavailableError if it cannot answer).
    ``release_blocklist``: as ``Engine.open``'s. Never falls back to another retriever.
    """
    spec = kind if isinstance(kind, RetrieverSpec) else parse_retriever(kind)
    if spec.rerank and rerank is None:
        raise InvalidInputError(f"--retriever {spec}: +rerank needs the reranker (--rerank-url and "
                                "--rerank-model)")
    if rerank is not None and not spec.rerank:
        raise InvalidInputError(f"--rerank-url/--rerank-model: only with a --retriever ending in +rerank, "
                                f"not {spec}")
    reranker = None
    if rerank is not None:
        reranker = LLMReranker(rerank, rerank_cache)
        try:
            if probe:
                reranker.probe()  # an endpoint that is down: the caller's start-up fails (exit 2)
        except BaseException:
            reranker.close()
            raise
    try:
        base = _open_base(path, blocklist, spec, vectors, embedder, release_blocklist, time_limit_s, depth)
    except BaseException:
        if reranker is not None:
            reranker.close()
        raise
    if reranker is None:
        return base
    assert isinstance(base, Engine | OverEngine)
    return RerankedRetriever(base, reranker)


def _open_base(path: str | os.PathLike[str], blocklist: BlockList | None, spec: RetrieverSpec,
               vectors: str | os.PathLike[str] | None, embedder: TextEmbedder | None,
               release_blocklist: ReleasePolicy, time_limit_s: float, depth: int) -> Retriever:
    """``spec``'s retriever without its reranker."""
    if vectors is not None and spec.kind == "bm25":
        raise InvalidInputError("--vectors: only with --retriever dense or hybrid")
    engine = Engine.open(path, blocklist, release_blocklist=release_blocklist, time_limit_s=time_limit_s)
    if spec.kind == "bm25":
        return engine
    try:
        side = Path(vectors) if vectors is not None else default_sidecar(engine.path)  # a release's index
        if not side.is_file():
            raise VectorsError(f"{side}: no vectors for dense retrieval; make them with "
                               f"`drsearch embed {path}`")
        retriever = DenseRetriever(engine, side, embedder if embedder is not None else Embedder())
        if spec.kind == "dense":
            return retriever
        return HybridRetriever(retriever, depth, fusion=spec.fusion or "rrf", weight=spec.weight)
    except BaseException:
        engine.close()
        raise


__all__ = [
    "RETRIEVERS",
    "SYNTAX",
    "DenseRetriever",
    "EmbedReport",
    "Embedder",
    "EmbeddingModelError",
    "HybridRetriever",
    "RerankConfig",
    "RerankedRetriever",
    "RetrieverSpec",
    "TextEmbedder",
    "VectorsError",
    "best_per_document",
    "default_sidecar",
    "embed_corpus",
    "open_retriever",
    "parse_retriever",
]
