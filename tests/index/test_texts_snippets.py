"""``_kernels.texts_snippets`` (a complete search's chunk texts and snippets in one call without
the GIL) against ``read_texts`` + ``snippets`` + the Python SnippetMaker, and its UTF-8 decoder
against CPython's strict one on every lead byte with the bytes around each continuation limit.
"""

from __future__ import annotations

import itertools
import random
import sys
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsearch.index.native import native_kernels
from drsearch.index.snippet import SnippetMaker

kernels = native_kernels()
pytestmark = pytest.mark.skipif(kernels is None, reason="C kernel not built")

PAGE = 4096
ROOT = 2  # the first table of a fresh file
FAR = 0.0  # no deadline


def _file(path: Path, values: list[bytes | str], page_size: int = PAGE) -> bytes:
    """A SQLite file with chunks(id, doc, text): row i + 1 holds values[i] as TEXT (bytes cast
    as they are, so that invalid UTF-8 is stored too)."""
    conn = apsw.Connection(str(path))
    conn.execute(f"PRAGMA page_size={page_size}")
    conn.execute("CREATE TABLE chunks(id INTEGER PRIMARY KEY, doc INTEGER, text TEXT)")
    with conn:
        for i, v in enumerate(values, 1):
            if isinstance(v, bytes):
                conn.execute("INSERT INTO chunks VALUES (?, 0, CAST(? AS TEXT))", (i, v))
            else:
                conn.execute("INSERT INTO chunks VALUES (?, 0, ?)", (i, v))
    conn.close()
    return path.read_bytes()


def _call(data: bytes, rowids: list[int], maker: SnippetMaker, page_size: int = PAGE):  # type: ignore[no-untyped-def]
    assert kernels is not None
    return kernels.texts_snippets(data, page_size, page_size, ROOT, 2, rowids, maker._stems,
                                  maker._stem_weights, maker.width, FAR)


def _sequences() -> list[bytes]:
    """Every lead byte 0x80-0xFF followed by continuation bytes at and around each limit the
    strict decoder checks (0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0), cut after each
    byte too, between ASCII, Latin-1 and astral neighbours."""
    near = [0x00, 0x41, 0x7F, 0x80, 0x81, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xE0, 0xF0, 0xFF]
    out: list[bytes] = []
    for lead in range(0x80, 0x100):
        # as many continuation bytes as the lead byte asks for (one for a byte no sequence
        # starts with), then one more
        need = 3 if 0xF0 <= lead <= 0xF4 else 2 if 0xE0 <= lead <= 0xEF else 1
        for tail in itertools.product(near, repeat=need):
            seq = bytes([lead, *tail, 0x80])
            out.extend(seq[:cut] for cut in range(1, len(seq) + 1))
    contexts = [(b"", b""), (b"abcdefghij", b"klmnopqrstuv"), ("é".encode(), "ü".encode()),
                ("\U0001f600".encode(), "\u20ac".encode())]
    rng = random.Random(7)
    return [a + s + b for s in out for a, b in [rng.choice(contexts)]]


def test_utf8_is_decoded_or_refused_exactly_as_cpython_does(tmp_path: Path) -> None:
    seqs = _sequences()
    data = _file(tmp_path / "seq.sqlite3", list(seqs))
    maker = SnippetMaker([("klmn", "klmn", 1.0)], width=8)
    refused = 0
    for i, raw in enumerate(seqs, 1):
        try:
            want = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            refused += 1
            with pytest.raises(UnicodeDecodeError) as got:
                _call(data, [i], maker)
            assert str(got.value) == str(e)
            continue
        texts, snippets = _call(data, [i], maker)
        assert texts == [want], raw
        assert snippets == [maker(want)] or snippets == [None]
        _same_object_shape(texts[0], want)
    assert 1_000 < refused < len(seqs) - 1_000  # both outcomes well covered


def _same_object_shape(got: str, want: str) -> None:
    """Equal, and made as CPython makes a str (the narrowest kind; ASCII flagged)."""
    assert got == want
    assert got.isascii() == want.isascii()
    assert hash(got) == hash(want)
    if len(want) > 1:  # a fresh copy of want (a slice takes the narrowest kind), no UTF-8 cached
        assert sys.getsizeof(got) == sys.getsizeof((want + "x")[:-1])


texts_strategy = st.lists(
    st.one_of(
        st.text(st.characters(codec="utf-8"), max_size=600),
        st.text(st.sampled_from("abc é  Ünd \u0130\u03a3 ∑ 東京 \U0001f600\t\n"), max_size=900),
        st.text(st.characters(max_codepoint=0x7F), min_size=200, max_size=3000),
    ),
    min_size=0, max_size=8)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=texts_strategy, terms=st.lists(st.sampled_from(["abc", "und", "ünd", "東京", "é", "∑", "b",
                                                              "\U0001f600x", "i̇", "σ"]), max_size=4),
       width=st.sampled_from([1, 5, 40, 240]), seed=st.integers(0, 2**16))
