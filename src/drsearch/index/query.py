"""Turn free text into safe query terms: never FTS5 syntax, never a column filter.

The query is tokenised with the index's own tokenizer; each distinct term (first
occurrence wins) becomes one quoted FTS5 string, and the strings are ORed. Operators
(``AND``, ``NEAR(``, ``col:``, ``*``, ``-``, quotes) are plain text to the tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from ..contract.request import MAX_QUERY_TERMS, check_query, too_many_terms
from .text import MAX_TOKEN_BYTES, Tokenizer, indexed_term, normalize_text


class QueryTerm(NamedTuple):
    """One distinct query term. A named tuple rather than a frozen dataclass (as ``Hit``):
    every search makes one per term, and a frozen dataclass costs ~0.7 µs to construct, time
    a search thread holds the GIL."""

    term: str  # as indexed (e.g. stemmed)
    surface: str  # the query's own spelling of it


# QueryTerm's own __new__ without its Python frame (half its cost; every term of every search)
_new_term = tuple.__new__
# a token this short is its own indexed term (at most 4 UTF-8 bytes a character: indexed_term)
_SHORT_TOKEN = MAX_TOKEN_BYTES // 4


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    text: str  # NFC-normalised query text
    terms: tuple[QueryTerm, ...]

    def fts5_match(self) -> str:
        """The equivalent FTS5 MATCH expression (for the FTS5 oracle and snippets)."""
        return " OR ".join('"' + t.surface.replace('"', '""') + '"' for t in self.terms)


def parse_query(query: str, tokenizer: Tokenizer, max_terms: int = MAX_QUERY_TERMS) -> ParsedQuery:
    """Parse free text into distinct terms. A query with no indexable term has no terms.

    Raises InvalidQueryError (see ``contract.check_query``, and more than ``max_terms``
    distinct terms: ``contract.too_many_terms``).
    """
    text = normalize_text(check_query(query))
    utf8 = text.encode("utf-8")
    # ASCII text: a span's byte offsets are its character offsets (no bytes object to decode)
    same_offsets = len(utf8) == len(text)
    seen: set[str] = set()
    terms: list[QueryTerm] = []
    for start, end, token in tokenizer.spans(utf8, query=True):
        term = token if len(token) <= _SHORT_TOKEN else indexed_term(token)
        if term in seen:
            continue
        if len(seen) == max_terms:
            raise too_many_terms(max_terms)
        seen.add(term)
        surface = text[start:end] if same_offsets else utf8[start:end].decode("utf-8", "replace")
        terms.append(_new_term(QueryTerm, (term, surface)))
    return ParsedQuery(text, tuple(terms))


__all__ = ["ParsedQuery", "QueryTerm", "parse_query"]
