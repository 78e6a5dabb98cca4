"""The C snippets (``_kernels.snippets``) against SnippetMaker's Python code, character for character.

The kernel matches on a per-code-point lower case; the first tests pin what that rests on
(CPython's tables, every code point), the rest compare whole snippets on random and real text.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drsearch.contract import QueryTimeoutError
from drsearch.index import Engine
from drsearch.index.engine import EngineOptions
from drsearch.index.native import native_kernels
from drsearch.index.snippet import SnippetMaker

from ...helpers import cranfield_queries

kernels = native_kernels()
pytestmark = pytest.mark.skipif(kernels is None, reason="C kernel not built")

# What the Python code is left: characters whose lower case is not one code point by itself.
PYTHON_ONLY = {0x130, 0x3A3}


def test_every_code_point_is_classified_as_str_does() -> None:
    assert kernels is not None
    text = "".join(map(chr, range(0x110000)))
    low, alnum, space = kernels.snippet_chars(text)
    assert len(low) == len(alnum) == len(space) == 0x110000
    wrong_lower = [hex(c) for c in range(0x110000) if c not in PYTHON_ONLY and chr(c).lower() != low[c]]
    wrong_alnum = [hex(c) for c in range(0x110000) if chr(c).isalnum() != bool(alnum[c])]
    wrong_space = [hex(c) for c in range(0x110000) if chr(c).isspace() != bool(space[c])]
    assert (wrong_lower, wrong_alnum, wrong_space) == ([], [], [])


def test_only_the_python_only_characters_lower_otherwise() -> None:
    # str.lower() is per code point except these: U+0130 lowers to two code points, capital
    # sigma to a final or medial sigma by context. A Python whose tables add one fails here.
    multi = {c for c in range(0x110000) if len(chr(c).lower()) != 1}
    assert multi == {0x130}
    assert "ΑΣ ΑΣΑ".lower() == "ας ασα"


def _both(maker: SnippetMaker, texts: list[str]) -> tuple[list[str], list[str]]:
    return maker.many(texts), maker.many(texts, native=False)


# Words, separators and the characters that test the edges: accented and non-Latin letters,
# digits that are alphanumeric but not ASCII, combining marks, non-ASCII spaces, the
# Python-only characters, and letters whose lower case is another script's (K -> k, Kelvin).
_PIECES = st.sampled_from([
    "boundary", "Boundary", "BOUNDARIES", "layer", "layers", "flow", "café", "CAFÉ", "straße",
    "ΣΟΦΙΑ", "σοφία", "İstanbul", "istanbul", "москва", "Москва", "東京", "²", "x²y", "e\u0301",
    "\u212a", "k", " ", "  ", "\u00a0", "\u2003", "\n", "\t", "-", ".", ",", "(", ")", "'", "_",
    "1", "2024", "a", "the",
])
_TEXTS = st.lists(_PIECES, min_size=0, max_size=120).map("".join)
_STEMS = st.lists(st.tuples(st.sampled_from(["boundari", "layer", "flow", "café", "straß", "σοφ",
                                              "istanbul", "москв", "東京", "x", "e", "k", "1",
                                              "2024", "the", "a"]),
                            st.sampled_from([1e-6, 0.5, 1.0, 2.25, 3.0, 7.5])),
                  min_size=0, max_size=6)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(texts=st.lists(_TEXTS, min_size=1, max_size=5), stems=_STEMS,
       width=st.sampled_from([1, 5, 12, 40, 80, 240]))
def test_random_texts_give_the_same_snippets(texts: list[str], stems: list[tuple[str, float]],
                                             width: int) -> None:
    maker = SnippetMaker([(s, s, w) for s, w in stems], width=width)
    native, python = _both(maker, texts)
    assert native == python


def test_long_texts_are_made_without_the_gil_and_agree() -> None:
    # 16,384 code points or more in all: the kernel releases the GIL for them.
    maker = SnippetMaker([("boundari", "boundary", 3.0), ("layer", "layers", 1.5)])
    filler = "The flow is steady and the wall is smooth. " * 100
    texts = [filler + "A boundary layer forms. " + filler, "Σ " + filler + " boundary", filler,
             "İ boundary " + filler, filler[:100]]
    assert sum(map(len, texts)) >= 16384
    native, python = _both(maker, texts)
    assert native == python
    assert native[0].count("boundary layer") == 1 and native[0].startswith("…")


def test_the_kernel_leaves_context_dependent_text_to_python() -> None:
    assert kernels is not None
    text = "x " * 200 + "ΟΔΟΣ boundary"
    assert kernels.snippets([text, "İ" + text, text.replace("Σ", "s")], ["boundari"], [1.0], 40,
                            0.0)[:2] == [None, None]


def test_a_passed_deadline_raises() -> None:
    maker = SnippetMaker([("boundari", "boundary", 3.0)], deadline=time.monotonic() - 1)
    with pytest.raises(QueryTimeoutError):
        maker.many(["boundary " * 100])
    with pytest.raises(QueryTimeoutError):
        maker.many(["boundary " * 100], native=False)


def test_the_deadline_stops_the_kernel_midway() -> None:
    assert kernels is not None
    texts = ["a b " * 50_000] * 400  # 40 M code points of word starts: seconds of work
    t = time.monotonic()
    assert kernels.snippets(texts, ["b", "a"], [1.0, 2.0], 240, time.monotonic() + 0.02) is None
    assert time.monotonic() - t < 0.5
    assert kernels.snippets(texts[:2], ["b", "a"], [1.0, 2.0], 240, 0.0) is not None


def test_many_stems_agree() -> None:
    # A query at the term cap: 1,024 stems, many sharing a first character (one bucket).
    words = [f"w{i}x" for i in range(1024)]
    maker = SnippetMaker([(w, w, 1.0 + i % 7) for i, w in enumerate(words)])
    texts = [" ".join(words[i::3]) + " tail" for i in range(3)] + ["x " * 300 + "w1000x w5x"]
    native, python = _both(maker, texts)
    assert native == python


def test_bad_arguments_are_refused() -> None:
    assert kernels is not None
    with pytest.raises(ValueError, match="stems and"):
        kernels.snippets(["text"], ["a", "b"], [1.0], 40, 0.0)
    with pytest.raises(ValueError, match="non-empty str"):
        kernels.snippets(["text"], [""], [1.0], 40, 0.0)
    with pytest.raises(TypeError, match="not a str"):
        kernels.snippets([b"text"], ["a"], [1.0], 40, 0.0)
    with pytest.raises(ValueError, match="width"):
        kernels.snippets(["text"], ["a"], [1.0], 0, 0.0)
    with pytest.raises(TypeError):
        kernels.snippets(["text"], ["a"], ["heavy"], 40, 0.0)


def _compare_searches(path: Path, queries: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    """Run every query's complete search with a SnippetMaker.of_rows (the engine's call: texts
    and snippets read and made in C in one call) that checks its texts against read_texts and
    its snippets against the Python code's; the number of snippets compared."""
    compared = 0
    of_rows = SnippetMaker.of_rows

    def checked(self: SnippetMaker, column: Any, rowids: Any) -> tuple[list[str], list[str]]:
        nonlocal compared
        texts, got = of_rows(self, column, rowids)
        assert texts == column.read_texts(rowids)
        assert got == self.many(texts, native=False) == self.many(texts)
        compared += len(texts)
        return texts, got

    monkeypatch.setattr(SnippetMaker, "of_rows", checked)
    # of_rows after the ranking (the same texts: test_texts_with_ranking.py)
    with Engine.open(path, options=EngineOptions(texts_with_ranking=False)) as e:
        for q in queries:
            e.search(q, 20)
    return compared


