"""What a smaller posting format would buy: tf instead of the float64 impact, measured on an index.

Today a posting is 12 bytes: a float64 BM25 impact and a uint32 chunk rowid. A posting of a
rowid and a uint16 (or uint8) tf — 6 (or 5) bytes — would have the kernel compute each impact
as the build does, ``idf * ((tf*(k1+1)) / (tf + norm[row]))``, from the term's idf and the
per-chunk norm array the scorer already holds (float64, in memory). This probe answers, on one
index and its queries, without touching the file format or ``src/``:

1. *Exactness*: each posting's tf is recovered from the stored impact (the formula inverted,
   rounded), then the impact is recomputed from it — in numpy and in C — and compared bit for
   bit with the stored one; every mismatch is counted (the answer is only valid at 0).
2. *Postings copy*: per query, the real read of today's long lists (``read_blob`` into an
   arena, as the engine reads lists of more than ``INLINE_POSTINGS`` postings), and a
   ``memcpy`` of the same lists' bytes in each layout (12, 6, 5 bytes per posting) from a pool
   of every query's lists (so a query's bytes are not in cache when it is copied).
3. *Scoring*: one pass over all of a query's sparse lists (windows of 32,768 rowids, every
   posting accumulated in query order, each document's best chunk into a top-k heap), over
   stored impacts vs over tf + norm (``format_probe.c``, compiled here with ``setup.py``'s
   ``-O3 -ffp-contract=off``: no fused multiply-add), and, to put it in proportion, the real kernel's
   ``rank_blocks`` and ``rank_maxscore`` (with block maxima) on today's lists. Every variant's
   top-k rowids and scores are compared bit for bit with ``rank_blocks``' (and each other's).
   The exact tf variants: u16 or u8 tf with the division per posting, the same computed 256
   postings at a time, and g = (tf*(k1+1)) / (tf + norm) looked up by (chunk length, tf).
   Accumulation-only rows time the postings' additions without the selection; among them three
   cost probes that are NOT exact (their scores are not compared): the tf pass without its
   division, a uint16 per posting times a per-term scale (a quantized first pass's cost, the
   tfs standing in for the quantized values), and the same with block-coded rowids (128 per
   block: a uint32 base and uint16 offsets; every decoded rowid is checked).
4. An estimate: the blob read scaled by bytes against the tf pass's extra accumulation cost
   times the postings ``rank_maxscore`` accumulates or rescores, per query.

All timings are interleaved in one process (a seeded random order per query and round) and
reported as the p50 / mean over queries of each query's median over ``--rounds``. Clamped
(dense) terms are left out, as in ``kernel_ab.py``: their tf arrays are uint16 already.

Usage::

    python benchmarks/format_probe.py --index benchmarks/.cache/bench-n30318-s1-porter/ours.sqlite3 \\
        --queries benchmarks/.cache/queries-v1-9d8aafd0d2c8-n300-s1.json [--rounds 7] [--k 10]

Exit status: 0 when every recomputed impact, decoded rowid and top-k is bit-identical, 1
otherwise, 2 on bad arguments (one line on stderr).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from cprobe import compile_shared

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

C_SOURCE = HERE / "format_probe.c"
KERNEL_DIR = HERE.parent / "src" / "drsearch" / "index"  # _topk.h, the kernel's top-k heap
BLOCK_ROWS = 1 << 15  # the kernel's window (scoring.BLOCK_ROWS)
SEED = 20261202


class _Best(ctypes.Structure):
    _fields_ = [("s", ctypes.c_double), ("row", ctypes.c_int64)]


def compile_probe(tmp: Path) -> ctypes.CDLL:
    """format_probe.c as a shared library: setup.py's flags (-O3 -ffp-contract=off) plus -fPIC."""
    lib = compile_shared("format_probe", C_SOURCE, ["-O3", "-ffp-contract=off", f"-I{KERNEL_DIR}"], tmp)
    vp, i64, f64 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
    lib.probe_rank.restype = i64
    lib.probe_rank.argtypes = [ctypes.c_int, i64, vp, vp, vp, vp, vp, f64, vp, i64, vp, i64, vp, vp, vp, vp,
                               vp, vp, i64, ctypes.c_int]
    lib.probe_verify.restype = i64
    lib.probe_verify.argtypes = [i64, vp, vp, vp, f64, vp, f64]
    lib.probe_copy.restype = None
    lib.probe_copy.argtypes = [vp, vp, i64]
    return lib


