"""How a query's posting lists are read: with the C kernel built, the term rows and every list
from the file's pages; else (and when a term's row cannot be read from its page) the short
lists with the term rows (one SQL round trip for the whole query), the long ones into the
per-thread arena, from the file's pages or by blob I/O (``READERS``).

Every read must hand the scorer the same lists: every threshold (all by blob, a mix, all
with the rows) ranks exactly as FTS5's bm25() — single terms of every df (fewer postings than
k, more, one block, across block boundaries), absent terms, queries of more terms than the
statement's placeholders (the JSON-array form) — and a damaged or missing list is the same
loud CorruptIndexError on either path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest

from drsearch.contract import CorruptIndexError
from drsearch.index import Engine
from drsearch.index.engine import _PLACEHOLDER_TERMS, INLINE_POSTINGS, EngineOptions
from drsearch.index.listcodes import rowids_at
from drsearch.index.native import native_kernels

from ..helpers import best_chunk_per_doc, cranfield_queries, fts5_oracle

QUERIES = cranfield_queries()[:40]
# all by the reader; lists of one block with the rows, longer ones read; the default; all inline
THRESHOLDS = [0, 64, INLINE_POSTINGS, 10**9]
# "term pages": the term rows and every list from the file's pages (as opened, with the
# kernel; the thresholds do not apply); "pages": the term rows by SQL, long lists from the
# pages; "blob api": the term rows by SQL, long lists by blob I/O (as without the kernel).
READERS = ["term pages", "pages", "blob api"] if native_kernels() is not None else ["blob api"]


def use_reader(e: Engine, reader: str) -> None:
    if reader != "term pages":
        e._term_rows = None
    if reader == "blob api":
        e._pages = None
    assert (e._pages is not None) == (reader != "blob api")
    assert (e._term_rows is not None) == (reader == "term pages")


def single_terms(e: Engine) -> list[str]:
    """One indexed sparse term per df class: 1, below k=10, one block (64), just past it,
    several blocks, and the longest list (past INLINE_POSTINGS on this corpus)."""
    out = []
    for lo, hi in [(1, 1), (2, 9), (64, 64), (65, 70), (129, 400), (INLINE_POSTINGS + 1, 10**9)]:
        row = e._conn.execute("SELECT term FROM terms WHERE dense = 0 AND df BETWEEN ? AND ? "
                              "AND term GLOB '[a-z]*' ORDER BY df DESC, term LIMIT 1", (lo, hi)).fetchone()
        assert row is not None, (lo, hi)
        out.append(row[0])
    return out


def many_terms(e: Engine, n: int) -> str:
    return " ".join(t for (t,) in e._conn.execute(
        "SELECT term FROM terms WHERE term GLOB '[a-z][a-z][a-z]*' ORDER BY df DESC LIMIT ?", (n,)))


@pytest.fixture(scope="module")
def engine(cran_small_chunks: Path) -> Engine:
    return Engine.open(cran_small_chunks)


@pytest.mark.parametrize("reader", READERS)
@pytest.mark.parametrize("inline", THRESHOLDS)
def test_every_threshold_ranks_as_fts5(cran_small_chunks: Path, inline: int, reader: str) -> None:
    engine = Engine.open(cran_small_chunks, options=EngineOptions(inline_postings=inline))
    use_reader(engine, reader)
    try:
        wide = many_terms(engine, _PLACEHOLDER_TERMS + 8)
        assert len(engine.parse(wide).terms) > _PLACEHOLDER_TERMS  # the JSON-array statement
        queries = [*QUERIES, *single_terms(engine), "zzqqxx", "zzqqxx flow", wide]
        for q in queries:
            for k in (1, 10, 100):
                oracle = best_chunk_per_doc(engine, fts5_oracle(engine, q), k)
                assert engine.rank(q, k) == oracle, (q, k)
    finally:
        engine.close()


def test_every_read_gives_the_same_hits(cran_small_chunks: Path) -> None:
    answers = []
    for reader in READERS:
        for inline in (0, 10**9):
            with Engine.open(cran_small_chunks, options=EngineOptions(inline_postings=inline)) as engine:
                use_reader(engine, reader)
                queries = [*QUERIES[:10], *single_terms(engine)]
                answers.append([engine.search(q, 20).to_dict() for q in queries])
    assert len(answers) == 2 * len(READERS)
    assert all(a == answers[0] for a in answers)


@pytest.mark.parametrize("path", [(0, r) for r in READERS] + [(10**9, "inline")],
                         ids=lambda p: f"{p[1]}")
@pytest.mark.parametrize("damage", ["truncated", "missing"])
def test_a_damaged_posting_list_is_corrupt_on_every_path(cran_small_chunks: Path, tmp_path: Path,
                                                         path: tuple[int, str], damage: str) -> None:
    inline, reader = path
    crafted = tmp_path / "crafted.sqlite3"
    crafted.write_bytes(cran_small_chunks.read_bytes())
    conn = apsw.Connection(str(crafted))
    term, tid = conn.execute("SELECT term, id FROM terms WHERE dense = 0 AND df BETWEEN 2 AND 9 "
                             "AND term GLOB '[a-z]*' ORDER BY term LIMIT 1").fetchone()
    if damage == "truncated":
        conn.execute("UPDATE postings SET data = substr(data, 1, length(data) - 4) WHERE id = ?", (tid,))
    else:
        conn.execute("DELETE FROM postings WHERE id = ?", (tid,))
    conn.close()
    with Engine.open(crafted, options=EngineOptions(inline_postings=inline)) as e:
        if reader != "inline":
            use_reader(e, reader)
        else:
            e._term_rows = None  # the short lists with the term rows, by SQL
        with pytest.raises(CorruptIndexError, match=f"postings.data row {tid}"):
            e.search(term, 10)
        assert e.search("flow", 10).hits  # the rest of the file still answers


def test_picked_tfs_of_a_clamped_term_are_its_array_entries(engine: Engine) -> None:
    tid = engine._db().execute("SELECT id FROM terms WHERE dense = 1 ORDER BY df LIMIT 1").fetchone()[0]
    full = engine._dense_loader(tid)().copy()
    n = engine.scorer.n_rows
    rows = np.array([n, 0, 1, 7, 7, n // 2, n - 1], dtype=np.int64)  # any order, repeats, both ends
    assert engine._dense_picker(tid)(rows).tolist() == full[rows].tolist()
    assert engine._dense_picker(tid)(rows[:0]).tolist() == []


@pytest.mark.parametrize("pick_min", [0, 16, 10**9])
def test_clamped_terms_rank_as_fts5_picked_or_loaded(cran_small_chunks: Path, monkeypatch: pytest.MonkeyPatch,
                                                      pick_min: int) -> None:
    from drsearch.index import terms

    # the tfs picked or loaded by blob I/O
    engine = Engine.open(cran_small_chunks, options=EngineOptions(paged_dense=False))
    monkeypatch.setattr(terms, "DENSE_PICK_MIN", pick_min)
    if not pick_min:
        monkeypatch.setattr(terms, "DENSE_PICK_SHIFT", 63)  # no row is ever picked
    picks: list[int] = []
    real = engine._dense_picker

    def counting(tid: int) -> Any:
        pick = real(tid)
        return lambda rows: picks.append(len(rows)) or pick(rows)

    monkeypatch.setattr(engine, "_dense_picker", counting)
    for q in ["the of a", "the flow", "a theory of the boundary layer", "is the and of", *QUERIES[:20]]:
        for k in (1, 10, 100):
            assert engine.rank(q, k) == best_chunk_per_doc(engine, fts5_oracle(engine, q), k), (q, k)
    assert bool(picks) == (pick_min > 0)  # picked when allowed, else every array loaded
    assert max(picks, default=0) <= pick_min
    engine.close()


def test_clamped_terms_rank_as_fts5_read_from_the_pages(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    """With the kernel, the exact rescoring beside clamped terms reads their tfs from the file's
    pages (``_kernels.rescore``): nothing picked by blob I/O, the same ranking. (A query whose
    clamped terms matter everywhere, e.g. of clamped terms only, still loads their arrays.)"""
    if engine._file is None:
        pytest.skip("C kernel not built")
    used: list[int] = []
    real_pick = engine._dense_picker
    monkeypatch.setattr(engine, "_dense_picker", lambda tid: lambda rows: used.append(1) or real_pick(tid)(rows))
    rescored: list[int] = []  # rescorings in C: in the ranking's call, or after it
    real = engine.scorer._rescore_native
    monkeypatch.setattr(engine.scorer, "_rescore_native",
                        lambda cand, terms, k, *texts: rescored.append(len(cand)) or real(cand, terms, k, *texts))
    real_run = engine.scorer._run_rescored

    def run_rescored(*args: Any) -> Any:
        got = real_run(*args)
        if got is not None:
            rescored.append(len(got[0]))
        return got

    monkeypatch.setattr(engine.scorer, "_run_rescored", run_rescored)
    for q in ["the of a", "the flow", "a theory of the boundary layer", "is the and of", *QUERIES[:20]]:
        for k in (1, 10, 100):
            assert engine.rank(q, k) == best_chunk_per_doc(engine, fts5_oracle(engine, q), k), (q, k)
    assert rescored and not used and engine._dense_tables


def test_a_damaged_clamped_term_is_corrupt(cran_small_chunks: Path, tmp_path: Path) -> None:
    crafted = tmp_path / "crafted.sqlite3"
    crafted.write_bytes(cran_small_chunks.read_bytes())
    conn = apsw.Connection(str(crafted))
    tid = conn.execute("SELECT id FROM terms WHERE term = 'the'").fetchone()[0]
    conn.execute("UPDATE dense_tfs SET tfs = substr(tfs, 1, 100) WHERE id = ?", (tid,))
    conn.close()
    for paged_dense in (True, False):  # its pieces read from the pages, or blob I/O
        with Engine.open(crafted, options=EngineOptions(paged_dense=paged_dense)) as e, \
                pytest.raises(CorruptIndexError, match=f"dense_tfs.tfs row {tid}: 100 bytes"):
            e.search("the boundary layer", 10)


def test_the_arena_is_reset_every_query_whatever_it_holds(engine: Engine,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A query of clamped terms only loads their whole tf arrays from the per-thread arena: the
    next query must start from an empty arena, not grow it (2 bytes per chunk per term each time)."""
    from drsearch.index import terms

    monkeypatch.setattr(terms, "DENSE_PICK_MIN", 0)
    monkeypatch.setattr(terms, "DENSE_PICK_SHIFT", 63)  # every clamped term's array is loaded
    engine.rank("the of a", 10)
    after_one = engine._arena()._offset
    assert after_one >= 2 * (engine.scorer.n_rows + 1)  # the query did take from the arena
    for _ in range(4):
        engine.rank("the of a", 10)
    assert engine._arena()._offset == after_one


