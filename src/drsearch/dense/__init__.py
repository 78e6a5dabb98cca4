"""Dense retrieval over a frozen corpus: chunk vectors in a sidecar, exact inner product.

A layer above ``index`` (it ranks with its own vectors and borrows the engine for
everything else) and below the front-ends, which take any ``drsearch.contract.Retriever``.
The embedding model (onnxruntime, the ``embed`` extra) is imported only when a model is
loaded, never by ``index``. docs/RETRIEVERS.md describes the retrievers and the sidecar.

Public API (pinned by tests/dense/test_dense.py)::

    open_retriever(path, blocklist, kind, vectors=None)  -> Retriever  ("bm25" | "dense" | "hybrid")
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
from .retriever import DenseRetriever, best_per_document
from .sidecar import VectorsError, default_sidecar
from .vectors import EmbedReport, TextEmbedder, embed_corpus

RETRIEVERS = ("bm25", "dense", "hybrid")


def open_retriever(path: str | os.PathLike[str], blocklist: BlockList | None = None, kind: str = "bm25", *,
                   vectors: str | os.PathLike[str] | None = None, embedder: TextEmbedder | None = None,
                   release_blocklist: ReleasePolicy = "apply", time_limit_s: float = DEFAULT_TIME_LIMIT_S,
                   depth: int = DEFAULT_DEPTH) -> Retriever:
    """The retriever ``kind`` over the corpus at ``path`` with ``blocklist``.

    ``bm25``: the engine itself. ``dense``: its sidecar (``vectors``, default
    ``PATH.vectors``) and the model that made it (``embedder``, default the pinned MiniLM
    int8). ``hybrid``: both, fused by reciprocal rank (k = 60) of each one's ``depth`` best.
    Raises CorpusFileError (VectorsError: no, damaged, truncated or another corpus'
    vectors), EmbeddingModelError (model absent or not the sidecar's), InvalidInputError
    (an unknown kind). ``release_blocklist``: as ``Engine.open``'s. Never falls back to another
    retriever.
    """
    if kind not in RETRIEVERS:
        raise InvalidInputError(f"unknown retriever {kind!r} (choose from {', '.join(RETRIEVERS)})")
    engine = Engine.open(path, blocklist, release_blocklist=release_blocklist, time_limit_s=time_limit_s)
    if kind == "bm25":
        return engine
    try:
        side = Path(vectors) if vectors is not None else default_sidecar(engine.path)  # a release's index
        if not side.is_file():
            raise VectorsError(f"{side}: no vectors for dense retrieval; make them with "
                               f"`drsearch embed {path}`")
        retriever = DenseRetriever(engine, side, embedder if embedder is not None else Embedder())
        return retriever if kind == "dense" else HybridRetriever(retriever, depth)
    except BaseException:
        engine.close()
        raise


__all__ = [
    "RETRIEVERS",
    "DenseRetriever",
    "EmbedReport",
    "Embedder",
    "EmbeddingModelError",
    "HybridRetriever",
    "TextEmbedder",
    "VectorsError",
    "best_per_document",
    "default_sidecar",
    "embed_corpus",
    "open_retriever",
]