@dataclass
class QueryLists:
    """One query's sparse lists in today's layout and the tf layouts (copies, not views)."""

    text: str
    ids: list[np.ndarray]
    impacts: list[np.ndarray]
    bounds: np.ndarray
    block_max: list[np.ndarray]
    idf: np.ndarray
    tf16: list[np.ndarray]
    tf8: list[np.ndarray] | None  # None: some tf > 255
    long_rows: list[tuple[int, int]]  # (postings rowid, BLOB bytes) of the lists read by blob I/O
    long_postings: int
    coded: list[tuple[np.ndarray, ...]] | None = None  # block_code() of each list, when built


def recover_tf(ids: np.ndarray, impacts: np.ndarray, idf: float, norm: np.ndarray,
               k1p1: float) -> tuple[np.ndarray, int]:
    """Each posting's tf, inverted from its impact; and how many postings' impact, recomputed
    from that tf with the build's expression (``scoring.term_impacts``), differs in any bit
    (a tf out of uint16 range counts as a mismatch)."""
    from drsearch.index.scoring import term_impacts

    x = impacts / idf  # = tf*k1p1 / (tf + norm)  =>  tf = x*norm / (k1p1 - x)
    nrm = norm[ids]
    with np.errstate(divide="ignore", invalid="ignore"):
        tf = np.rint(x * nrm / (k1p1 - x))
    ok = np.isfinite(tf) & (tf >= 1) & (tf <= 65535)
    tf16 = np.where(ok, tf, 1).astype(np.uint16)
    again = term_impacts(idf, tf16.astype(np.float64), nrm, k1p1)
    bad = int((~ok).sum()) + int((again.view(np.uint64) != impacts.view(np.uint64))[ok].sum())
    return tf16, bad


def load_queries(engine: Any, queries: Sequence[str],
                 lib: ctypes.CDLL) -> tuple[list[QueryLists], dict[str, int]]:
    """Every query's sparse lists, tf recovered and verified (numpy and C)."""
    from drsearch.index.listcodes import list_bytes
    from drsearch.index.scoring import SparseTerm, bm25_idf

    sc = engine.scorer
    norm, k1p1, n_rows = sc.norms(), sc.k1p1, sc.n_rows
    db = engine._db()
    counts = {"postings": 0, "bad_numpy": 0, "bad_c": 0, "over_255": 0, "over_255_queries": 0}
    out = []
    for q in queries:
        terms = [t for t in engine._postings(engine.parse(q), math.inf) if isinstance(t, SparseTerm)]
        if not terms:
            continue
        ids = [np.array(t.chunks, dtype=np.uint32) for t in terms]
        imps = [np.array(t.impacts, dtype=np.float64) for t in terms]
        idf = np.array([bm25_idf(n_rows, t.df) for t in terms])
        tf16 = []
        for i, (a, m) in enumerate(zip(ids, imps, strict=True)):
            tf, bad = recover_tf(a, m, float(idf[i]), norm, k1p1)
            counts["bad_numpy"] += bad
            counts["bad_c"] += lib.probe_verify(len(a), a.ctypes.data, tf.ctypes.data, m.ctypes.data,
                                                float(idf[i]), norm.ctypes.data, k1p1)
            counts["postings"] += len(a)
            tf16.append(tf)
        over = sum(int((tf > 255).sum()) for tf in tf16)
        counts["over_255"] += over
        counts["over_255_queries"] += over > 0
        long_rows = []
        for t in terms:
            if t.df > engine.options.inline_postings:
                tid, df = db.execute("SELECT id, df FROM terms WHERE term = ?", (t.term,)).fetchone()
                width, n_table = (8, 0) if engine.schema_version < 5 else db.execute(
                    "SELECT width, n_table FROM terms WHERE term = ?", (t.term,)).fetchone()
                long_rows.append((tid, list_bytes(df, width, n_table, engine.block_postings)))
        out.append(QueryLists(
            q, ids, imps, np.array([t.max_impact for t in terms]),
            [np.array(t.block_max, dtype=np.float64) for t in terms], idf, tf16,
            None if over else [tf.astype(np.uint8) for tf in tf16], long_rows,
            sum(t.df for t in terms if t.df > engine.options.inline_postings)))
    return out, counts


