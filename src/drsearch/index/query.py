"""Turn free text into safe query terms: never FTS5 syntax, never a column filter.

The query is tokenised with the index's own tokenizer; each distinct term (first
occurrence wins) becomes one quoted FTS5 string, and the strings are ORed. Operators
(``AND``, ``NEAR(``, ``col:``, ``*``, ``-``, quotes) are plain text to the tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass

from .errors import InvalidQueryError
from .text import Tokenizer, normalize_text

MAX_QUERY_CHARS = 32_768


@dataclass(frozen=True, slots=True)
class QueryTerm:
    term: str  # as indexed (e.g. stemmed)
    surface: str  # the query's own spelling of it


@dataclass(frozen=True, slots=True)
class ParsedQuery:
    text: str  # NFC-normalised query text
    terms: tuple[QueryTerm, ...]

    def fts5_match(self) -> str:
        """The equivalent FTS5 MATCH expression (for the FTS5 oracle and snippets)."""
        return " OR ".join('"' + t.surface.replace('"', '""') + '"' for t in self.terms)


def check_query_text(query: object) -> str:
    """Validate raw query input; raises InvalidQueryError for non-str, blank or oversized."""
    if not isinstance(query, str):
        raise InvalidQueryError("query must be a string")
    if not query.strip():
        raise InvalidQueryError("query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidQueryError(
            f"query is {len(query)} characters long; the limit is {MAX_QUERY_CHARS}"
        )
    return query


def parse_query(query: str, tokenizer: Tokenizer) -> ParsedQuery:
    """Parse free text into distinct terms. A query with no indexable term has no terms."""
    text = normalize_text(check_query_text(query))
    utf8 = text.encode("utf-8")
    seen: set[str] = set()
    terms: list[QueryTerm] = []
    for tok in tokenizer.tokens(utf8, query=True):
        if tok.term in seen:
            continue
        seen.add(tok.term)
        terms.append(QueryTerm(tok.term, utf8[tok.start : tok.end].decode("utf-8", "replace")))
    return ParsedQuery(text, tuple(terms))


__all__ = ["MAX_QUERY_CHARS", "ParsedQuery", "QueryTerm", "check_query_text", "parse_query"]
