"""Three probes behind docs/ENGINE.md's "Reading posting lists", "Threads" and "One-term fast
path" numbers, on an existing index (no rebuild; ~1 min at full scale):

- ``fetch``: one query's term rows and posting lists (``Engine._postings``, every list copied:
  none left in the pages) three ways: all
  from the file's pages (``_kernels.find_rows`` + ``read_blobs``), the term rows by SQL with
  the page reader for long lists, and the blob API; interleaved query by query (µs); then
  the term rows alone, ``find_rows`` against the SQL statement;
- ``one-term``: ``Scorer.rank`` of single sparse terms per df class, the C one-term pass
  (``rank_one``) against the windowed kernel (``single_term_postings = 0``), best of 7 (µs),
  both answers checked equal;
- ``copy``: the page reader's copy of every query's sparse lists out of their overflow pages
  (``MappedColumn.read_into``, the bytes each query's lists hold) against a flat copy of as
  many bytes from one contiguous buffer into the same destinations: what walking the pages
  costs above the copy itself (µs per query and GB/s, best of 4 passes over the queries);
- ``paged``: a query's fetch and ranking with its long lists ranked where they lie in the
  file's pages (``PagedTerm``, the default) against copied into the arena first, interleaved
  query by query (µs), both answers checked equal;
- ``snippets``: a complete search's last stage on each query's hits: the chunk texts read
  (``read_texts``), their snippets (``snippets``), and both in one call (``texts_snippets``),
  µs per query, best of 5 passes (the kernel's functions only: it runs against any kernel
  that has them);
- ``threads``: one engine, 1 thread then 2 threads, each running one stage in a loop for
  ``--seconds`` (the posting fetch by each reader, the kernel on prefetched lists, a whole
  ranked search, a complete search with texts and snippets (made in the ranking's kernel call,
  ``EngineOptions.texts_with_ranking``), the same with them read in one call after the ranking (as
  before it), and with the texts read and their snippets made in two calls, the GIL held to
  decode the texts, as before ``texts_snippets``): operations per second, the
  ratio, CPU seconds per wall second and the threads' context switches (what GIL hand-offs
  cost; Linux ``/proc/thread-self``);
- ``stages``: a complete search's stages in turn (parse, postings, snippet maker, the ranking's
  call with its texts, finish, make_hits), µs per query, with make_hits' buffers read in the
  ranking's call and without: the GIL-held time two threads take in turn.

Usage::

    python benchmarks/fetch_probe.py --index PATH/ours.sqlite3 --queries QUERIES.json \\
        [--probe fetch,copy,paged,one-term,threads,snippets,stages] [--limit 150] [--seconds 3]

``--queries``: a JSON list of queries, or an object of classes (all are used). The index is
opened read-only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

PROBES = ("fetch", "copy", "paged", "one-term", "threads", "snippets", "stages")
# df classes of the one-term probe: (lowest, highest) postings
DF_CLASSES = [(10, 20), (200, 300), (900, 1100), (3500, 4500), (15000, 17000), (60000, 70000)]


def load_queries(path: Path, limit: int) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    groups = data.values() if isinstance(data, dict) else [data]
    out = [q if isinstance(q, str) else q["query"] for g in groups for q in g]
    return out[:limit] if limit else out


def _far() -> float:
    return time.monotonic() + 1e6


def _copying(e: Any) -> Any:
    """Another engine on ``e``'s file that copies every list (none left in the pages)."""
    from drsearch.index import Engine

    return Engine.open(e.path, options=replace(e.options, paged_list_bytes=1 << 62))


def fetch_probe(default: Any, queries: Sequence[str]) -> None:
    # The readers copy every list here (none left in the pages: that is --probe paged).
    with _copying(default) as e:
        _fetch_probe(e, queries)