CODE_BLOCK = 128


def block_code(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rowids as blocks of CODE_BLOCK postings: each block's first rowid (uint32), each posting's
    offset from it (uint16), and per block whether its offsets fit a uint16 (uint8; a block that
    does not keeps its uint32 rowids, its offsets left 0)."""
    starts = np.arange(0, len(ids), CODE_BLOCK)
    base = ids[starts].astype(np.uint32)
    off = ids.astype(np.int64) - np.repeat(base.astype(np.int64), CODE_BLOCK)[: len(ids)]
    fit = (np.maximum.reduceat(off, starts) <= 0xFFFF) if len(ids) else np.zeros(0, dtype=bool)
    off = np.where(np.repeat(fit, CODE_BLOCK)[: len(ids)], off, 0).astype(np.uint16)
    return base, off, fit.astype(np.uint8)


def _ptrs(arrays: Sequence[np.ndarray]) -> np.ndarray:
    return np.array([a.ctypes.data for a in arrays] or [0], dtype=np.uintp)


Call = Callable[[], int]


def scoring_calls(lib: ctypes.CDLL, kernels: Any, ql: QueryLists, engine: Any, k: int,
                  bufs: dict[str, Any],
                  select_too: bool = True) -> dict[str, tuple[Call, np.ndarray, np.ndarray]]:
    """Each scoring variant as a call on this query, with the arrays it writes its top-k to
    (select_too False: the accumulation-only variants, which write none)."""
    sc = engine.scorer
    cd = sc._chunk_doc32
    n = len(ql.ids)
    def probe(mode: int, vals: Sequence[np.ndarray], select: int = 1,
              hold: object = None) -> tuple[Call, np.ndarray, np.ndarray]:
        rows, scores = np.zeros(k, dtype=np.int64), np.zeros(k)
        args = (mode, n, _ptrs(ql.ids), _ptrs(vals), np.array([len(a) for a in ql.ids], dtype=np.int64),
                ql.idf, sc.norms(), hold)
        argv = (mode, n, args[2].ctypes.data, args[3].ctypes.data, args[4].ctypes.data, ql.idf.ctypes.data,
                args[6].ctypes.data, sc.k1p1, cd.ctypes.data, k, bufs["block"].ctypes.data,
                len(bufs["block"]), bufs["pos"].ctypes.data, ctypes.addressof(bufs["heap"]), rows.ctypes.data,
                scores.ctypes.data,
                bufs["dlen"].ctypes.data, bufs["gtab"].ctypes.data, bufs["n_tab"], select)
        fn = lib.probe_rank
        # The arrays ride along in the closure: the pointers in argv must outlive the calls.
        return (lambda held=(args, rows, scores): fn(*argv)), rows, scores

    if not select_too:
        acc = {"accumulate only, f64 impacts (12 B)": probe(0, ql.impacts, 0),
               "accumulate only, u16 tf + norm (6 B)": probe(1, ql.tf16, 0),
               "accumulate only, u16 tf + norm, batched (6 B)": probe(3, ql.tf16, 0),
               "accumulate only, u16 tf, (D, tf) table (6 B)": probe(4, ql.tf16, 0)}
        if ql.tf8 is not None:
            acc["accumulate only, u8 tf + norm (5 B)"] = probe(2, ql.tf8, 0)
        # Not exact (no division): the cost of loading norm[row] alone, to split the u16 pass's
        # extra time between that load and the division.
        acc["accumulate only, u16 tf + norm, no division (inexact)"] = probe(5, ql.tf16, 0)
        # Not exact either: a uint16 per posting times a per-term scale, no per-chunk load (the
        # tfs stand in for quantized impacts): what a quantized first pass would cost.
        acc["accumulate only, u16 quantized impact (inexact)"] = probe(6, ql.tf16, 0)
        if ql.coded is not None:
            # Mode 7 reads one struct of four pointers per list (format_probe.c's Coded).
            structs = [np.array([b.ctypes.data, o.ctypes.data, f.ctypes.data, v.ctypes.data], dtype=np.uintp)
                       for (b, o, f), v in zip(ql.coded, ql.tf16, strict=True)]
            acc["accumulate only, u16 quantized, block-coded ids (inexact)"] = probe(
                7, structs, 0, (structs, ql.coded))
        return acc
    calls = {"probe pass, f64 impacts (12 B)": probe(0, ql.impacts),
             "probe pass, u16 tf + norm (6 B)": probe(1, ql.tf16)}
    if ql.tf8 is not None:
        calls["probe pass, u8 tf + norm (5 B)"] = probe(2, ql.tf8)
    calls["probe pass, u16 tf + norm, batched (6 B)"] = probe(3, ql.tf16)
    calls["probe pass, u16 tf, (D, tf) table (6 B)"] = probe(4, ql.tf16)
    if kernels is not None:
        oc, os_ = bufs["out_c"], bufs["out_s"]
        n_rows = sc.n_rows

        def blocks() -> int:
            return int(kernels.rank_blocks(ql.ids, ql.impacts, n_rows, None, cd, k, -1.0, bufs["kblock"],
                                           oc, os_, 0.0)[0])

        def maxscore() -> int:
            return int(kernels.rank_maxscore(ql.ids, ql.impacts, ql.bounds, n_rows, None, cd, k, -1.0,
                                             bufs["kblock"], oc, os_, 0.0, None, ql.block_max,
                                             engine.block_postings or 64)[0])

        calls["kernel rank_blocks (12 B)"] = (blocks, oc, os_)
        calls["kernel rank_maxscore+block_max"] = (maxscore, oc, os_)
    return calls


def check_answers(calls: dict[str, tuple[Call, np.ndarray, np.ndarray]]) -> bool:
    """Every variant's top-k (rowids and score bits) equal."""
    seen = set()
    for fn, rows, scores in calls.values():
        got = fn()
        seen.add((rows[:got].tobytes(), scores[:got].tobytes()))
    return len(seen) == 1


def interleave(calls: list[dict[str, Call]], rounds: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Each call's per-query median seconds (NaN where a query lacks it), interleaved."""
    names = sorted({n for c in calls for n in c})
    times = {n: np.full((len(calls), rounds), np.nan) for n in names}
    for r in range(rounds):
        for i, c in enumerate(calls):
            order = list(c)
            for j in rng.permutation(len(order)):
                name = order[j]
                t0 = time.perf_counter()
                c[name]()
                times[name][i, r] = time.perf_counter() - t0
    return {n: np.median(t, axis=1) for n, t in times.items()}


def copy_calls(lib: ctypes.CDLL, engine: Any, qls: list[QueryLists], arena: Any,
               dst: np.ndarray) -> list[dict[str, Call]]:
    """Per query with long lists: the real blob read, and memcpy of its long lists per layout."""
    from drsearch.index.blobs import read_blob

    db = engine._db()
    out = []
    for ql in qls:
        if not ql.long_rows:
            out.append({})
            continue
        longs = [i for i, a in enumerate(ql.ids) if len(a) > engine.options.inline_postings]
        pools = {
            "memcpy 12 B/posting (f64 + u32)": np.concatenate(
                [np.concatenate([ql.impacts[i].view(np.uint8), ql.ids[i].view(np.uint8)]) for i in longs]),
            "memcpy 6 B/posting (u32 + u16)": np.concatenate(
                [np.concatenate([ql.ids[i].view(np.uint8), ql.tf16[i].view(np.uint8)]) for i in longs]),
            "memcpy 5 B/posting (u32 + u8)": np.concatenate(
                [np.concatenate([ql.ids[i].view(np.uint8), ql.tf16[i].astype(np.uint8).view(np.uint8)])
                 for i in longs]),
        }

        def blob(rows: list[tuple[int, int]] = ql.long_rows) -> int:
            arena.reset()
            for tid, nbytes in rows:
                read_blob(db, "postings", "data", tid, nbytes, arena)
            return 0

        calls: dict[str, Call] = {"blob read today (12 B + block maxima)": blob,
                                  "memcpy 0 B (the call's own cost)": lambda: lib.probe_copy(
                                      dst.ctypes.data, dst.ctypes.data, 0) or 0}
        for name, pool in pools.items():
            calls[name] = (lambda p=pool: lib.probe_copy(dst.ctypes.data, p.ctypes.data, len(p)) or 0)
        out.append(calls)
    return out


def _table(title: str, res: dict[str, np.ndarray]) -> None:
    print(title)
    print(f"  {'':<56}{'p50 µs':>10}{'mean µs':>10}{'queries':>9}")
    for name, t in res.items():
        t = t[~np.isnan(t)] * 1e6
        if len(t):
            print(f"  {name:<56}{np.percentile(t, 50):10.1f}{t.mean():10.1f}{len(t):9d}")


def estimate(kernels: Any, engine: Any, qls: list[QueryLists], bufs: dict[str, Any], k: int,
             copies: dict[str, np.ndarray], scores: dict[str, np.ndarray]) -> None:
    """What a (u32 rowid, u16 tf) posting would change per query, from the timings above:
    the blob read scaled by bytes (6 B + block maxima instead of 12 B + block maxima), against
    the probe's measured extra accumulation cost per posting times the postings the kernel's
    rank_maxscore actually accumulates or rescores (its counts)."""
    sc = engine.scorer
    done = np.zeros(len(qls))
    for i, ql in enumerate(qls):
        c = np.zeros(3, dtype=np.int64)
        kernels.rank_maxscore(ql.ids, ql.impacts, ql.bounds, sc.n_rows, None, sc._chunk_doc32, k, -1.0,
                              bufs["kblock"], bufs["out_c"], bufs["out_s"], 0.0, c, ql.block_max,
                              engine.block_postings or 64)
        done[i] = c[0] + c[1]
    total = np.array([sum(len(a) for a in ql.ids) for ql in qls], dtype=np.float64)
    bmax = np.array([sum(8 * len(b) for b in ql.block_max) for ql in qls], dtype=np.float64)
    frac = np.divide(done, total, out=np.zeros_like(done), where=total > 0)
    per_query = scores["accumulate only, u16 tf + norm (6 B)"] - scores["accumulate only, f64 impacts (12 B)"]
    extra = per_query * frac
    blob = np.nan_to_num(copies.get("blob read today (12 B + block maxima)", np.zeros(len(qls))))
    saved = blob * (1.0 - (6 * total + bmax) / (12 * total + bmax))
    net = (extra - saved) * 1e6
    print(f"u16 tf + norm minus f64 impacts, accumulation per query: {np.median(per_query) * 1e6:+.1f} µs "
          f"p50, "
          f"{np.median(per_query / np.maximum(total, 1)) * 1e9:+.2f} ns per posting p50")
    print(f"rank_maxscore accumulates or rescores {np.median(frac):.0%} of a query's sparse postings (p50); "
          f"u16 tf estimate per query: kernel {np.median(extra) * 1e6:+.1f} µs, blob read "
          f"{-np.median(saved) * 1e6:+.1f} µs, net {np.median(net):+.1f} µs p50 ({net.mean():+.1f} mean)")


def g_table(norm: np.ndarray, k1p1: float, n_tab: int) -> tuple[np.ndarray, np.ndarray]:
    """Each chunk's length class (uint16: its index among the distinct norms, i.e. chunk
    lengths) and the table of ``(tf*k1p1) / (tf + norm)`` by (class, tf) for tf < n_tab, the
    build's expression on the same doubles (so its bits are the ones the build multiplies)."""
    classes, inverse = np.unique(norm.view(np.uint64), return_inverse=True)
    if len(classes) > 65535:
        raise SystemExit(f"format_probe: {len(classes)} distinct chunk norms do not fit a uint16 class")
    tf = np.arange(n_tab, dtype=np.float64)
    nrm = classes.view(np.float64)[:, None]
    with np.errstate(invalid="ignore"):  # tf 0 of a norm 0 (the unused row 0): never looked up
        tab = (tf[None, :] * k1p1) / (tf[None, :] + nrm)
    return inverse.astype(np.uint16), np.ascontiguousarray(tab).reshape(-1)


def file_estimate(engine: Any) -> tuple[int, int, int]:
    """(sparse postings, today's postings BLOB bytes, block maxima bytes) from the terms table."""
    db = engine._db()
    bp = engine.block_postings or 0
    postings = blob = bmax = 0
    for (df,) in db.execute("SELECT df FROM terms WHERE dense = 0"):
        blocks = -(-df // bp) if bp and df > bp else 0
        postings += df
        bmax += 8 * blocks
    blob = 12 * postings + bmax
    return postings, blob, bmax


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, required=True, help="a drsearch index (opened read-only)")
    ap.add_argument("--queries", type=Path, required=True, help="a JSON array of query strings")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--limit", type=int, default=0, help="the first N queries only (0: all)")
    ap.add_argument("--table-tf", type=int, default=8,
                    help="the (D, tf) table covers tf < N (default 8); larger tfs are computed")
    ap.add_argument("--block-rows", type=int, default=BLOCK_ROWS,
                    help="the probe passes' window in rowids (default the kernel's, 32768)")
    ap.add_argument("--inline-postings", type=int, default=None,
                    help="read lists of more than N postings by blob I/O (default: the engine's)")
    args = ap.parse_args(argv)
    try:
        queries = json.loads(args.queries.read_text(encoding="utf-8"))
        if not isinstance(queries, list) or not all(isinstance(q, str) for q in queries):
            raise ValueError("not a JSON array of strings")
    except (OSError, ValueError) as e:
        print(f"format_probe: --queries {args.queries}: {e}", file=sys.stderr)
        return 2
    if not args.index.is_file():
        print(f"format_probe: --index {args.index}: no such file", file=sys.stderr)
        return 2
    if (args.k < 1 or args.rounds < 1 or args.limit < 0 or (args.inline_postings or 0) < 0
            or not 1 <= args.table_tf <= 65535 or args.block_rows < 1):
        print("format_probe: --k, --rounds and --block-rows must be >= 1, --limit and "
              "--inline-postings >= 0, --table-tf in 1..65535", file=sys.stderr)
        return 2
    if args.limit:
        queries = queries[: args.limit]

    from drsearch.index import Engine
    from drsearch.index.blobs import Arena
    from drsearch.index.engine import INLINE_POSTINGS, EngineOptions
    from drsearch.index.native import native_kernels

    kernels = native_kernels()
    # every sparse list as arrays (SparseTerm), none left paged
    options = EngineOptions(paged_list_bytes=1 << 62, inline_postings=INLINE_POSTINGS
                            if args.inline_postings is None else args.inline_postings)
    with tempfile.TemporaryDirectory() as tmp, Engine.open(args.index, options=options) as engine:
        lib = compile_probe(Path(tmp))
        sc = engine.scorer
        qls, counts = load_queries(engine, queries, lib)
        postings, blob_bytes, bmax_bytes = file_estimate(engine)
        size = args.index.stat().st_size
        per_q = np.array([sum(len(a) for a in ql.ids) for ql in qls] or [0])
        long_q = np.array([ql.long_postings for ql in qls] or [0])
        print(f"{args.index}: {sc.n_rows:,} chunks, {size:,} bytes; {len(qls)} of {len(queries)} queries "
              f"with sparse terms, k={args.k}, {args.rounds} rounds; sparse postings/query p50 "
              f"{np.median(per_q):,.0f} (in lists read by blob I/O: {np.median(long_q):,.0f})")
        print(f"tf recovered for {counts['postings']:,} postings: impact recomputed from tf differs in "
              f"{counts['bad_numpy']} (numpy) and {counts['bad_c']} (C) of them; tf > 255 in "
              f"{counts['over_255']:,} postings ({counts['over_255_queries']} queries)")
        new6, new5 = blob_bytes - 6 * postings, blob_bytes - 7 * postings
        print(f"file: {postings:,} sparse postings, postings BLOBs {blob_bytes:,} bytes (block maxima "
              f"{bmax_bytes:,}); at 6 B/posting {new6:,} ({new6 - blob_bytes:+,}, file "
              f"{100 * (new6 - blob_bytes) / size:+.1f}%), at 5 B/posting {new5:,} ({new5 - blob_bytes:+,}, "
              f"file {100 * (new5 - blob_bytes) / size:+.1f}%)")

        coded_postings = coded_bytes = bad_ids = 0
        for ql in qls:
            ql.coded = [block_code(a) for a in ql.ids]
            for a, (base, off, fit) in zip(ql.ids, ql.coded, strict=True):
                fits = np.repeat(fit.astype(bool), CODE_BLOCK)[: len(a)]
                back = np.repeat(base.astype(np.int64), CODE_BLOCK)[: len(a)] + off
                bad_ids += int((back[fits] != a[fits]).sum())
                coded_postings += len(a)
                coded_bytes += 2 * int(fits.sum()) + 4 * int((~fits).sum()) + 5 * len(base)
        print(f"block-coded rowids ({CODE_BLOCK} per block: uint32 base + uint16 offsets): "
              f"{coded_bytes / max(coded_postings, 1):.3f} B per posting for the rowid (4 today), "
              f"{bad_ids} decoded wrong")
        dlen, gtab = g_table(sc.norms(), sc.k1p1, args.table_tf)
        tfs = np.concatenate([tf for ql in qls for tf in ql.tf16] or [np.zeros(0, np.uint16)])
        print(f"tf distribution: {np.mean(tfs == 1):.1%} of postings tf 1, "
              f"{np.mean(tfs < args.table_tf):.1%} tf < {args.table_tf} (looked up), "
              f"max {int(tfs.max(initial=0))}; (D, tf) table "
              f"{len(gtab) // args.table_tf:,} chunk lengths x {args.table_tf} = {8 * len(gtab):,} bytes")
        bufs: dict[str, Any] = {
            "dlen": dlen, "gtab": gtab, "n_tab": args.table_tf,
            "block": np.zeros(args.block_rows), "kblock": np.zeros(BLOCK_ROWS),
            "pos": np.zeros(max([len(ql.ids) for ql in qls] or [1]), dtype=np.int64),
            "heap": (_Best * args.k)(),
            "out_c": np.zeros(sc.n_rows + 1, dtype=np.int64), "out_s": np.zeros(sc.n_rows + 1),
        }
        equal = 0
        score_calls = []
        for ql in qls:
            calls = scoring_calls(lib, kernels, ql, engine, args.k, bufs)
            equal += check_answers(calls)
            accumulate = scoring_calls(lib, kernels, ql, engine, args.k, bufs, False)
            score_calls.append({name: c[0] for name, c in (calls | accumulate).items()})
        print(f"top-{args.k} rowids and scores bit-identical across "
              f"the kernel's rank_blocks, rank_maxscore and the probe's 5 passes: {equal}/{len(qls)} queries")
        if kernels is None:
            print("kernel: drsearch.index._kernels is not built; its rows are left out")

        rng = np.random.default_rng(SEED)
        n_long = sum(bool(ql.long_rows) for ql in qls)
        arena = Arena()
        dst = np.zeros(max([sum(n for _, n in ql.long_rows) for ql in qls] or [8]) + 64, dtype=np.uint8)
        copies = interleave(copy_calls(lib, engine, qls, arena, dst), args.rounds, rng)
        if n_long:
            inline = engine.options.inline_postings
            _table(f"postings copy, {n_long} queries with lists of > {inline} postings:", copies)
        else:
            print(f"postings copy: no query has a list of > {engine.options.inline_postings} postings")
        scores = interleave(score_calls, args.rounds, rng)
        _table("scoring, every sparse posting (probe) / the kernel on today's lists:", scores)
        if kernels is not None:
            estimate(kernels, engine, qls, bufs, args.k, copies, scores)
    ok = counts["bad_numpy"] == counts["bad_c"] == bad_ids == 0 and equal == len(qls)
    print("result: " + ("exact (every recomputed impact, decoded rowid and top-k bit-identical)" if ok
                        else "NOT EXACT"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
