"""Query vectors in the replay cache: a dense or hybrid run's embeddings, kept so that a
replayed run needs no embedding model.

:class:`CachedQueryEmbedder` is the ``TextEmbedder`` a ``drsearch run --database`` retriever
embeds its queries with: each query's vector is a row of the run's replay cache, keyed
``("embed", the model's description, query)`` (kind ``embed``), its body the float32
little-endian vector. In record mode every vector is stored; in the replaying modes a stored
one is used, and the model (loaded lazily: :class:`~drsearch.dense.embed.LazyEmbedder`) runs
only for a query the cache lacks. A model that is needed and cannot load is an
infrastructure failure of that search (SearcherError: the episode is ``infra_error``), never
an answer and never another model's vector.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from ..contract import DrsearchError
from ..dense import TextEmbedder
from .errors import SearcherError
from .replay import ReplayCache


class CachedQueryEmbedder:
    """``inner``'s embeddings through ``cache`` (set with :meth:`bind` once the run's cache is
    open; unbound or mode ``off``: straight to ``inner``)."""

    def __init__(self, inner: TextEmbedder) -> None:
        self.inner = inner
        self._description = inner.describe()
        self._cache: ReplayCache | None = None

    def bind(self, cache: ReplayCache) -> None:
        self._cache = cache

    def describe(self) -> dict[str, Any]:
        return self._description

    def _live(self, text: str) -> tuple[bool, bytes]:
        try:
            vector = np.asarray(self.inner.embed([text]), dtype="<f4")
        except DrsearchError as e:  # the model is absent or altered: this search cannot be made
            raise SearcherError(f"the query vector of {text[:80]!r} is not in the replay cache and the "
                                f"embedding model cannot run: {e.message}") from None
        return True, vector.tobytes()

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        cache = self._cache
        if cache is None or cache.mode == "off":
            return np.asarray(self.inner.embed(texts), dtype=np.float32)
        rows = []
        for text in texts:
            def live(t: str = text) -> tuple[bool, bytes]:
                return self._live(t)
            _, body = cache.fetch("embed", ["embed", self._description, text], f"embed({text[:200]})", live)
            rows.append(np.frombuffer(body, dtype="<f4"))
        dim = int(self._description["dimension"])
        out = np.zeros((len(texts), dim), dtype=np.float32)
        for i, row in enumerate(rows):
            if row.shape != (dim,):
                raise SearcherError(f"a cached query vector of {len(row)} components, the model's are {dim}")
            out[i] = row
        return out


class LateCache:
    """The run's replay cache for the reranker's requests, bound once it is open (kind
    ``rerank``: a reranked run replays offline); unbound or mode ``off``: every call live."""

    def __init__(self) -> None:
        self._cache: ReplayCache | None = None

    def bind(self, cache: ReplayCache) -> None:
        self._cache = cache

    def fetch(self, kind: str, key: Any, describe: str,
              live: Callable[[], tuple[bool, bytes]] | None) -> tuple[bool, bytes]:
        if self._cache is None or self._cache.mode == "off":
            if live is None:
                raise SearcherError(f"no live backend for {describe}")
            return live()
        return self._cache.fetch(kind, key, describe, live)


__all__ = ["CachedQueryEmbedder", "LateCache"]
