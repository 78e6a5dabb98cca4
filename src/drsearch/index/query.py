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
# Distinct terms a query may have: Lucene's default clause limit. Every term costs a
# posting-list read and a pass over each hit's text for its snippet, so without a cap a
# 32 KB query of short words costs seconds.
MAX_QUERY_TERMS = 1024


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


def parse_query(query: str, tokenizer: Tokenizer, max_terms: int = MAX_QUERY_TERMS) -> ParsedQuery:
    """Parse free text into distinct terms. A query with no indexable term has no terms.

    Raises InvalidQueryError (see :func:`check_query_text`, and more than ``max_terms``
    distinct terms).
    """
    text = normalize_text(check_query_text(query))
    utf8 = text.encode("utf-8")
    seen: set[str] = set()
    terms: list[QueryTerm] = []
    for tok in tokenizer.tokens(utf8, query=True):
        if tok.term in seen:
            continue
        if len(seen) == max_terms:
            raise InvalidQueryError(f"query has more than {max_terms} distinct terms; "
                                    f"the limit is {max_terms}")
        seen.add(tok.term)
        terms.append(QueryTerm(tok.term, utf8[tok.start : tok.end].decode("utf-8", "replace")))
    return ParsedQuery(text, tuple(terms))


__all__ = ["MAX_QUERY_CHARS", "MAX_QUERY_TERMS", "ParsedQuery", "QueryTerm", "check_query_text",
           "parse_query"]
