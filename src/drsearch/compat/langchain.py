"""A LangChain retriever over any :class:`~drsearch.contract.Retriever` (the engine:
:class:`~drsearch.index.Engine`; needs ``langchain-core``).

    from drsearch.compat.langchain import DrsearchRetriever

    retriever = DrsearchRetriever(engine=Engine.open("corpus.sqlite3", blocklist), k=5)
    docs = retriever.invoke("video game streaming history")

Each ``Document`` is one result: ``page_content`` is its best-matching passage (the chunk
``search`` ranked it by; read the whole text with ``Engine.open_document``), ``metadata``
``{"docid", "url", "title", "rank", "score", "chunk_ordinal"}``. Blocked documents are
absent as everywhere; bad input raises the engine's InvalidInputError.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, Field

from ..contract import MAX_K, Retriever


class DrsearchRetriever(BaseRetriever):
    """``k`` best documents (1..MAX_K) of an open engine (the caller owns and closes it)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    engine: Retriever
    k: int = Field(default=10, ge=1, le=MAX_K)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                **kwargs: Any) -> list[Document]:
        result = self.engine.search(query, self.k)
        return [Document(page_content=h.chunk_text, id=h.docid,
                         metadata={"chunk_ordinal": h.chunk_ordinal, "docid": h.docid, "rank": h.rank,
                                   "score": h.score, "title": h.title, "url": h.url})
                for h in result.hits]


__all__ = ["DrsearchRetriever"]
