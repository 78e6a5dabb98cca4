"""Value objects returned by the engine.

Result objects are named tuples and frozen dataclasses (cheap to create on the hot path); the
typed build settings are in ``settings.py``. ``to_dict()`` gives the exact JSON body shapes of
the HTTP API (docs/DESIGN.md), so the CLI's ``--json`` and the server print the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple


class Hit(NamedTuple):
    """One search result: a document represented by its best chunk.

    Immutable; a named tuple rather than a frozen dataclass because a search builds up to
    100 of them per call and a frozen dataclass costs ~1 µs each to construct.
    """

    rank: int
    docid: str
    url: str
    title: str
    score: float
    chunk_ordinal: int
    chunk_text: str = ""
    snippet: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "docid": self.docid,
            "url": self.url,
            "title": self.title,
            "score": self.score,
            "chunk": {"ordinal": self.chunk_ordinal, "text": self.chunk_text},
            "snippet": self.snippet,
        }


@dataclass(frozen=True, slots=True)
class Document:
    """A document's full text and metadata, as returned by ``open``."""

    docid: str
    url: str
    canonical_url: str
    title: str
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    n_words: int = 0
    n_chunks: int = 0

    def to_dict(self, offset: int = 0, length: int | None = None) -> dict[str, Any]:
        """HTTP body of /open; ``offset``/``length`` page the text (in characters)."""
        total = len(self.text)
        end = total if length is None else min(total, offset + length)
        return {
            "docid": self.docid,
            "url": self.url,
            "title": self.title,
            "text": self.text[offset:end],
            "metadata": self.metadata,
            "total_length": total,
            "next_offset": end if end < total else None,
        }


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The answer to one search: the query as given, k, and the ranked hits."""

    query: str
    k: int
    hits: list[Hit]

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "k": self.k, "results": [h.to_dict() for h in self.hits]}




__all__ = ["Document", "Hit", "SearchResult"]
