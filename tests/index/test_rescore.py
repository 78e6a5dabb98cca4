"""``_kernels.rescore`` (the exact rescoring beside clamped-IDF terms and its top k, in C) against
the numpy code it replaces (``Scorer._rescore`` + ``_finish``) on a small corpus with every kind
of term, and its refusals. The random corpora of test_scoring_properties.py run it on every
paged C path; test_postings_read.py runs it on a real index against FTS5."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from drsearch.index.native import native_kernels
from drsearch.index.scoring import IDF_FLOOR, DenseTerm, PagedTerm, Scorer, SparseTerm

kernels = native_kernels()
pytestmark = pytest.mark.skipif(kernels is None, reason="C kernel not built")


def _corpus() -> dict[str, Any]:
    rng = np.random.default_rng(11)
    chunk_doc = np.concatenate([[0], np.repeat(np.arange(1, 31), rng.integers(1, 5, size=30))]).astype(np.int32)
    n_rows = len(chunk_doc) - 1
    chunk_len = np.concatenate([[0], rng.integers(1, 60, size=n_rows)]).astype(np.int32)
    rows = np.unique(rng.integers(1, n_rows + 1, size=40)).astype(np.uint32)
    imps = rng.choice([0.5, 1.0, 2.0], size=len(rows))
    tfs = (rng.integers(0, 4, size=n_rows + 1)).astype(np.uint16)
    tfs[0] = 0
    # a paged list: its BLOB (impacts, rowids) and the tf BLOB in pieces of 7 bytes of a buffer
    blob_list = imps.tobytes() + rows.tobytes()
    blob_tfs = tfs.astype("<u2").tobytes()
    buf = bytearray(b"\xee" * 5)
    tables = []
    for blob in (blob_list, blob_tfs):
        offs = []
        for at in range(0, len(blob), 7):
            offs.append(len(buf))
            buf += blob[at : at + 7] + b"\xee"
        tables.append(np.array([len(blob), min(7, len(blob)), 7, *offs], dtype=np.int64).tobytes())
    return {"chunk_doc": chunk_doc, "chunk_len": chunk_len, "rows": rows, "imps": imps, "tfs": tfs,
            "file": memoryview(bytes(buf)), "list_table": tables[0], "tfs_table": tables[1]}


def _args(c: dict[str, Any], scorer: Scorer) -> tuple[Any, ...]:
    return (c["chunk_len"], scorer.k1, scorer.b, scorer._avgdl, scorer.k1p1, IDF_FLOOR, c["chunk_doc"])


@pytest.mark.parametrize("k", [1, 3, 10, 100])
def test_every_kind_of_term_scores_and_orders_as_numpy(k: int) -> None:
    assert kernels is not None
    c = _corpus()
    scorer = Scorer(c["chunk_doc"], c["chunk_len"], native=True)
    n_rows = scorer.n_rows
    cand = np.arange(1, n_rows + 1, 2, dtype=np.int64)  # every other chunk
    sparse = SparseTerm("s", len(c["rows"]), c["rows"], c["imps"], float(c["imps"].max()))
    paged = PagedTerm("p", len(c["rows"]), float(c["imps"].max()), c["file"], c["list_table"], lambda: sparse)
    dense = DenseTerm("d", int(np.count_nonzero(c["tfs"])), lambda: c["tfs"], None)
    want = scorer._finish(cand.copy(), scorer._rescore(cand.copy(), [sparse, dense, sparse, dense]), k)
    assert len(want) == min(k, len(set(c["chunk_doc"][cand].tolist())))
    specs = [
        [(1, c["rows"], c["imps"]), (3, c["tfs"][cand]), (1, c["rows"], c["imps"]), (3, c["tfs"][cand])],
        [(0, len(c["rows"]), c["list_table"]), (2, c["tfs_table"]), (1, c["rows"], c["imps"]),
         (2, c["tfs_table"])],
    ]
    for spec in specs:
        got = kernels.rescore(cand.astype(np.uint32), spec, c["file"], *_args(c, scorer), k)
        assert got == want  # the same floats, bit for bit, and the same order
    # through the scorer: a paged clamped term, a list in the pages, arrays
    paged_dense = DenseTerm("d", dense.df, dense.load, None, (c["file"], c["tfs_table"]))
    assert scorer._rescore_native(cand, [paged, paged_dense, sparse, dense], k) == (want, None)
    assert kernels.rescore(np.empty(0, np.uint32), specs[1], c["file"], *_args(c, scorer), k) == []
    # the kernel reads one file: terms left in two are refused, not read from the wrong one
    elsewhere = DenseTerm("d", dense.df, dense.load, None, (memoryview(bytes(c["file"])), c["tfs_table"]))
    with pytest.raises(ValueError, match="more than one file"):
        scorer._rescore_native(cand, [paged, elsewhere], k)


def test_bad_arguments_are_refused() -> None:
    assert kernels is not None
    c = _corpus()
    scorer = Scorer(c["chunk_doc"], c["chunk_len"], native=True)
    cand = np.array([1, 2, 5], dtype=np.uint32)
    ok = [(1, c["rows"], c["imps"])]

    def call(cands: Any = cand, spec: Any = ok, file: Any = c["file"], k: int = 3) -> Any:
        assert kernels is not None
        return kernels.rescore(cands, spec, file, *_args(c, scorer), k)

    assert call()  # the baseline is accepted
    n_rows = scorer.n_rows
    for bad in (np.array([2, 1], np.uint32), np.array([1, 1], np.uint32), np.array([0], np.uint32),
                np.array([n_rows + 1], np.uint32)):
        with pytest.raises(ValueError, match="not ascending within the rowids"):
            call(bad)
    with pytest.raises(ValueError, match="inconsistent"):
        call(k=0)
    with pytest.raises(ValueError, match="kind 0-3"):
        call(spec=[(4, c["rows"], c["imps"])])
    with pytest.raises(ValueError, match="kind 0-3"):
        call(spec=[[1, c["rows"], c["imps"]]])
    with pytest.raises(ValueError, match="differ in length"):
        call(spec=[(1, c["rows"], c["imps"][:-1])])
    with pytest.raises(ValueError, match="one tf per candidate"):
        call(spec=[(3, c["tfs"][:2])])
    with pytest.raises(ValueError, match="tf BLOB of"):  # a list's table given as a tf BLOB's
        call(spec=[(2, c["list_table"])])
    with pytest.raises(ValueError, match="not a table of a BLOB within the file"):
        call(spec=[(2, c["tfs_table"])], file=c["file"][:40])
    with pytest.raises(ValueError, match="12 bytes a posting"):
        call(spec=[(0, len(c["rows"]) + 1, c["list_table"])])
    with pytest.raises(TypeError):
        call(spec=[(1, c["rows"])])
