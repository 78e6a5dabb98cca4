from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drsearch.index import chunk_spans, chunk_words, split_words


def test_short_document_is_one_chunk() -> None:
    assert [(s.start, s.end) for s in chunk_spans(800)] == [(0, 800)]
    assert [(s.start, s.end) for s in chunk_spans(1)] == [(0, 1)]


def test_empty_document_has_no_chunks() -> None:
    assert chunk_spans(0) == []


def test_dr256_windows() -> None:
    assert [(s.start, s.end) for s in chunk_spans(801)] == [(0, 800), (700, 801)]
    assert [(s.start, s.end) for s in chunk_spans(1500)] == [(0, 800), (700, 1500)]
    assert [(s.start, s.end) for s in chunk_spans(1501)] == [(0, 800), (700, 1500), (1400, 1501)]


def test_chunk_text_joins_words_with_single_spaces() -> None:
    words = split_words("a  b\t\nc\u00a0d")
    assert words == ["a", "b", "c", "d"]
    assert chunk_words(words, size=3, stride=2)[1][1] == "c d"


def test_bad_parameters() -> None:
    with pytest.raises(ValueError):
        chunk_spans(10, size=5, stride=6)
    with pytest.raises(ValueError):
        chunk_spans(10, size=5, stride=0)


@given(st.integers(min_value=1, max_value=20_000))
def test_windows_cover_every_word_with_exact_overlaps(n: int) -> None:
    spans = chunk_spans(n)
    assert spans[0].start == 0 and spans[-1].end == n
    covered = set()
    for i, s in enumerate(spans):
        assert s.ordinal == i
        assert s.start == 700 * i and s.end == min(700 * i + 800, n)
        covered.update(range(s.start, s.end))
    assert covered == set(range(n))
    for prev, cur in pairwise(spans):
        assert prev.end - cur.start == 100  # exactly 100 words shared
        assert cur.end > prev.end  # no window lies inside its predecessor
    assert spans[-2].end < n if len(spans) > 1 else True  # stop after the first window reaching the end


@given(st.integers(min_value=1, max_value=3000), st.integers(1, 50), st.integers(1, 50))
def test_general_sizes(n: int, size: int, stride: int) -> None:
    if stride > size:
        size, stride = stride, size
    spans = chunk_spans(n, size, stride)
    assert {w for s in spans for w in range(s.start, s.end)} == set(range(n))
    for prev, cur in pairwise(spans):
        assert cur.start - prev.start == stride
        assert cur.end > prev.end


@given(st.lists(st.text(min_size=1).filter(lambda w: not any(c.isspace() for c in w)), max_size=60))
def test_chunks_reassemble_the_words(words: list[str]) -> None:
    chunks = chunk_words(words, size=7, stride=5)
    rebuilt: list[str] = []
    for span, text in chunks:
        assert text.split() == words[span.start : span.end]
        rebuilt[span.start :] = text.split()
    assert rebuilt == words
