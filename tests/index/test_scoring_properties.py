"""Property tests: the C kernel's paths rank exactly as numpy on arbitrary small corpora.

The numpy path is the one checked against FTS5's own bm25() (test_ranking.py); here random
posting lists — with many exact score ties, blocked chunks, clamped (dense) terms, sparse
terms in half the chunks or more, tiny blocks so that lists and documents cross block
boundaries, a single term of 1 to 80 postings (the one-term fast path and the kernels
below and above its limit), terms of very different weights (so that MaxScore moves the
light ones to the non-essential side early), bounds looser than a list's maximum, block maxima over posting
blocks of 1 to 64 postings (exact, looser, or absent for some lists), a single rare term or
up to 20 terms, k from 1 to 100 — must give the same ordered (chunk, score) lists on the
block-max pruning path (rank_maxscore with block maxima), the per-term-bounds pruning path
(rank_maxscore without, as for a version-1 file), the every-posting path (rank_blocks) and
numpy — each without the one-term fast path — and the fast path, bit for bit. The three C
paths run again with every sparse list left "in the file's pages" (PagedTerm): each list's
BLOB (impacts, rowids, block maxima) cut into pieces of a random first length and 8 to 509
bytes each (so that impacts, rowids and block maxima straddle pieces), scattered out of order
in a buffer of random bytes, as the engine ranks lists of more than a page, and every clamped
term's tf array likewise (the exact rescoring beside clamped terms then runs in C,
``_kernels.rescore``, reading the tfs there; on the other C paths it picks them first). Each
paged list takes one of schema 5's layouts at random (listcodes.py): raw float64 impacts, or
1- or 2-byte codes into a table of its distinct impacts (the codes straddle pieces too).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsearch.index import listcodes
from drsearch.index.native import NATIVE_AVAILABLE
from drsearch.index.scoring import DenseTerm, PagedTerm, Scorer, SparseTerm

pytestmark = pytest.mark.skipif(not NATIVE_AVAILABLE, reason="drsearch.index._kernels not built")

# A few impact values only, so that sums tie exactly and often; each term scales them by a
# power of two (exact), so that terms' upper bounds differ by orders of magnitude.
IMPACTS = [0.25, 0.5, 1.0, 1.5, 2.0, 3.0]
SCALES = [2.0**-6, 2.0**-3, 1.0, 8.0]
# mode -> (Scorer kind, pruning, whether the lists keep their block maxima)
MODES = {"blockmax": ("c-maxscore", "always", True), "maxscore": ("c-maxscore", "always", False),
         "blocks": ("c-blocks", "never", True), "numpy": ("numpy", "never", True),
         "one-term": ("c-auto", "auto", True), "one-term-numpy": ("numpy", "auto", True)}
# The modes that keep the one-term fast path on: in C (rank_one) and in Python (numpy path).
FAST_PATH = {"one-term", "one-term-numpy"}
# The C modes run again on paged lists (the same lists, left in pieces of a buffer).
PAGED = {"blockmax-paged": "blockmax", "maxscore-paged": "maxscore", "blocks-paged": "blocks",
         "one-term-paged": "one-term"}


def page_out(terms: list[SparseTerm | DenseTerm], seed: int, with_blocks: bool,
             ) -> list[SparseTerm | DenseTerm | PagedTerm]:
    """Each sparse term as a PagedTerm: its BLOB in pieces (a random first piece, then ``per``
    bytes each) at shuffled places of one buffer of random bytes, with blob_pieces' table; each
    clamped term's tf array (its dense_tfs BLOB, uint16 per rowid) likewise, as its ``paged``
    (what the C rescoring reads; odd piece lengths put a tf across two pieces)."""
    rng = np.random.default_rng(seed)
    blobs, codes = [], []
    for t in terms:
        if isinstance(t, SparseTerm):
            blob, code = coded_blob(t, int(rng.choice([1, 2, 8])), with_blocks)
            blobs.append(blob)
            codes.append(code)
        else:
            blobs.append(t.load().astype("<u2").tobytes())
            codes.append(b"")
    pieces: list[tuple[int, bytes]] = []  # (term, piece bytes), in BLOB order per term
    shapes: list[tuple[int, int]] = []
    for i, blob in enumerate(blobs):
        if not blob:
            shapes.append((0, 0))
            continue
        first = int(rng.integers(1, len(blob) + 1))
        per = int(rng.choice([8, 12, 13, 20, 61, 64, 509]))
        shapes.append((first, per))
        pieces.append((i, blob[:first]))
        pieces += [(i, blob[at : at + per]) for at in range(first, len(blob), per)]
    order = rng.permutation(len(pieces))
    buf = bytearray(rng.bytes(7))
    at: dict[int, int] = {}
    for j in order:
        at[int(j)] = len(buf)
        buf += pieces[j][1] + rng.bytes(int(rng.integers(0, 5)))
    file = memoryview(bytes(buf))
    tables: dict[int, list[int]] = {}
    for j, (i, _) in enumerate(pieces):
        tables.setdefault(i, []).append(at[j])
    out: list[SparseTerm | DenseTerm | PagedTerm] = []
    for i, t in enumerate(terms):
        table = np.array([len(blobs[i]), *shapes[i], *tables[i]], dtype=np.int64).tobytes() + codes[i]
        if isinstance(t, DenseTerm):
            out.append(DenseTerm(t.term, t.df, t.load, t.pick, (file, table)))
        else:
            out.append(PagedTerm(t.term, t.df, t.max_impact, file, table, lambda t=t: t))
    return out


def coded_blob(t: SparseTerm, width: int, with_blocks: bool) -> tuple[bytes, bytes]:
    """A list's BLOB in schema 5's layout of ``width`` (8: raw) and what follows blob_pieces'
    table in its descriptor (listcodes.descriptor: code width, table size, table)."""
    bmax = t.block_max.tobytes() if with_blocks else b""
    if width == listcodes.RAW_WIDTH:
        return t.impacts.tobytes() + t.chunks.tobytes() + bmax, b""
    table, code = np.unique(t.impacts, return_inverse=True)
    code = code.astype("<u1" if width == 1 else "<u2")
    pad = b"\0" * (-code.nbytes % 4)
    blob = table.tobytes() + code.tobytes() + pad + t.chunks.astype("<u4").tobytes() + bmax
    return blob, listcodes.descriptor(b"", width, table.tobytes())


def block_maxima(imps: Any, bp: int, loose: float) -> Any:
    """What the build stores: each run of ``bp`` postings' largest impact (none for a list of
    one block), times ``loose`` (1.0: exact; more: a looser bound, still valid)."""
    if len(imps) <= bp:
        return np.empty(0)
    return np.maximum.reduceat(imps, np.arange(0, len(imps), bp)) * loose


@st.composite
def corpora(draw: Any) -> dict[str, Any]:
    """Shape from hypothesis, bulk from a seeded numpy generator (dense lists, so that
    documents with scored chunks on both sides of a block boundary are common)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n_docs = draw(st.integers(1, 40))
    per_doc = rng.integers(1, draw(st.integers(1, 9)) + 1, size=n_docs)
    chunk_doc = np.concatenate([[0], np.repeat(np.arange(1, n_docs + 1), per_doc)]).astype(np.int32)
    n_rows = len(chunk_doc) - 1
    chunk_len = np.concatenate([[0], rng.integers(1, 50, size=n_rows)]).astype(np.int32)
    bp = draw(st.sampled_from([1, 2, 3, 4, 8, 64]))
    terms: list[tuple[str, Any]] = []
    shape = draw(st.sampled_from(["some", "some", "some", "rare", "many"]))
    n_terms = {"some": draw(st.integers(1, 6)), "rare": 1, "many": draw(st.integers(7, 20))}[shape]
    for _ in range(n_terms):
        density = draw(st.sampled_from([0.02, 0.2, 0.6, 1.0]))
        if shape == "rare":  # a single rare term: one to three postings, or around the
            # one-term fast path's limit (SINGLE_TERM_POSTINGS), fewer or more than k
            size = draw(st.sampled_from([1, 2, 3, 3, 8, 31, 32, 33, 80]))
            rows = np.unique(rng.integers(1, n_rows + 1, size=size))
            imps = rng.choice(IMPACTS, size=len(rows))
            terms.append(("sparse", (rows.astype(np.uint32), imps, float(imps.max()),
                                     block_maxima(imps, bp, 1.0))))
        elif draw(st.integers(0, 4)) == 0:  # a clamped-IDF term: dense tfs
            tfs = (rng.random(n_rows + 1) < density) * rng.integers(1, 4, size=n_rows + 1)
            tfs[0] = 0
            terms.append(("dense", tfs.astype(np.uint16)))
        else:
            rows = np.flatnonzero(rng.random(n_rows + 1) < density)
            rows = rows[rows > 0]
            if not len(rows):
                rows = np.array([int(rng.integers(1, n_rows + 1))])
            imps = rng.choice(IMPACTS, size=len(rows)) * draw(st.sampled_from(SCALES))
            # The bound: the list's maximum (as stored), or a looser one (still valid).
            bound = float(imps.max()) * draw(st.sampled_from([1.0, 1.0, 1.5]))
            # Block maxima: exact (as stored), looser, or none (a list read without them).
            bmax = (np.empty(0) if draw(st.integers(0, 5)) == 0 else
                    block_maxima(imps, bp, draw(st.sampled_from([1.0, 1.0, 1.25]))))
            terms.append(("sparse", (rows.astype(np.uint32), imps.astype(np.float64), bound,
                                     bmax.astype(np.float64))))
    blocked = rng.random(n_rows + 1) < draw(st.sampled_from([0.0, 0.1, 0.5]))
    return {"chunk_doc": chunk_doc, "chunk_len": chunk_len, "terms": terms,
            "blocked": blocked if blocked.any() else None,
            "k": draw(st.sampled_from([1, 1, 2, 3, 5, 10, 30, 100])), "block_postings": bp,
            "block_rows": draw(st.sampled_from([64, 128, 1 << 15]))}


