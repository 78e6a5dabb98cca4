"""``DenseRetriever``: exact inner-product search over a corpus' chunk vectors.

Implements ``drsearch.contract.Retriever`` over a BM25 ``Engine`` of the same file, which
supplies everything but the ranking: the request checks, the blocklist, documents, hits'
texts and snippets, ``open_document`` and ``stats``.

Exact and byte-reproducible: the query vector is quantised like the chunks' (int8 with a
scale), each chunk's inner product with it is an exact integer (int8 × int8 summed in int32:
``drsearch.index.dense_scan``, the C kernel's SIMD loop or its numpy twin, bit for bit), and
the score is that integer times the chunk's scale, then the query's, in float64. So scores,
ties (broken by chunk rowid) and the order are the same on every run, path and machine. A
document counts by its best chunk; blocked documents' chunks are never candidates.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..index import Engine
from ..index.dense_scan import dense_scores
from .embed import EmbeddingModelError
from .over_engine import OverEngine
from .sidecar import VectorsError, open_records, quantise
from .vectors import TextEmbedder

_HASH_BLOCK = 1 << 20


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for piece in iter(lambda: fh.read(_HASH_BLOCK), b""):
            h.update(piece)
    return h.hexdigest()


def check_sidecar(header: Mapping[str, Any], engine: Engine, embedder: TextEmbedder, path: Path) -> None:
    """Raise VectorsError unless ``header`` is of ``engine``'s corpus, EmbeddingModelError
    unless it was embedded by ``embedder``'s model (same SHA-256, pooling, dimension...)."""
    meta = engine.meta
    if header["content_identity"] != meta["content_identity"] or header["rows"] != meta["chunks"]:
        raise VectorsError(f"{path}: vectors of another corpus (identity {header['content_identity']}, "
                           f"{header['rows']} chunks; this corpus is {engine.meta['content_identity']}, "
                           f"{engine.meta['chunks']} chunks); run `drsearch embed`")
    model = embedder.describe()
    for key in ("dimension", "model", "model_sha256", "tokenizer_sha256", "route", "pooling", "normalised",
                "max_tokens"):
        if header.get(key) != model.get(key):
            raise EmbeddingModelError(f"{path}: vectors of another model ({key} {header.get(key)!r}, "
                                      f"the query model's is {model.get(key)!r})")


class DenseRetriever(OverEngine):
    """Dense retrieval over ``engine``'s corpus with the sidecar ``vectors`` and ``embedder``
    (the model that embedded them: checked). Thread-safe. Owns ``engine`` (``close`` closes it).

    Memory: the vectors as int8, 1 byte per component (384 bytes a 384-d chunk), and a
    float64 scale and score per chunk.
    """

    kind = "dense"

    def __init__(self, engine: Engine, vectors: Path, embedder: TextEmbedder) -> None:
        header, records = open_records(vectors)
        check_sidecar(header, engine, embedder, vectors)
        self.embedder = embedder
        self.vectors_path = vectors
        self.header = header
        n = int(header["rows"])
        # chunk rowid-indexed (entry 0 unused, as the engine's arrays)
        self._matrix: npt.NDArray[np.int8] = np.zeros((n + 1, header["dimension"]), dtype=np.int8)
        self._matrix[1:] = records["v"]
        self._scales: npt.NDArray[np.float64] = np.zeros(n + 1, dtype=np.float64)
        self._scales[1:] = records["s"]
        self._chunk_doc = engine.chunk_documents
        hidden = np.zeros(n + 1, dtype=np.bool_)
        hidden[0] = True
        if engine.blocked_chunks is not None:
            hidden |= engine.blocked_chunks
        self._hidden = hidden
        self.vectors_sha256 = _file_sha256(vectors)
        super().__init__(engine, f"dense:{header['model']}:{header['model_sha256'][:12]}:"
                                 f"{header['vector_format']}:{self.vectors_sha256[:16]}")
        self._embed_lock = threading.Lock()

    def stats(self) -> dict[str, Any]:
        """The engine's statistics, with ``scorer`` "dense" and the vectors' description."""
        body = self.engine.stats()
        body["scorer"] = self.kind
        body["retriever"] = {"kind": self.kind, "config": self.config, "vectors": {
            "path": str(self.vectors_path), "sha256": self.vectors_sha256,
            **{key: self.header[key] for key in sorted(self.header) if key not in ("format", "text")}}}
        return body

    # -- ranking -----------------------------------------------------------------------------
    def query_vector(self, query: str) -> tuple[npt.NDArray[np.int8], float]:
        """The query's quantised vector and its scale."""
        with self._embed_lock:  # one onnxruntime run at a time: it uses every core already
            vector = np.asarray(self.embedder.embed([query]), dtype=np.float32)
        record = quantise(vector)[0]
        return np.ascontiguousarray(record["v"], dtype=np.int8), float(record["s"])

    def scores(self, query: str) -> npt.NDArray[np.float64]:
        """Every chunk's score by rowid (entry 0 and blocked chunks: -inf)."""
        q, q_scale = self.query_vector(query)
        out: npt.NDArray[np.float64] = np.empty(len(self._scales), dtype=np.float64)
        dense_scores(self._matrix, q, self._scales, q_scale, self._hidden, out)
        return out

    def rank(self, query: str, k: int) -> list[tuple[int, float]]:
        """(best chunk rowid, score) of the ``k`` best documents, best first."""
        return best_per_document(self.scores(query), self._chunk_doc, k)


def best_per_document(scores: npt.NDArray[np.float64], chunk_doc: npt.NDArray[np.int32],
                      k: int) -> list[tuple[int, float]]:
    """The ``k`` documents with the highest best-chunk score, as (chunk rowid, score), best
    first, ties by lower chunk rowid; chunks scored -inf are never returned.

    Exact: the candidates are every chunk scoring at least the m-th best score (ties at the
    threshold included), m doubling until they hold ``k`` documents or every chunk."""
    live = int(np.count_nonzero(scores > -np.inf))
    m = min(live, max(4 * k, 64))
    while True:
        if m >= live:
            cand = np.flatnonzero(scores > -np.inf)
        else:
            threshold = np.partition(scores, len(scores) - m)[len(scores) - m]
            cand = np.flatnonzero(scores >= threshold)
        order = cand[np.lexsort((cand, -scores[cand]))]
        _, first = np.unique(chunk_doc[order], return_index=True)
        if len(first) >= k or m >= live:
            best = order[np.sort(first)][:k]
            return [(int(c), float(scores[c])) for c in best]
        m = min(live, 2 * m)


__all__ = ["DenseRetriever", "best_per_document", "check_sidecar"]
