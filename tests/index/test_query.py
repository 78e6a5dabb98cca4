"""Query escaping: any text becomes safe FTS5 terms; never syntax, never a column filter."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsearch.contract import MAX_QUERY_CHARS, InvalidQueryError
from drsearch.index import Engine

from ..helpers import best_chunk_per_doc

HOSTILE = [
    '"unbalanced quote', "NEAR(a b", "NEAR(flow plate, 2)", "docid:cran-1", "title:flow", "text:*",
    "*", "AND OR NOT", "flow AND NOT plate", "a - b -- c", "(((", ")))", "x" * 5000,
    "émigré naïve café", "🚀 rockets", "\u202eRTL \u05e9\u05dc\u05d5\u05dd", "boundary-layer flow; 1950s?",
    "' OR 1=1 --", "flow\x00plate", "{col1 col2}: flow", "^flow", "flow +plate", 'a"b"c',
    "\ud800 lone surrogate", "ﬂow ＦＬＯＷ", "Ω≈ç√∫", "word_with_underscores", "a:b:c",
]


@pytest.fixture(scope="module")
def engine(cran_small_chunks: Path) -> Engine:
    return Engine.open(cran_small_chunks)


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_answer(engine: Engine, query: str) -> None:
    result = engine.search(query, k=5)
    assert len(result.hits) <= 5
    assert len({h.docid for h in result.hits}) == len(result.hits)


def test_operators_are_plain_words(engine: Engine) -> None:
    parsed = engine.parse("docid:cran-1 NEAR(flow plate) AND title:x")
    assert [t.term for t in parsed.terms] == ["docid", "cran", "1", "near", "flow", "plate", "and",
                                              "titl", "x"]
    # 'AND' is a term, not an operator: FTS5 parses the quoted form as a phrase.
    assert '"AND"' in parsed.fts5_match()


def test_underscore_splits_into_separate_terms(engine: Engine) -> None:
    assert [t.term for t in engine.parse("heat_transfer").terms] == ["heat", "transfer"]


def test_duplicate_terms_counted_once(engine: Engine) -> None:
    assert [t.term for t in engine.parse("flow flows FLOW flowing").terms] == ["flow"]


def test_query_without_indexable_terms_returns_nothing(engine: Engine) -> None:
    assert engine.search("*** --- ???", k=10).hits == []


@pytest.mark.parametrize("query", ["", "   ", "\n\t", None, 5])
def test_blank_or_non_string_query_is_an_error(engine: Engine, query: object) -> None:
    with pytest.raises(InvalidQueryError):
        engine.search(query, k=5)  # type: ignore[arg-type]


def test_oversized_query_is_an_error_but_10kb_works(engine: Engine) -> None:
    ten_kb = " ".join(["boundary layer flow plate heat transfer"] * 250)[:10_240]
    assert engine.search(ten_kb, k=10).hits
    with pytest.raises(InvalidQueryError, match="limit"):
        engine.search("x " * MAX_QUERY_CHARS, k=10)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(min_size=1, max_size=300))
def test_any_text_is_a_valid_fts5_expression(engine: Engine, text: str) -> None:
    if not text.strip():
        return
    parsed = engine.parse(text)
    match = parsed.fts5_match()
    if match:
        # FTS5 itself accepts it (no syntax error, no "no such column").
        engine._conn.execute(
            "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (match,)).fetchall()
    engine.search(text, k=3)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(["flow", "plate", '"', "NEAR(", ":", "*", "-", "AND", "OR",
                                 "NOT", "(", ")", "^", "+", "🚀", "é", "heat", "x:", "{a}"]),
                min_size=1, max_size=12))
def test_operator_soup_matches_fts5_oracle(engine: Engine, parts: list[str]) -> None:
    query = " ".join(parts)
    if not query.strip():
        return
    ours = engine.rank(query, 10)
    oracle = best_chunk_per_doc(engine, engine.fts5_rank(query, 100_000), 10)
    assert ours == oracle


def test_fts5_match_escapes_quotes() -> None:
    conn = apsw.Connection(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    conn.execute("INSERT INTO t VALUES('say hello')")
    from drsearch.index.query import parse_query
    from drsearch.index.text import Tokenizer

    parsed = parse_query('say" OR x:"hello', Tokenizer(conn, "unicode61"))
    assert conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (parsed.fts5_match(),)).get == 1