def make_terms(spec: list[tuple[str, Any]], with_blocks: bool = True) -> list[SparseTerm | DenseTerm]:
    out: list[SparseTerm | DenseTerm] = []
    for i, (kind, data) in enumerate(spec):
        if kind == "dense":
            # half of them can pick a few rowids' tfs without loading the array
            pick = (lambda rows, d=data: d[rows]) if i % 2 else None
            out.append(DenseTerm(f"t{i}", int(np.count_nonzero(data)), lambda d=data: d, pick))
        else:
            rows, imps, bound, bmax = data
            out.append(SparseTerm(f"t{i}", len(rows), rows, imps, bound,
                                  *((bmax,) if with_blocks else ())))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpora())
def test_every_path_ranks_identically(c: dict[str, Any]) -> None:
    results = {}
    for mode in [*MODES, *PAGED]:
        kind, pruning, with_blocks = MODES[PAGED.get(mode, mode)]
        scorer = Scorer(c["chunk_doc"], c["chunk_len"], native=kind != "numpy", pruning=pruning,
                        block_postings=c["block_postings"] if with_blocks else None)
        assert scorer.kind == kind
        if mode not in FAST_PATH:  # the others rank a one-term query as any other (no fast path)
            scorer.single_term_postings = 0
        scratch = scorer.scratch()
        scratch.block = np.zeros(max(64, c["block_rows"]))
        terms: list[Any] = make_terms(c["terms"], with_blocks)
        if mode in PAGED:
            terms = page_out(terms, c["k"] + len(terms), with_blocks)
        results[mode] = scorer.rank(terms, c["k"], c["blocked"], scratch, 1e18)
        assert not scratch.acc.any() and not scratch.block.any()  # handed back clean
    assert results["blockmax"] == results["maxscore"] == results["blocks"] == results["numpy"] \
        == results["one-term"] == results["one-term-numpy"]
    for mode, flat in PAGED.items():
        assert results[mode] == results[flat], mode
    ranked = results["numpy"]
    docs = [int(c["chunk_doc"][chunk]) for chunk, _ in ranked]
    assert len(docs) == len(set(docs)) <= c["k"]  # one best chunk per document
    if c["blocked"] is not None:
        assert not any(c["blocked"][chunk] for chunk, _ in ranked)
    keys = [(-score, chunk) for chunk, score in ranked]
    assert keys == sorted(keys)  # score descending, then lower rowid
