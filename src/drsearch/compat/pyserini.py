"""A Pyserini-shaped searcher over :class:`~drsearch.index.Engine`.

Scripts written for ``pyserini.search.lucene.LuceneSearcher`` run against a drsearch index
with one changed import::

    from drsearch.compat.pyserini import LuceneSearcher

    searcher = LuceneSearcher("corpus.sqlite3", blocked_docids="blocked.txt")
    hits = searcher.search("who built the antikythera mechanism", k=10)
    for h in hits:
        print(h.docid, h.score)
    doc = searcher.doc(hits[0].docid)      # None for an unknown or blocked docid
    runs = searcher.batch_search(queries, qids, k=1000, threads=4)

What differs from Pyserini, on purpose: the scoring is drsearch's (exact BM25 over chunks,
k1/b fixed at build time, so there is no ``set_bm25``); a document is ranked by its best
chunk; bad input (an empty query, k outside 1..MAX_RUN_K, qids that do not line up with the
queries) raises :class:`~drsearch.index.InvalidInputError` instead of returning nothing.
``raw`` is the canonical JSON of ``{"id", "contents", "title", "url"}`` with ``contents`` =
title + "\\n" + text (the shape of Pyserini's JSON collections).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..contract import MAX_RUN_K, DocumentNotFoundError, InvalidInputError, Retriever, canonical_json, check_k
from ..contract import Document as _EngineDocument
from ..index import BlockList, Engine, ReleasePolicy


def _contents(title: str, text: str) -> str:
    return f"{title}\n{text}" if title else text


class Document:
    """A stored document, as Pyserini's ``Document`` wrapper exposes it."""

    __slots__ = ("_doc",)

    def __init__(self, doc: _EngineDocument) -> None:
        self._doc = doc

    def docid(self) -> str:
        return self._doc.docid

    def id(self) -> str:  # Pyserini has both spellings
        return self._doc.docid

    def contents(self) -> str:
        """Title and text, as indexed: ``title + "\\n" + text`` (text alone without a title)."""
        return _contents(self._doc.title, self._doc.text)

    def raw(self) -> str:
        """Canonical JSON ``{"contents", "id", "title", "url"}``."""
        d = self._doc
        return canonical_json({"contents": _contents(d.title, d.text), "id": d.docid, "title": d.title,
                               "url": d.url})

    def __repr__(self) -> str:
        return f"Document(docid={self._doc.docid!r})"


class Hit:
    """One search result: ``docid``, ``score``, ``rank`` (1-based), ``url``, ``title``, and
    ``raw`` / ``contents`` (the whole document, read on first access and kept)."""

    __slots__ = ("_doc", "_searcher", "docid", "rank", "score", "title", "url")

    def __init__(self, searcher: LuceneSearcher, rank: int, docid: str, score: float,
                 url: str, title: str) -> None:
        self._searcher = searcher
        self._doc: Document | None = None
        self.rank = rank
        self.docid = docid
        self.score = score
        self.url = url
        self.title = title

    def _document(self) -> Document:
        if self._doc is None:
            doc = self._searcher.doc(self.docid)
            if doc is None:  # cannot happen for a hit of the same searcher: say so loudly
                raise DocumentNotFoundError(f"no document with docid {self.docid!r}")
            self._doc = doc
        return self._doc

    @property
    def raw(self) -> str:
        return self._document().raw()

    @property
    def contents(self) -> str:
        return self._document().contents()

    def __repr__(self) -> str:
        return f"Hit(rank={self.rank}, docid={self.docid!r}, score={self.score!r})"