def test_real_chunks_give_the_same_snippets(sample_index: Path, cran_index: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # The sample crawl: real web pages (several languages); Cranfield: the technical abstracts.
    sample_queries = ["video game streaming subscription", "Stadia launch price", "black friday deals",
                      "pokemon sword shield review", "apple airpods", "the", "2019 release date",
                      "Google Microsoft Sony", "price €", "Москва", "東京"]
    assert _compare_searches(sample_index, sample_queries, monkeypatch) >= 100
    assert _compare_searches(cran_index, cranfield_queries()[:60], monkeypatch) >= 600


def test_the_engines_kept_stems_make_the_makers_snippet_plan(sample_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Engine._snippets keeps each (term, spelling)'s (stem, weight): the plan it makes, from
    fresh pairs and from kept ones, and after the kept dict starts over at its bound, is the
    one SnippetMaker makes from the (term, spelling, IDF) triples."""
    from drsearch.index import engine as engine_module
    from drsearch.index.scoring import bm25_idf

    queries = ["Stadia launch price", "STADIA Launches prices", "the of a and", "Москва price", "東京 2019"]
    monkeypatch.setattr(engine_module, "_SNIPPET_STEMS_MAX", 4)  # starts over within these queries
    with Engine.open(sample_index) as e:
        for _ in range(2):  # fresh pairs, then kept ones
            for q in queries:
                parsed = e.parse(q)
                terms = e._postings(parsed, time.monotonic() + 60)
                want = SnippetMaker([(qt.term, qt.surface, bm25_idf(e.scorer.n_rows, t.df))
                                     for qt, t in zip(parsed.terms, terms, strict=True) if t is not None])
                got = e._snippets(parsed, terms, time.monotonic() + 60)
                assert (got._stems, got._stem_weights, got._weights) == (
                    want._stems, want._stem_weights, want._weights), q
                assert len(e._snippet_stems) <= 4
