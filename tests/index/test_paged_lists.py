"""Posting lists ranked where they lie in the file's pages (``PagedTerm``; the kernels'
``paged`` argument), not copied into the arena first.

On Cranfield (60/45-word chunks: many score ties) in every page layout of page_layouts —
4 KiB pages as built, 1 KiB pages (lists across many overflow pages), 64 KiB pages (every
list in its leaf cell) and 40 reserved bytes a page — every ranked answer is FTS5's own, and
the same whether the lists are paged or copied, at k = 1, 10 and 100, on every pruning mode,
with and without a blocklist and with clamped terms. The kernel refuses a pieces table that
points outside the file, does not add up to its BLOB's length, or whose BLOB is not 12 bytes
a posting (+ block maxima): a ValueError, never a read outside the buffer.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from drsearch.contract import IncompatibleIndexError
from drsearch.index import BlockList, Engine
from drsearch.index.engine import EngineOptions
from drsearch.index.native import native_kernels
from drsearch.index.scoring import PagedTerm, SparseTerm

from ..helpers import best_chunk_per_doc, cranfield_queries, fts5_oracle
from .page_layouts import LAYOUTS, laid_out

pytestmark = pytest.mark.skipif(native_kernels() is None, reason="the C kernel is not built")

QUERIES = [*cranfield_queries()[:40], "the of a flow", "flow", "pressure distribution", "of the"]


PAGE_EVERY_LIST = EngineOptions(paged_list_bytes=0)  # every list the kernel can take, in the pages
COPY_EVERY_LIST = EngineOptions(paged_list_bytes=1 << 62)  # none: every list copied


@pytest.mark.parametrize("layout", LAYOUTS)
def test_paged_lists_rank_as_fts5_and_as_copied_lists(cran_small_chunks: Path, tmp_path: Path,
                                                      layout: str) -> None:
    path = laid_out(cran_small_chunks, tmp_path, layout)
    for pruning in ("auto", "always", "never"):
        with Engine.open(path, pruning=pruning, options=PAGE_EVERY_LIST) as e, \
                Engine.open(path, pruning=pruning, options=COPY_EVERY_LIST) as copying, \
                Engine.open(path, pruning=pruning) as default:
            terms = [t for q in QUERIES for t in e._postings(e.parse(q), 1e18)]
            assert sum(isinstance(t, PagedTerm) for t in terms) > 100
            if layout != "64 KiB pages":  # lists across overflow pages
                assert any(len(t.pieces) > 8 * 5 for t in terms if isinstance(t, PagedTerm))
            for q in QUERIES:
                for k in (1, 10, 100):
                    copied = copying.rank(q, k)
                    assert e.rank(q, k) == copied, (q, k)
                    assert default.rank(q, k) == copied, (q, k)
                    if k == 10 and pruning == "auto":
                        assert copied == best_chunk_per_doc(e, fts5_oracle(e, q), k), q


def test_paged_lists_with_a_blocklist_and_complete_search(cran_small_chunks: Path, tmp_path: Path) -> None:
    with Engine.open(cran_small_chunks) as e:
        docids = [h.docid for q in QUERIES[:10] for h in e.search(q, 3, with_text=False).hits]
    blocked = tmp_path / "block.txt"
    blocked.write_text("".join(f"{d}\n" for d in sorted(set(docids))))
    bl = BlockList.from_file(blocked)
    with Engine.open(cran_small_chunks, blocklist=bl, options=COPY_EVERY_LIST) as copying, \
            Engine.open(cran_small_chunks, blocklist=bl, options=PAGE_EVERY_LIST) as e:
        for q in QUERIES:
            copied = copying.search(q, 10)
            paged = e.search(q, 10)
            assert paged == copied, q
            assert not {h.docid for h in paged.hits} & set(docids)


def test_the_kept_terms_are_bounded_and_answers_do_not_change(cran_small_chunks: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import drsearch.index.engine as engine_mod

    with Engine.open(cran_small_chunks, options=PAGE_EVERY_LIST) as e:
        want = [e.rank(q, 10) for q in QUERIES]
        assert e._kept_terms and e._kept_bytes <= engine_mod._KEPT_TERMS_BYTES
        # a kept term is the same object query after query (no lookup, nothing made)
        kept = dict(e._kept_terms)
        assert [e.rank(q, 10) for q in QUERIES] == want
        assert all(e._kept_terms[name] is t for name, t in kept.items())
    with Engine.open(cran_small_chunks, options=COPY_EVERY_LIST) as e:
        assert [e.rank(q, 10) for q in QUERIES] == want
        assert e._kept_terms  # clamped terms' rows and short lists' copies
        assert not any(isinstance(t, PagedTerm) for t in e._kept_terms.values())
    monkeypatch.setattr(engine_mod, "_KEPT_TERMS_BYTES", 1200)  # a few entries at most
    with Engine.open(cran_small_chunks, options=PAGE_EVERY_LIST) as e:
        assert [e.rank(q, 10) for q in QUERIES] == want
        assert e._kept_bytes <= 1200 or len(e._kept_terms) == 1


def test_terms_are_kept_only_when_their_rows_come_from_the_pages(cran_small_chunks: Path) -> None:
    with Engine.open(cran_small_chunks, options=PAGE_EVERY_LIST) as e:
        e._term_rows = None  # the rows by SQL: every query looks its terms up
        want = e.search("flow boundary layer of the", 10)
        assert not e._kept_terms
    with Engine.open(cran_small_chunks, options=PAGE_EVERY_LIST) as e:
        assert e.search("flow boundary layer of the", 10) == want
        assert e.search("flow boundary layer of the", 10) == want  # from the kept terms
        assert isinstance(e._kept_terms["flow"], PagedTerm) and type(e._kept_terms["the"]) is tuple


def test_a_short_lists_copy_is_kept_read_only_and_ranks_as_a_fresh_read(cran_small_chunks: Path) -> None:
    import drsearch.index.engine as engine_mod

    with Engine.open(cran_small_chunks) as fresh:
        fresh._term_rows = None  # the rows by SQL: nothing kept, every list read again
        # rare terms (a list shorter than a page), alone (the one-term pass) and with others
        queries = [q for q in QUERIES if len(q.split()) > 1][:20]
        rare = [t.term for t in fresh._postings(fresh.parse(" ".join(queries)), 1e18)
                if isinstance(t, SparseTerm)
                and 5 * t.df + 8 * len(t.block_max) <= engine_mod.PAGED_LIST_BYTES][:8]
        assert len(rare) == 8
        asked = [*rare, *(f"{r} flow pressure" for r in rare), *queries]
        want = [fresh.search(q, 10) for q in asked]
        assert not fresh._kept_terms
    with Engine.open(cran_small_chunks) as e:
        assert [e.search(q, 10) for q in asked] == want
        kept = {name: t for name, t in e._kept_terms.items() if isinstance(t, SparseTerm)}
        assert set(rare) <= set(kept)
        for t in kept.values():  # its own bytes, shared by every later query: never writable
            assert 5 * t.df <= engine_mod.PAGED_LIST_BYTES  # (a rowid and a code, at least)
            assert not (t.chunks.flags.writeable or t.impacts.flags.writeable or t.block_max.flags.writeable)
            with pytest.raises(ValueError):
                t.impacts[0] = 0.0
        assert [e.search(q, 10) for q in asked] == want  # the kept copies: the same answers
        assert all(e._kept_terms[name] is t for name, t in kept.items())  # not read again
        got = e._postings(e.parse(rare[0]), 1e18)[0]
        assert got is kept[rare[0]]


def test_a_paged_terms_copy_is_its_list(cran_small_chunks: Path) -> None:
    with Engine.open(cran_small_chunks, options=PAGE_EVERY_LIST) as e, \
            Engine.open(cran_small_chunks, options=COPY_EVERY_LIST) as copying:
        term = next(t for t in e._postings(e.parse("flow"), 1e18) if isinstance(t, PagedTerm))
        copied = next(t for t in copying._postings(copying.parse("flow"), 1e18) if t is not None)
        assert isinstance(copied, SparseTerm)
        got = term.read()
        assert got.df == copied.df and got.max_impact == copied.max_impact
        assert np.array_equal(got.chunks, copied.chunks) and np.array_equal(got.impacts, copied.impacts)
        assert np.array_equal(got.block_max, copied.block_max)


def test_a_pieces_table_of_another_length_names_the_row(cran_small_chunks: Path) -> None:
    with Engine.open(cran_small_chunks, options=PAGE_EVERY_LIST) as e:
        term = next(t for t in e._postings(e.parse("flow"), 1e18) if isinstance(t, PagedTerm))
        assert e._term_rows is not None
        (row,) = e._term_rows.find(["flow"])
        assert row is not None
        tid = row[0]
        nbytes = int.from_bytes(term.pieces[:8], "little")
        assert e._pages is not None
        with pytest.raises(IncompatibleIndexError, match=f"row {tid}: {nbytes} bytes, expected {nbytes + 8}"):
            e._pages.pieces(tid, nbytes + 8)  # another expected length
        # (a coded list's descriptor: its pieces, then its code width and table)
        assert term.pieces.startswith(e._pages.pieces(tid, nbytes))
        with pytest.raises(IncompatibleIndexError, match=r"postings\.data"):
            e._pages.pieces(10**9, 4096)  # no such row


def _call(table: np.ndarray, file: bytes, df: int, with_bmax: bool = False, bp: int = 64) -> object:
    k = native_kernels()
    assert k is not None
    n_rows = 10
    out_c, out_s = np.zeros(n_rows + 1, np.int64), np.zeros(n_rows + 1)
    chunk_doc = np.arange(n_rows + 1, dtype=np.int32)
    paged = (memoryview(file), [(df, table.tobytes())])
    return k.rank_maxscore([None], [None], np.array([9.0]), n_rows, None, chunk_doc, 10, -1.0,
                           np.zeros(64), out_c, out_s, 0.0, None, [None] if with_bmax else None, bp,
                           paged)


def test_the_kernel_refuses_a_table_it_cannot_read_within_the_file() -> None:
    imps, rows = np.array([1.0, 2.0, 3.0]), np.array([1, 4, 9], dtype=np.uint32)
    blob = imps.tobytes() + rows.tobytes()  # 36 bytes
    file = b"xx" + blob[:20] + b"y" + blob[20:]
    good = np.array([36, 20, 16, 2, 23], dtype=np.int64)
    n, _, _ = _call(good, file, 3)  # type: ignore[misc]
    assert n == 3
    bad = {
        "past the file": [36, 20, 16, 2, len(file) - 15],
        "negative offset": [36, 20, 16, -1, 23],
        "a piece missing": [36, 20, 8, 2, 23],
        "a piece too many": [36, 20, 16, 2, 23, 23],
        "first longer than the BLOB": [36, 40, 16, 2, 23],
        "no table": [36, 20],
        "per of zero": [36, 20, 0, 2, 23],
    }
    for why, t in bad.items():
        with pytest.raises(ValueError, match="pieces") as err:
            _call(np.array(t, dtype=np.int64), file, 3)
        assert err.value, why
    with pytest.raises(ValueError, match="12 bytes a posting"):
        _call(good, file, 4)  # 36 bytes are not 4 postings
    with pytest.raises(ValueError, match="12 bytes a posting"):
        _call(np.array([36 + 8, 20, 24, 2, 23], dtype=np.int64), file + b"z" * 8, 3, True, 1)
    blob = imps.tobytes() + np.array([1, 4, 11], dtype=np.uint32).tobytes()  # a rowid past n_rows
    with pytest.raises(ValueError, match="not ascending"):
        _call(np.array([36, 36, 16, 0], dtype=np.int64), blob, 3)
