"""The LangChain retriever, with the real langchain-core: the engine's ranking as Documents."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ValidationError

from drsearch.compat.langchain import DrsearchRetriever
from drsearch.contract import InvalidQueryError
from drsearch.index import Engine

from ..helpers import blocklist_of

QUERY = "video game streaming history"


def test_documents_are_the_engines_hits(sample_engine: Engine) -> None:
    retriever = DrsearchRetriever(engine=sample_engine, k=5)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke(QUERY)
    hits = sample_engine.search(QUERY, 5).hits
    assert len(docs) == 5 and all(isinstance(d, Document) for d in docs)
    for d, h in zip(docs, hits, strict=True):
        assert d.page_content == h.chunk_text and d.id == h.docid
        assert d.metadata == {"chunk_ordinal": h.chunk_ordinal, "docid": h.docid, "rank": h.rank,
                              "score": h.score, "title": h.title, "url": h.url}


def test_blocked_documents_are_absent(sample_index: Path, sample_engine: Engine) -> None:
    top = sample_engine.search(QUERY, 1).hits[0].docid
    with Engine.open(sample_index, blocklist_of(top)) as blocked:
        docids = [d.metadata["docid"] for d in DrsearchRetriever(engine=blocked, k=100).invoke(QUERY)]
    assert docids and top not in docids


def test_bad_input_raises(sample_engine: Engine) -> None:
    with pytest.raises(ValidationError):
        DrsearchRetriever(engine=sample_engine, k=0)
    with pytest.raises(ValidationError):
        DrsearchRetriever(engine=sample_engine, k=101)
    with pytest.raises(InvalidQueryError):
        DrsearchRetriever(engine=sample_engine).invoke("   ")