def _fetch_probe(e: Any, queries: Sequence[str]) -> None:
    parsed = [e.parse(q) for q in queries]
    pages, term_rows = e._pages, e._term_rows
    postings = sum(t.df for p in parsed for t in e._postings(p, _far()) if t is not None
                   and hasattr(t, "chunks"))
    print(f"fetch: {len(parsed)} queries, {postings / len(parsed):,.0f} sparse postings per query")
    # (name, term rows from the pages, list reader): the default with the kernel, the term
    # rows by SQL with the page reader for long lists, and the path without the kernel
    readers: list[tuple[str, Any, Any]] = [("blob API", None, None)]
    if pages is not None:
        readers[:0] = [("all pages", term_rows, pages), ("page reader", None, pages)]
    else:
        print("  page reader: not available (kernel not built)")
    times: dict[str, list[int]] = {name: [] for name, _, _ in readers}
    for p in parsed:  # each query by each reader in turn, 5 rounds; its median per reader
        per: dict[str, list[int]] = {name: [] for name, _, _ in readers}
        for r in range(6):
            for name, rows, reader in readers if r % 2 else readers[::-1]:
                e._term_rows, e._pages = rows, reader
                t0 = time.perf_counter_ns()
                e._postings(p, _far())
                if r:  # round 0 warms
                    per[name].append(time.perf_counter_ns() - t0)
        for name in per:
            times[name].append(statistics.median(per[name]))
    what = {"all pages": "term rows and every list from the pages (the default)",
            "page reader": "term rows and short lists by SQL, long lists from the pages",
            "blob API": "term rows and short lists by SQL, long lists by blob I/O"}
    for name, ts in times.items():
        p50, mean = statistics.median(ts) / 1e3, statistics.mean(ts) / 1e3
        print(f"  {name:<12} p50 {p50:8.1f} us, mean {mean:8.1f} us per query "
              f"(interleaved, median of 5 rounds each): {what[name]}")
    if term_rows is not None:  # the term rows alone, both ways
        names = [[qt.term for qt in p.terms] for p in parsed]
        from drsearch.index import engine as engine_mod
        from drsearch.index.engine import INLINE_POSTINGS

        # (a file before schema 5 has no code width and table size columns)
        _TERMS_SQL, _TERMS_SQL_JSON = (engine_mod._TERMS_SQL, engine_mod._TERMS_SQL_JSON) if e._coded \
            else (engine_mod._TERMS_SQL_RAW, engine_mod._TERMS_SQL_JSON_RAW)

        db = e._db()
        sql: list[int] = []
        c: list[int] = []
        for r in range(6):
            for ns in names:
                t0 = time.perf_counter_ns()
                term_rows.find(ns)
                t1 = time.perf_counter_ns()
                if len(ns) < len(_TERMS_SQL):
                    list(db.execute(_TERMS_SQL[len(ns)], [INLINE_POSTINGS, *ns]))
                else:
                    list(db.execute(_TERMS_SQL_JSON, (INLINE_POSTINGS, json.dumps(ns))))
                t2 = time.perf_counter_ns()
                if r:
                    c.append(t1 - t0)
                    sql.append(t2 - t1)
        print(f"  term rows alone: find_rows p50 {statistics.median(c) / 1e3:.1f} us, the SQL "
              f"statement (with the short lists) p50 {statistics.median(sql) / 1e3:.1f} us per query")
    e._term_rows, e._pages = term_rows, pages


def copy_probe(e: Any, queries: Sequence[str]) -> None:
    import numpy as np

    from drsearch.index.listcodes import list_bytes

    pages, term_rows = e._pages, e._term_rows
    if pages is None or term_rows is None:
        print("copy: not available (kernel not built)")
        return
    bp = e.block_postings
    jobs: list[tuple[list[int], list[Any]]] = []
    for q in queries:
        rows = term_rows.find([qt.term for qt in e.parse(q).terms]) or []
        # (a version-5 row: id, df, dense, max_impact, code width, table size: listcodes.py)
        sparse = [(row[0], list_bytes(row[1], *(row[4:6] if len(row) > 4 else (8, 0)), bp))
                  for row in rows if row is not None and not row[2]]
        if sparse:
            jobs.append(([tid for tid, _ in sparse], [np.empty(n, dtype=np.uint8) for _, n in sparse]))
    if not jobs:
        print("copy: no query has a sparse list")
        return
    total = sum(o.nbytes for _, outs in jobs for o in outs)
    flat = np.frombuffer(np.random.default_rng(1).bytes(max(sum(o.nbytes for o in outs) for _, outs in jobs)),
                         dtype=np.uint8)
    best = {"pages": float("inf"), "flat": float("inf")}
    for _ in range(4):
        t0 = time.perf_counter_ns()
        for ids, outs in jobs:
            pages.read_into(ids, outs)
        t1 = time.perf_counter_ns()
        for _, outs in jobs:
            at = 0
            for o in outs:
                np.copyto(o, flat[at : at + o.nbytes])
                at += o.nbytes
        t2 = time.perf_counter_ns()
        best["pages"] = min(best["pages"], t1 - t0)
        best["flat"] = min(best["flat"], t2 - t1)
    print(f"copy: {len(jobs)} queries, {total / len(jobs) / 1e6:.2f} MB of sparse lists per query")
    for name, what in (("pages", "read_into from the overflow pages"), ("flat", "one contiguous buffer")):
        print(f"  {name:<6} {best[name] / len(jobs) / 1e3:8.1f} us per query, "
              f"{total / best[name]:5.2f} GB/s: {what}")
    print(f"  pages / flat {best['pages'] / best['flat']:.2f}x")