@pytest.mark.parametrize("damage", ["descending", "repeated", "past_the_end", "rowid_zero"])
def test_a_damaged_short_list_is_corrupt_on_the_one_term_path(cran_small_chunks: Path, tmp_path: Path,
                                                              damage: str) -> None:
    """The one-term fast path checks a list as the kernel does (ascending, rowids 1..n)."""
    crafted = tmp_path / "crafted.sqlite3"
    crafted.write_bytes(cran_small_chunks.read_bytes())
    conn = apsw.Connection(str(crafted))
    term, tid, df, width, n_table, data = conn.execute(
        "SELECT t.term, t.id, t.df, t.width, t.n_table, p.data FROM terms t JOIN postings p ON p.id = t.id "
        "WHERE t.dense = 0 AND t.df BETWEEN 3 AND 9 AND t.term GLOB '[a-z]*' ORDER BY t.term LIMIT 1").fetchone()
    n_rows = conn.execute("SELECT max(rowid) FROM chunks").fetchone()[0]
    at = rowids_at(df, width, n_table)  # (after its table and codes: listcodes.py)
    chunks = np.frombuffer(data, "<u4", df, at).copy()
    if damage == "descending":
        chunks[[0, 1]] = chunks[[1, 0]]
    elif damage == "repeated":
        chunks[1] = chunks[0]
    elif damage == "past_the_end":
        chunks[-1] = n_rows + 1
    else:
        chunks[0] = 0
    damaged = bytearray(data)
    damaged[at: at + 4 * df] = chunks.tobytes()
    conn.execute("UPDATE postings SET data = ? WHERE id = ?", (bytes(damaged), tid))
    conn.close()
    with Engine.open(crafted) as e:
        assert e.scorer.single_term_postings >= df  # the query takes the fast path
        with pytest.raises(CorruptIndexError):
            e.search(term, 10)
        assert e.search("flow", 10).hits