class LuceneSearcher:
    """``LuceneSearcher(index)`` over a drsearch index file (or an open
    :class:`~drsearch.contract.Retriever`, such as :class:`Engine`).

    ``blocked_docids``: a blocklist file (or :class:`BlockList`) whose documents are absent
    from results and from :meth:`doc`, exactly as over HTTP. A release's database (``index``
    a release's ``search/corpus.sqlite3`` or the release directory) gets the release's own
    list unless ``release_blocklist`` says ``none`` or ``override``
    (:mod:`drsearch.index.releases`, as :meth:`Engine.open`). An engine passed in keeps its
    own blocklist and stays the caller's to close; a path is opened here (close with
    :meth:`close` or use ``with``). Thread-safe: :meth:`batch_search` shares one engine.
    """

    def __init__(self, index: str | os.PathLike[str] | Retriever, *,
                 blocked_docids: str | os.PathLike[str] | BlockList | None = None,
                 release_blocklist: ReleasePolicy = "apply") -> None:
        if isinstance(index, Retriever):
            if blocked_docids is not None or release_blocklist != "apply":
                raise InvalidInputError("blocked_docids: give the blocklist to Engine.open, not here")
            self._engine, self._owned = index, False
        else:
            bl = (blocked_docids if isinstance(blocked_docids, BlockList)
                  else BlockList.from_file(blocked_docids) if blocked_docids is not None else None)
            engine = Engine.open(Path(index), bl, release_blocklist=release_blocklist)
            self._engine, self._owned = engine, True
        # one pool per thread count, kept: each engine thread opens its own connection and
        # scratch arrays, so fresh threads per call would pile those up until close()
        self._pools: dict[int, ThreadPoolExecutor] = {}

    @property
    def engine(self) -> Retriever:
        return self._engine

    @property
    def num_docs(self) -> int:
        """Documents served (blocked ones excluded)."""
        return int(self._engine.meta["documents"]) - int(self._engine.stats()["blocked_documents"])

    def close(self) -> None:
        for pool in self._pools.values():
            pool.shutdown()
        self._pools.clear()
        if self._owned:
            self._engine.close()

    def __enter__(self) -> LuceneSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(self, q: str, k: int = 10) -> list[Hit]:
        """The ``k`` best documents for free text ``q`` (k in 1..MAX_RUN_K), best first.

        Ties: lower chunk rowid first, as the engine orders them, so a result is reproducible.
        """
        check_k(k, MAX_RUN_K)
        result = self._engine.search(q, k, with_text=False, max_k=MAX_RUN_K)
        return [Hit(self, h.rank, h.docid, h.score, h.url, h.title) for h in result.hits]

    def batch_search(self, queries: Sequence[str], qids: Sequence[str], k: int = 10,
                     threads: int = 1) -> dict[str, list[Hit]]:
        """``{qid: hits}`` for every query, in the order of ``qids``, on ``threads`` threads.

        The answer does not depend on ``threads`` (each query is ranked on its own). Raises
        InvalidInputError when the lists differ in length, a qid repeats or threads < 1.
        """
        if isinstance(queries, str) or isinstance(qids, str):
            raise InvalidInputError("batch_search: queries and qids must be lists of strings")
        if len(queries) != len(qids):
            raise InvalidInputError(f"batch_search: {len(queries)} queries but {len(qids)} qids")
        if len(set(qids)) != len(qids):
            raise InvalidInputError("batch_search: qids must be distinct")
        if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
            raise InvalidInputError("batch_search: threads must be an integer >= 1")
        check_k(k, MAX_RUN_K)
        if threads == 1 or len(queries) < 2:
            return {qid: self.search(q, k) for qid, q in zip(qids, queries, strict=True)}
        pool = self._pools.get(threads)
        if pool is None:
            pool = self._pools[threads] = ThreadPoolExecutor(threads, thread_name_prefix="drsearch-batch")
        answers = list(pool.map(lambda q: self.search(q, k), queries))
        return dict(zip(qids, answers, strict=True))

    def doc(self, docid: str) -> Document | None:
        """The stored document, or None for an unknown *or blocked* docid (indistinguishable)."""
        if not isinstance(docid, str):
            raise InvalidInputError("doc: docid must be a string")
        try:
            return Document(self._engine.open_document(docid=docid))
        except DocumentNotFoundError:
            return None


__all__ = ["Document", "Hit", "LuceneSearcher"]