def paged_probe(e: Any, queries: Sequence[str], rounds: int = 5) -> None:
    """Ranking posting lists where they lie in the file's pages (the default) against copying
    them into the arena first: each query's fetch (``Engine._postings``) and ranking
    (``Scorer.rank``, k = 10) both ways, interleaved (a seeded random order per round and
    which way goes first per query), each query's median of ``rounds``; both answers checked
    equal first."""
    parsed = [e.parse(q) for q in queries]
    blocked, k = e._blocked_chunks, 10
    paged_bytes = e.options.paged_list_bytes
    copying = _copying(e)
    ways = {"paged": e, "copied": copying}

    def run(p: Any, way: Any) -> tuple[int, int, Any]:
        t0 = time.perf_counter_ns()
        terms = way._postings(p, _far())
        t1 = time.perf_counter_ns()
        out = way.scorer.rank(terms, k, blocked, way._scratch(), _far())
        return t1 - t0, time.perf_counter_ns() - t1, out

    try:
        n_paged = 0
        for p in parsed:
            a, b = (run(p, way)[2] for way in ways.values())
            if a != b:
                raise SystemExit(f"paged: the answers differ for {p.terms}")
            n_paged += sum(type(t).__name__ == "PagedTerm" for t in e._postings(p, _far()))
        rng = random.Random(1)
        per: list[dict[str, list[int]]] = [{f"{w} {s}": [] for w in ways for s in ("fetch", "rank")}
                                           for _ in parsed]
        for r in range(rounds + 1):
            order = list(range(len(parsed)))
            rng.shuffle(order)
            for i in order:
                names = list(ways)
                if rng.random() < 0.5:
                    names.reverse()
                for w in names:
                    fetch, rank, _ = run(parsed[i], ways[w])
                    if r:  # round 0 warms
                        per[i][f"{w} fetch"].append(fetch)
                        per[i][f"{w} rank"].append(rank)
    finally:
        copying.close()
    med = {key: [statistics.median(d[key]) for d in per] for key in per[0]}
    print(f"paged: {len(parsed)} queries, {n_paged / len(parsed):.1f} paged lists per query "
          f"(more than {paged_bytes:,} bytes), k = {k}, median of {rounds} rounds each, interleaved")
    total = {w: [f + r for f, r in zip(med[f"{w} fetch"], med[f"{w} rank"], strict=True)] for w in ways}
    for w in ways:
        print(f"  {w:<7} fetch p50 {statistics.median(med[f'{w} fetch']) / 1e3:8.1f} us, rank p50 "
              f"{statistics.median(med[f'{w} rank']) / 1e3:8.1f} us, both p50 "
              f"{statistics.median(total[w]) / 1e3:8.1f} us, mean {statistics.mean(total[w]) / 1e3:8.1f} us")
    ratios = [a / b for a, b in zip(total["paged"], total["copied"], strict=True)]
    print(f"  paged / copied (fetch + rank): median per query {statistics.median(ratios):.3f}, of the "
          f"p50s {statistics.median(total['paged']) / statistics.median(total['copied']):.3f}")