def test_the_same_texts_and_snippets_as_read_texts_and_snippets(tmp_path: Path, texts: list[str],
                                                               terms: list[str], width: int,
                                                               seed: int) -> None:
    assert kernels is not None
    path = tmp_path / f"t{seed}-{len(texts)}.sqlite3"
    path.unlink(missing_ok=True)
    data = _file(path, list(texts))
    maker = SnippetMaker([(t, t.upper(), 1.0 + i) for i, t in enumerate(terms)], width=width)
    rowids = random.Random(seed).sample(range(1, len(texts) + 1), len(texts))
    got_texts, got_snippets = _call(data, rowids, maker)
    want_texts = kernels.read_texts(data, PAGE, PAGE, ROOT, 2, rowids)
    assert got_texts == want_texts == [texts[r - 1] for r in rowids]
    for g, w in zip(got_texts, want_texts, strict=True):
        _same_object_shape(g, w)
    assert got_snippets == kernels.snippets(want_texts, maker._stems, maker._stem_weights, width, FAR)
    assert maker._finish(got_texts, got_snippets) == maker.many(want_texts, native=False)


@pytest.mark.parametrize("page_size", [512, 4096, 65536])
def test_many_bytes_in_one_call_across_overflow_pages(tmp_path: Path, page_size: int) -> None:
    # 16,384 bytes or more: copied, decoded and searched without the GIL.
    texts = ["long ✓ text about Москва " * 400, "short", "東京 " * 3000 + "end", "\U0001f600" * 5000,
             "plain ascii words " * 900]
    data = _file(tmp_path / "long.sqlite3", list(texts), page_size)
    maker = SnippetMaker([("москв", "Москва", 2.0), ("end", "end", 1.0), ("word", "words", 1.5)])
    got_texts, got_snippets = _call(data, [5, 1, 3, 4, 2, 1], maker, page_size)
    assert got_texts == [texts[i] for i in (4, 0, 2, 3, 1, 0)]
    assert got_snippets == [maker(t) for t in got_texts]
    assert got_snippets[2].endswith("end") and got_snippets[1].startswith("long")


def test_errors_are_read_texts_errors(tmp_path: Path) -> None:
    assert kernels is not None
    data = _file(tmp_path / "e.sqlite3", ["one", "two ✓", b"\xff bad"])
    maker = SnippetMaker([("one", "one", 1.0)])
    args = (maker._stems, maker._stem_weights, maker.width, FAR)
    assert kernels.texts_snippets(data, PAGE, PAGE, ROOT, 2, [], *args) == ([], [])
    with pytest.raises(ValueError, match="row 9: no such row"):
        kernels.texts_snippets(data, PAGE, PAGE, ROOT, 2, [1, 9], *args)
    with pytest.raises(ValueError, match="row 1: record column is not TEXT"):
        kernels.texts_snippets(data, PAGE, PAGE, ROOT, 1, [1], *args)
    with pytest.raises(ValueError, match="invalid file geometry"):
        kernels.texts_snippets(data, PAGE, PAGE, 0, 2, [1], *args)
    with pytest.raises(ValueError, match="invalid file geometry"):
        kernels.texts_snippets(data[: PAGE + 100], PAGE, PAGE, ROOT, 2, [1], *args)
    with pytest.raises(UnicodeDecodeError, match="invalid start byte"):
        kernels.texts_snippets(data, PAGE, PAGE, ROOT, 2, [1, 3], *args)
    with pytest.raises(ValueError, match="width"):
        kernels.texts_snippets(data, PAGE, PAGE, ROOT, 2, [1], maker._stems, maker._stem_weights, 0, FAR)
    with pytest.raises(ValueError, match="1 stems and 0 weights"):
        kernels.texts_snippets(data, PAGE, PAGE, ROOT, 2, [1], ["a"], [], 40, FAR)
    with pytest.raises(ValueError, match="non-empty str"):
        kernels.texts_snippets(data, PAGE, PAGE, ROOT, 2, [1], [""], [1.0], 40, FAR)
    with pytest.raises(TypeError):
        kernels.texts_snippets(data, PAGE, PAGE, ROOT, 2, ["1"], *args)
    # a deadline already passed: None (the caller raises QueryTimeoutError)
    assert kernels.texts_snippets(data, PAGE, PAGE, ROOT, 2, [1, 2], maker._stems,
                                  maker._stem_weights, 40, 1e-9) is None
