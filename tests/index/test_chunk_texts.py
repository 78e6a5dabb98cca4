"""The C kernel's chunk texts (word_count, join_words) are str.split() and " ".join(): the same
strings, in the same canonical form, for every whitespace code point and every string kind."""

from __future__ import annotations

import random
import sys

import pytest

from drsearch.index.chunking import chunk_spans
from drsearch.index.native import NATIVE_AVAILABLE, native_kernels

pytestmark = pytest.mark.skipif(not NATIVE_AVAILABLE, reason="the C kernel is not built")

SPACES = [chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()]
# Word characters of every string kind: ASCII, Latin-1, the BMP (CJK, Greek), astral (emoji);
# and characters next to whitespace that are not (ZWSP, BOM, U+180E in some Unicode versions).
LETTERS = ["a", "Z", "0", "\x01", "\x7f", "é", "\xff", "ß", "Ω", "字", "\u200b", "\ufeff", "\u180e",
           "😀", "\U0010ffff"]


def expected(text: str, spans: list[tuple[int, int]]) -> list[str]:
    words = text.split()
    return [" ".join(words[s:e]) for s, e in spans]


def test_every_code_point_is_split_on_as_str_split_does() -> None:
    k = native_kernels()
    for c in range(sys.maxunicode + 1):
        ch = chr(c)
        if 0xD800 <= c <= 0xDFFF:
            continue
        text = f"a{ch}b"
        assert k.word_count(text) == len(text.split()), hex(c)
    assert k.word_count("") == 0 and k.word_count(" \n\t ") == 0


@pytest.mark.parametrize("seed", range(300))
def test_chunk_texts_are_split_and_joined(seed: int) -> None:
    rng = random.Random(seed)
    k = native_kernels()
    pieces = []
    for _ in range(rng.randrange(0, 400)):
        if rng.random() < 0.45:  # whitespace: mostly one space, sometimes runs of any kind
            pieces.append(" " if rng.random() < 0.7 else "".join(rng.choices(SPACES, k=rng.randrange(1, 4))))
        else:
            alphabet = LETTERS if rng.random() < 0.3 else ["a", "b", "c"]
            pieces.append("".join(rng.choices(alphabet, k=rng.randrange(1, 8))))
    text = "".join(pieces)
    n = len(text.split())
    assert k.word_count(text) == n
    size = rng.randrange(1, 30)
    stride = rng.randrange(1, size + 1)
    spans = [(s.start, s.end) for s in chunk_spans(n, size, stride)]
    spans += [(a, b) for a, b in ((rng.randrange(n + 1), rng.randrange(n + 1)) for _ in range(5)) if a <= b]
    got = k.join_words(text, spans)
    want = expected(text, spans)
    assert got == want  # str == compares kinds first: a non-canonical string would differ
    assert [ascii(g) for g in got] == [ascii(w) for w in want]
    assert [sys.getsizeof(g) for g in got] == [sys.getsizeof(w) for w in want]  # the same kind


def test_an_ascii_chunk_of_a_wider_text_is_ascii() -> None:
    """The chunk's own largest character sets its kind, not the document's (nor the spaces')."""
    k = native_kernels()
    text = "字 one two\u3000three\xa0four 😀"
    assert k.join_words(text, [(1, 5)]) == ["one two three four"]
    assert k.join_words(text, [(1, 5)])[0].isascii()


def test_spans_outside_the_words_are_refused() -> None:
    k = native_kernels()
    for bad in [(0, 3), (-1, 1), (2, 1)]:
        with pytest.raises(ValueError, match="not within the text's 2 words"):
            k.join_words("one two", [bad])
    with pytest.raises(TypeError):
        k.join_words("one two", [(0,)])


def test_an_empty_span_joins_to_nothing_but_has_no_byte_offsets() -> None:
    """The two span readers share their checks; only join_words takes an empty span."""
    k = native_kernels()
    assert k.join_words("one two", [(1, 1), (2, 2)]) == ["", ""]
    assert k.word_byte_spans("one two", [(0, 2)]) == [(0, 7)]
    for bad in [(1, 1), (0, 3), (2, 1)]:
        with pytest.raises(ValueError, match=r"word_byte_spans: span .* not within the text's 2 words"):
            k.word_byte_spans("one two", [bad])
    with pytest.raises(TypeError, match="spans must be a sequence"):
        k.word_byte_spans("one two", 5)