def snippets_probe(e: Any, queries: Sequence[str], rounds: int = 5) -> None:
    """A complete search's last stage on each query's 10 hits: the chunk texts read from the
    pages (``read_texts``), their snippets made in C (``snippets``), and both in one call
    (``texts_snippets``, what the engine runs): µs per query, best of ``rounds`` passes over
    the queries; the one call's answers checked against the two calls' first. It calls the
    kernel's functions only, so it runs against any kernel that has them (ABI 8 on)."""
    from drsearch.index.native import native_kernels
    from drsearch.index.snippet import SnippetMaker

    kernels = native_kernels()
    column = e._chunk_texts
    if kernels is None or column is None or not hasattr(kernels, "texts_snippets"):
        print("snippets: not available (kernel not built, or without texts_snippets)")
        return
    f = column.file
    work: list[tuple[SnippetMaker, list[int]]] = []
    for q in queries:
        p = e.parse(q)
        terms = e._postings(p, _far())
        ids = [c for c, _ in e.scorer.rank(terms, 10, e._blocked_chunks, e._scratch(), _far())]
        work.append((e._snippets(p, terms, _far()), ids))
    geometry = (f._pages, f.page_size, f.usable, column.root, column.column)
    texts = [kernels.read_texts(*geometry, ids) for _, ids in work]
    for (m, ids), tx in zip(work, texts, strict=True):
        two = kernels.snippets(tx, m._stems, m._stem_weights, m.width, 0.0)
        if kernels.texts_snippets(*geometry, ids, m._stems, m._stem_weights, m.width, 0.0) != (tx, two):
            raise SystemExit(f"snippets: one call and two calls differ on hits {ids}")
    chars = sum(len(t) for tx in texts for t in tx)
    stages: dict[str, Callable[[int], Any]] = {
        "read_texts": lambda i: kernels.read_texts(*geometry, work[i][1]),
        "snippets": lambda i: kernels.snippets(texts[i], work[i][0]._stems, work[i][0]._stem_weights,
                                               work[i][0].width, 0.0),
        "texts_snippets": lambda i: kernels.texts_snippets(*geometry, work[i][1], work[i][0]._stems,
                                                           work[i][0]._stem_weights, work[i][0].width, 0.0),
    }
    best = dict.fromkeys(stages, float("inf"))
    for _ in range(rounds):
        for name, fn in stages.items():
            t0 = time.perf_counter_ns()
            for i in range(len(work)):
                fn(i)
            best[name] = min(best[name], time.perf_counter_ns() - t0)
    print(f"snippets: {len(work)} queries, {chars / len(work):,.0f} characters of hit text per query, "
          f"best of {rounds} passes")
    for name in stages:
        print(f"  {name:<15} {best[name] / len(work) / 1e3:8.1f} us per query")
    print(f"  texts_snippets / (read_texts + snippets) "
          f"{best['texts_snippets'] / (best['read_texts'] + best['snippets']):.2f}x")


def stages_probe(e: Any, queries: Sequence[str], rounds: int = 5) -> None:
    """A complete search's stages one after another, as ``Engine._search`` runs them, each
    query's right after the previous query's ranking (so the caches are as a serving thread
    finds them, not warmed by a loop over one stage): µs per query, the mean over the queries,
    the best of ``rounds`` passes. Every stage but the ranking holds the GIL: their sum is what
    two threads of one process take in turn. The ranking's call runs with make_hits' buffers
    read in it (``hits``, as the engine does) on even passes and without on odd ones, to show
    what that read saves make_hits."""
    from drsearch.contract.models import Hit
    from drsearch.index.native import native_kernels

    kernels = native_kernels()
    if kernels is None or e._chunk_texts is None:
        print("stages: not available (kernel not built, or chunk texts not in the pages)")
        return
    names = ["parse", "postings", "snippet maker", "ranking (GIL-free, + its set-up)", "finish",
             "make_hits", "make_hits without hits read"]
    best = dict.fromkeys(names, float("inf"))
    pc = time.perf_counter_ns
    for r in range(2 * rounds):
        warm = r % 2 == 0
        acc = dict.fromkeys(names, 0)
        n = 0
        for q in queries:
            t0 = pc()
            parsed = e.parse(q)
            t1 = pc()
            terms = e._postings(parsed, _far())
            t2 = pc()
            maker = e._snippets(parsed, terms, _far())
            t3 = pc()
            spec = maker.texts_args(e._chunk_texts, e._hit_buffers() if warm else None)
            ranked, made = e.scorer.rank_texts(terms, 10, e._blocked_chunks, e._scratch(), _far(), spec)
            t4 = pc()
            if made is None:  # (no texts made in the call: a one-term or numpy path)
                continue
            texts = maker.finish(made)
            t5 = pc()
            _, _, offsets, fields, pieces = e._hit_buffers()
            kernels.make_hits(Hit, [c for c, _ in ranked], [s for _, s in ranked], e._chunk_doc,
                              e._chunk_ordinal, offsets, fields, pieces, *texts)
            t6 = pc()
            n += 1
            for name, a, b in zip(names[:5], (t0, t1, t2, t3, t4), (t1, t2, t3, t4, t5), strict=True):
                acc[name] += b - a
            acc["make_hits" if warm else "make_hits without hits read"] += t6 - t5
        # the other stages from the passes that run as the engine does (hits read)
        for name in names[:6] if warm else names[6:]:
            best[name] = min(best[name], acc[name] / max(n, 1))
    print(f"stages: a complete search's stages in turn, {len(queries)} queries, µs per query "
          f"(mean), best of {rounds} passes")
    for name in names:
        print(f"  {name:<34} {best[name] / 1e3:8.1f}")
    held = sum(best[x] for x in ("parse", "postings", "snippet maker", "finish", "make_hits"))
    print(f"  GIL held (all but the ranking)     {held / 1e3:8.1f}")


