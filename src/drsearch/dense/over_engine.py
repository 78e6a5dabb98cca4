"""What every ranker over an :class:`~drsearch.index.Engine`'s corpus answers as the engine
does: the file, its identity (plus the ranker's configuration), the blocklist and the
release rule's choice, documents, and closing. Dense and hybrid retrievers derive from it,
so the Retriever protocol's corpus side is written once."""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

from ..contract import (
    MAX_K,
    MAX_QUERY_TERMS,
    MAX_RUN_K,
    Document,
    QueryTimeoutError,
    SearchResult,
    check_k,
)
from ..contract.retriever import BlocklistInfo, BlocklistOrigin
from ..index import Engine


class OverEngine:
    """The corpus side of the Retriever protocol, delegated to ``engine``; ``config`` (the
    ranker's configuration) joins the engine's ``meta`` as ``retriever``. ``search`` is the
    engine's request checks and hits around the subclass's ``rank(query, k)``: ranked
    (chunk rowid, score) pairs, best chunk per document, blocked chunks never among them."""

    def __init__(self, engine: Engine, config: str) -> None:
        self.engine = engine
        self.config = config
        self._meta: dict[str, Any] = {**engine.meta, "retriever": config}

    @property
    def path(self) -> Path:
        return self.engine.path

    @property
    def meta(self) -> Mapping[str, Any]:
        return self._meta

    @property
    def blocklist(self) -> BlocklistInfo:
        return self.engine.blocklist

    @property
    def blocked_matched(self) -> int:
        return self.engine.blocked_matched

    @property
    def blocklist_choice(self) -> BlocklistOrigin:
        return self.engine.blocklist_choice

    @property
    def passages(self) -> bool:
        return self.engine.passages

    def rank(self, query: str, k: int) -> list[tuple[int, float]]:
        raise NotImplementedError

    def search(self, query: str, k: int = 10, *, with_text: bool = True, deadline: float | None = None,
               max_terms: int = MAX_QUERY_TERMS, max_k: int = MAX_K) -> SearchResult:
        """The ``k`` best documents by ``rank``. The request checks and errors are BM25's
        (``Engine.search``): InvalidQueryError, InvalidKError, QueryTimeoutError."""
        k = check_k(k, min(max_k, MAX_RUN_K))
        if deadline is None:
            deadline = time.monotonic() + self.engine.time_limit_s
        self.engine.parse(query, min(max_terms, MAX_QUERY_TERMS))  # the same checks as BM25
        ranked = self.rank(query, k)
        if time.monotonic() > deadline:
            raise QueryTimeoutError("query ran past its time limit")
        return SearchResult(query, k, self.engine.hits(query, ranked, with_text=with_text, deadline=deadline))

    def stats(self) -> dict[str, Any]:
        """The engine's statistics (a ranker adds its own description)."""
        return self.engine.stats()

    def open_document(self, *, docid: str | None = None, url: str | None = None) -> Document:
        return self.engine.open_document(docid=docid, url=url)

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["OverEngine"]