def one_term_probe(e: Any) -> None:
    scorer = e.scorer
    default = scorer.single_term_postings
    print(f"one-term: Scorer.rank, k=10, best of 7, median over up to 20 terms per class "
          f"(fast path limit {default})")
    for lo, hi in DF_CLASSES:
        terms = [t for (t,) in e._db().execute(
            "SELECT term FROM terms WHERE dense = 0 AND df BETWEEN ? AND ? ORDER BY term LIMIT 20", (lo, hi))]
        if not terms:
            continue
        row = []
        answers: dict[str, list[Any]] = {}
        for limit in (default, 0):
            scorer.single_term_postings = limit
            times = []
            for t in terms:
                lists = e._postings(e.parse(t), _far())
                best = float("inf")
                for _ in range(7):
                    t0 = time.perf_counter()
                    r = scorer.rank(lists, 10, e._blocked_chunks, e._scratch(), _far())
                    best = min(best, time.perf_counter() - t0)
                times.append(best)
                answers.setdefault(t, []).append(r)
            row.append(statistics.median(times) * 1e6)
        scorer.single_term_postings = default
        if any(a != b for a, b in answers.values()):
            raise SystemExit("one-term: the fast path and the kernel disagree")
        print(f"  df {lo:>6,}-{hi:<6,} ({len(terms):2} terms)  fast path {row[0]:8.1f} us   "
              f"windowed kernel {row[1]:8.1f} us")


def _switches() -> int:
    try:
        with open("/proc/thread-self/status") as fh:
            return sum(int(ln.split()[1]) for ln in fh if "ctxt_switches" in ln)
    except OSError:
        return -1


def _run(fn: Callable[[int], None], n_items: int, threads: int, seconds: float) -> tuple[float, float, int]:
    counts, switches = [0] * threads, [0] * threads
    barrier = threading.Barrier(threads)

    def work(j: int) -> None:
        for i in range(n_items):  # warm: this thread's connection, arena, scratch
            fn(i)
        barrier.wait()
        s0, t0, n = _switches(), time.perf_counter(), 0
        i = j * n_items // threads
        while time.perf_counter() - t0 < seconds:
            fn((i + n) % n_items)
            n += 1
        counts[j], switches[j] = n, _switches() - s0

    pool = [threading.Thread(target=work, args=(j,)) for j in range(threads)]
    c0 = time.process_time()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return sum(counts) / seconds, (time.process_time() - c0) / seconds, sum(switches)


@contextlib.contextmanager
def _two_calls(on: bool) -> Iterator[None]:
    """With ``on``, complete searches read their chunk texts (``read_texts``) and make their
    snippets (``SnippetMaker.many``) in two kernel calls, the GIL taken back between them and
    the texts decoded with it held: the path before ``texts_snippets`` (same results), as the
    control of the one-call stage."""
    from drsearch.index.snippet import SnippetMaker

    if not on:
        yield
        return
    one_call = SnippetMaker.of_rows

    def of_rows(self: Any, column: Any, rowids: Any) -> tuple[list[str], list[str]]:
        texts = column.read_texts(rowids)
        return texts, self.many(texts)

    SnippetMaker.of_rows = of_rows  # type: ignore[method-assign]
    try:
        yield
    finally:
        SnippetMaker.of_rows = one_call  # type: ignore[method-assign]


def threads_probe(e: Any, queries: Sequence[str], seconds: float) -> None:
    from drsearch.index import Engine
    from drsearch.index.scoring import SparseTerm

    parsed = [e.parse(q) for q in queries]

    def copied(t: Any) -> Any:  # lists that outlive the arena's next reset
        if isinstance(t, SparseTerm):
            return SparseTerm(t.term, t.df, t.chunks.copy(), t.impacts.copy(), t.max_impact,
                              t.block_max.copy())
        return t

    lists = [[copied(t) for t in e._postings(p, _far())] for p in parsed]
    pages, term_rows = e._pages, e._term_rows
    # the controls read the texts after the ranking (as before texts_with_ranking)
    after = Engine.open(e.path, options=replace(e.options, texts_with_ranking=False))

    def fetch_with(rows: Any, reader: Any) -> Callable[[int], None]:
        def fn(i: int) -> None:
            e._term_rows, e._pages = rows, reader
            e._postings(parsed[i], _far())
        return fn

    stages: list[tuple[str, Callable[[int], None]]] = []
    if pages is not None:
        stages += [("postings, all pages", fetch_with(term_rows, pages)),
                   ("postings, page reader", fetch_with(None, pages))]
    stages += [("postings, blob API", fetch_with(None, None)),
               ("kernel (prefetched lists)",
                lambda i: e.scorer.rank(lists[i], 10, None, e._scratch(), _far())),
               ("ranked search", lambda i: e.search(queries[i], 10, with_text=False)),
               ("complete search", lambda i: e.search(queries[i], 10)),
               ("complete search, texts after", lambda i: after.search(queries[i], 10)),
               ("complete search, 2 calls", lambda i: after.search(queries[i], 10))]
    print(f"threads: one engine, {seconds:g} s per run, 1 then 2 threads "
          "(ops/s, CPU s per wall s, context switches)")
    for name, fn in stages:
        with _two_calls(name.endswith("2 calls")):
            one = _run(fn, len(parsed), 1, seconds)
            two = _run(fn, len(parsed), 2, seconds)
        e._term_rows, e._pages = term_rows, pages
        print(f"  {name:<26} 1 thread {one[0]:8.0f}/s ({one[1]:.2f}, {one[2]:>6})   2 threads "
              f"{two[0]:8.0f}/s ({two[1]:.2f}, {two[2]:>6})   ratio {two[0] / one[0]:.2f}x")
    after.close()


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, required=True, help="an ours.sqlite3 (read-only)")
    ap.add_argument("--queries", type=Path, required=True, help="JSON list, or object of classes")
    ap.add_argument("--probe", default=",".join(PROBES), help=f"comma list of {', '.join(PROBES)}")
    ap.add_argument("--limit", type=int, default=150, help="first N queries (0: all)")
    ap.add_argument("--seconds", type=float, default=3.0, help="each threads run")
    args = ap.parse_args(argv)
    probes = args.probe.split(",")
    unknown = sorted(set(probes) - set(PROBES))
    if unknown:
        print(f"fetch_probe: unknown probe {unknown[0]!r} (choose from {', '.join(PROBES)})", file=sys.stderr)
        return 2
    if not args.index.is_file() or not args.queries.is_file():
        print(f"fetch_probe: no such file: {args.index if not args.index.is_file() else args.queries}",
              file=sys.stderr)
        return 2
    if args.seconds <= 0:
        print("fetch_probe: --seconds must be positive", file=sys.stderr)
        return 2
    from drsearch.index import Engine

    queries = load_queries(args.queries, args.limit)
    if not queries:
        print("fetch_probe: no queries", file=sys.stderr)
        return 2
    with Engine.open(args.index) as e:
        print(f"index {args.index} ({e.scorer.n_rows:,} chunks, scorer {e.scorer.kind}), "
              f"{len(queries)} queries")
        if "fetch" in probes:
            fetch_probe(e, queries)
        if "copy" in probes:
            copy_probe(e, queries)
        if "paged" in probes:
            paged_probe(e, queries)
        if "one-term" in probes:
            one_term_probe(e)
        if "threads" in probes:
            threads_probe(e, queries, args.seconds)
        if "snippets" in probes:
            snippets_probe(e, queries)
        if "stages" in probes:
            stages_probe(e, queries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
