"""Speed benchmark: drsearch against tantivy (and bm25s, PISA) on a DR-256-shaped corpus.

Every engine indexes the same chunks (800-word windows, 700-word stride) of the same
synthetic corpus (``corpus_gen.py``); latencies are measured with the engines interleaved
query by query in one run, and reported as ratios to tantivy, because this machine is shared
and absolute times drift by +-30%. What is measured, and the targets (docs/BENCHMARKS.md):

- ranked search, k=10 and k=100 (docid, url, title, score, chunk ordinal of each document's
  best chunk): p50 <= 0.5x tantivy, p99 <= 0.7x tantivy;
- complete hits (plus chunk text and a snippet; tantivy: stored text): p50 <= 1.0x tantivy;
- throughput of 2 serving processes >= 1.9x one (each process opens the index itself), and of
  one process with 2 threads sharing one engine >= 1.9x one thread (the C kernel releases the
  GIL); q/s per core of each;
- ordered top-10 documents identical to FTS5's own ``bm25()`` ranking on >= 299/300 queries;
- ranked search against PISA (MaxScore and block-max WAND over its SIMD-compressed index, the
  ``pyterrier-pisa`` wheel's compiled module called in-process; the ``bench`` extra; skipped
  with a note when the wheel is not installed): the ratios ours/PISA MaxScore, for the goals
  k=10 p50 <= 1.0x, p99 <= 0.7x, k=100 p50 <= 0.8x; entity and rare-name queries (the
  ``--vocabulary large`` corpus, ``corpus_gen.py``) <= 1.5x (reported as goals met or not);
- the per-query fixed cost: one-term (``single``: a frequent, mid or rare word) and two-word
  (``pair-rare``: a word and a rare name) queries against PISA's engine-only call (its
  ``retrieve`` on a query parsed beforehand), p50 and p99 <= 1.0x (web and large vocabularies;
  not in the throughput mix);
- build <= 5 min, build peak RSS <= 2 GB, file <= 3.5 GB (full scale);
- a fresh process opens the index and answers its first query in < 1 s; a serving process
  keeps < 100 MB of memory of its own (anonymous: its heap, arrays and buffers; not the
  file's pages, which are the page cache every process shares) after its queries.

Several configurations in one run (``--docs 30318,121272`` or ``--scales 1,4``, times
``--vocabulary web,synthetic15k,large``) print each one's report and then one table of them all (rows:
scale x vocabulary x query class).

Usage::

    python benchmarks/search_bench.py                         # full DR-256 scale (~11 min)
    python benchmarks/search_bench.py --docs 2000 --queries 50  # smoke run (~1-2 min)
    python benchmarks/search_bench.py --scales 1,4 --vocabulary web,synthetic15k --drop-indexes
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import multiprocessing as mp
import os
import platform
import random
import resource
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import corpus_gen
import numpy as np

HERE = Path(__file__).resolve().parent
MiB = 1 << 20
GB = 1_000_000_000

# (name, bound, sense): sense "<=" means measured <= bound passes.
TARGETS: dict[str, tuple[float, str]] = {
    "ranked_p50_ratio": (0.5, "<="),
    "ranked_p99_ratio": (0.7, "<="),
    "complete_p50_ratio": (1.0, "<="),
    "throughput_2p_over_1p": (1.9, ">="),
    "throughput_threads_over_1": (1.9, ">="),  # one process, 2 threads, over one thread
    "build_seconds": (300.0, "<="),
    "build_peak_rss_bytes": (2 * GB, "<="),
    "file_bytes": (3.5 * GB, "<="),
    "first_query_seconds": (1.0, "<"),
    "private_bytes_per_process": (100 * MiB, "<"),
}


# ---------------------------------------------------------------------------------------------
# Children: builds and fresh-process measurements run in their own processes, so that peak RSS
# (ru_maxrss of the child itself) and start-up costs are the engine's alone.
# ---------------------------------------------------------------------------------------------

def _max_rss_bytes() -> int:
    """This process's own peak RSS: ``VmHWM``, the high-water mark of its address space.

    Not ``ru_maxrss``: Linux carries the pre-exec address space's peak into it, so a child
    started from a benchmark process holding gigabytes (a large corpus's planning tables)
    would report the parent's size as its own peak. ``ru_maxrss`` only where there is no
    /proc (not Linux)."""
    with contextlib.suppress(OSError), open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


def _dir_bytes(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


@dataclass(frozen=True, slots=True)
class Chunk:
    """One chunk as every engine indexes it (rowid = drsearch's chunk rowid)."""

    rowid: int
    doc: int  # document rowid (1-based, sorted docid order)
    ordinal: int
    docid: str
    url: str
    title: str
    text: str


def iter_chunks(corpus: Path) -> Iterator[Chunk]:
    """The corpus's chunks exactly as drsearch cuts and numbers them (docids must be sorted).

    A passage file (``{"id", "contents"}`` lines, ``corpus_gen.py --passages``) is taken as
    ``drsearch build`` takes it: each passage one document and one chunk, ``contents`` whole,
    numbered in file order (ids need not be sorted), its title the first line, its URL
    ``passage:<id>``."""
    from drsearch.index import chunk_words
    from drsearch.index.build import PASSAGE_URL_PREFIX, is_passage
    from drsearch.index.text import normalize_text

    rowid, last = 0, ""
    with open(corpus, encoding="utf-8") as fh:
        for doc, line in enumerate(fh, 1):
            d = json.loads(line)
            if is_passage(d):
                pid, contents = d["id"], d["contents"]
                yield Chunk(doc, doc, 0, pid, f"{PASSAGE_URL_PREFIX}{pid}", contents.partition("\n")[0],
                            contents)
                continue
            if d["docid"] <= last:
                raise SystemExit(f"{corpus}: docids are not sorted at line {doc}")
            last = d["docid"]
            for span, text in chunk_words(normalize_text(d["text"]).split()):
                rowid += 1
                yield Chunk(rowid, doc, span.ordinal, d["docid"], d["url"],
                            normalize_text(d["title"]), text)


def _child_build_ours(a: dict[str, Any]) -> dict[str, Any]:
    from drsearch.index import BuildSettings, Engine, build, read_jsonl

    out = Path(a["out"])
    t0 = time.perf_counter()
    report = build(read_jsonl(a["corpus"]), out,
                   BuildSettings(tokenizer=a["tokenizer"], threads=a.get("threads", 1)), overwrite=True)
    seconds = time.perf_counter() - t0
    own, worker = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    worker_rss = worker.ru_maxrss * 1024  # threads=2's worker process
    with Engine.open(out) as e:
        stats = e.stats()
    # Peak RSS: the build process's plus its worker's (a bound: their peaks need not coincide).
    return {"seconds": seconds, "peak_rss_bytes": _max_rss_bytes() + worker_rss,
            "worker_peak_rss_bytes": worker_rss, "bytes": out.stat().st_size,
            "self_cpu_s": own.ru_utime + own.ru_stime, "worker_cpu_s": worker.ru_utime + worker.ru_stime,
            "documents": report.documents, "chunks": report.chunks,
            "vocabulary": stats["vocabulary"], "postings": stats["postings"],
            "tokens": stats["tokens"]}


def _tantivy_analyzer(tokenizer: str) -> Any:
    """tantivy's closest match to FTS5's ``unicode61`` (+ ``porter``): split on
    non-alphanumerics, lower-case, fold diacritics (+ English Snowball stemmer)."""
    import tantivy

    b = (tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
         .filter(tantivy.Filter.remove_long(64))
         .filter(tantivy.Filter.lowercase())
         .filter(tantivy.Filter.ascii_fold()))
    if tokenizer == "porter":
        b = b.filter(tantivy.Filter.stemmer("english"))
    return b.build()


def _tantivy_schema() -> Any:
    import tantivy

    sb = tantivy.SchemaBuilder()
    sb.add_unsigned_field("chunk", fast=True)
    sb.add_unsigned_field("doc", fast=True)
    sb.add_unsigned_field("ordinal", stored=True, fast=True)
    for name in ("docid", "url", "title"):
        sb.add_text_field(name, stored=True, tokenizer_name="raw", index_option="basic")
    sb.add_text_field("text", stored=True, tokenizer_name="drs", index_option="freq")
    return sb.build()


def _child_build_tantivy(a: dict[str, Any]) -> dict[str, Any]:
    import tantivy

    path = Path(a["dir"])
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    t0 = time.perf_counter()
    index = tantivy.Index(_tantivy_schema(), path=str(path), reuse=False)
    index.register_tokenizer("drs", _tantivy_analyzer(a["tokenizer"]))
    writer = index.writer(heap_size=a["heap_bytes"], num_threads=a["threads"])
    n = 0
    for c in iter_chunks(Path(a["corpus"])):
        d = tantivy.Document()
        d.add_unsigned("chunk", c.rowid)
        d.add_unsigned("doc", c.doc)
        d.add_unsigned("ordinal", c.ordinal)
        d.add_text("docid", c.docid)
        d.add_text("url", c.url)
        d.add_text("title", c.title)
        d.add_text("text", c.text)
        writer.add_document(d)
        n += 1
    writer.commit()
    writer.wait_merging_threads()
    seconds = time.perf_counter() - t0
    index.reload()
    return {"seconds": seconds, "peak_rss_bytes": _max_rss_bytes(), "bytes": _dir_bytes(path),
            "chunks": n, "segments": index.searcher().num_segments,
            "threads": a["threads"], "heap_bytes": a["heap_bytes"]}


PISA_ENCODING, PISA_BLOCK = "block_simdbp", 64  # pyterrier-pisa's defaults


def load_pisathon() -> tuple[Any | None, str]:
    """pyterrier-pisa's compiled module ``_pisathon``, loaded on its own: the package's
    ``__init__`` imports PyTerrier (Java), which this benchmark does not need. Returns
    (module, "") or (None, why it is unavailable)."""
    import importlib.machinery
    import importlib.util

    spec = importlib.util.find_spec("pyterrier_pisa")
    if spec is None or not spec.submodule_search_locations:
        return None, "pyterrier-pisa is not installed (pip install -e '.[bench]')"
    for d in spec.submodule_search_locations:
        for so in sorted(Path(d).glob("_pisathon*.so")):
            loader = importlib.machinery.ExtensionFileLoader("pyterrier_pisa._pisathon", str(so))
            mspec = importlib.util.spec_from_file_location("pyterrier_pisa._pisathon", so,
                                                           loader=loader)
            if mspec is None:
                continue
            module = importlib.util.module_from_spec(mspec)
            try:
                loader.exec_module(module)
            except ImportError as e:  # e.g. libtbb.so.2 missing: the wheel's tbb dependency
                return None, f"pyterrier-pisa's _pisathon does not load ({e})"
            return module, ""
    return None, "pyterrier-pisa has no compiled _pisathon module for this Python"


def _pisa_prepare(pisa: Any, path: Path, quantize: bool = False) -> Any:
    """A retrieval context (BM25 k1 1.2, b 0.75 as FTS5's; no stemmer, no stopwords: the
    terms are drsearch's own, as codes); the first call writes PISA's block-max data and
    compressed index next to the inverted index. ``quantize``: PISA as people run it, its
    impacts precomputed and quantised to 8 bits (the wheel's ``quantize`` flag, PISA's
    default width), in files of their own beside the unquantised ones."""
    ctx = pisa.RetrievalContext()
    pisa.prepare_index(ctx, str(path), PISA_ENCODING, "bm25", "", block_size=PISA_BLOCK,
                       quantize=1 if quantize else 0, bm25_k1=1.2, bm25_b=0.75, stop_fname="")
    return ctx


# PISA's plain-text tokenizer keeps only runs of ASCII letters and digits: it drops Hangul,
# Cyrillic and CJK words and splits "straße" into "stra" and "e". FTS5's terms (unicode61)
# therefore cannot reach it as text: each distinct term is fed as a code of lower-case ASCII
# letters (one PISA token as it is), and the codes' terms are kept next to PISA's index.
PISA_TERMS_FILE = "drsearch-terms.json"  # FTS5 term of code i at index i (pisa_code(i))


def pisa_code(i: int) -> str:
    """The i-th code (i >= 0): bijective base 26 over a-z: a, ..., z, aa, ab, ..."""
    out = []
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out.append(chr(97 + r))
    return "".join(reversed(out))


class _PisaCodes(dict[str, str]):
    """term -> code, a new code for each term in first-seen order (``terms``: code order)."""

    def __init__(self) -> None:
        super().__init__()
        self.terms: list[str] = []

    def __missing__(self, term: str) -> str:
        code = self[term] = pisa_code(len(self.terms))
        self.terms.append(term)
        return code


def pisa_term_codes(path: Path) -> dict[str, str]:
    """FTS5 term -> the code PISA indexed it as (the query side's mapping)."""
    f = path / PISA_TERMS_FILE
    if not f.is_file():
        raise SystemExit(f"{path}: PISA index without {PISA_TERMS_FILE} (built by an older "
                         "benchmark that fed PISA plain text): rebuild it (run without --reuse)")
    return {t: pisa_code(i) for i, t in enumerate(json.loads(f.read_text(encoding="utf-8")))}


def _varint(blob: bytes) -> int:
    """The first SQLite varint of a blob (FTS5's docsize: one per column; < 2^28 here)."""
    v = 0
    for byte in blob[:4]:
        v = (v << 7) | (byte & 0x7F)
        if byte < 0x80:
            return v
    raise SystemExit(f"FTS5 docsize blob {blob[:9].hex()} holds no token count below 2^28")


def fts5_chunk_sizes(index: Path) -> np.ndarray:
    """Each chunk's token count as FTS5 itself stored it (``chunks_fts_docsize``), by chunk
    rowid (entry 0 unused): the document lengths of FTS5's ``bm25()``."""
    import apsw

    conn = apsw.Connection(f"file:{index}?mode=ro&immutable=1",
                           flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        n = conn.execute("SELECT max(id) FROM chunks").get or 0
        sizes = np.zeros(n + 1, dtype=np.int64)
        for rowid, sz in conn.execute("SELECT id, sz FROM chunks_fts_docsize"):
            sizes[rowid] = _varint(sz)
    finally:
        conn.close()
    return sizes


def pisa_size_mismatches(path: Path, index: Path) -> tuple[int, list[tuple[int, int, int]]]:
    """PISA's document sizes (``inv.sizes``, docno order ``fwd.documents``) against FTS5's
    token counts of the same chunks: (chunks compared, [(chunk rowid, PISA size, FTS5 size)]
    for each chunk that differs, or is missing on one side: size -1)."""
    raw = np.fromfile(path / "inv.sizes", dtype=np.uint32)
    docnos = (path / "fwd.documents").read_text(encoding="utf-8").split()
    if len(raw) == 0 or int(raw[0]) != len(raw) - 1 or len(docnos) != len(raw) - 1:
        raise SystemExit(f"{path}: inv.sizes ({len(raw)} words, header "
                         f"{int(raw[0]) if len(raw) else '-'}) and fwd.documents ({len(docnos)} "
                         "docnos) disagree: not a complete PISA index")
    pisa_sizes = dict(zip((int(d) for d in docnos), raw[1:].tolist(), strict=True))
    fts5 = fts5_chunk_sizes(index)
    out = [(rowid, pisa_sizes.get(rowid, -1), int(fts5[rowid]))
           for rowid in range(1, len(fts5)) if pisa_sizes.get(rowid, -1) != int(fts5[rowid])]
    out += [(rowid, size, -1) for rowid, size in sorted(pisa_sizes.items())
            if not 1 <= rowid < len(fts5)]
    return len(fts5) - 1, out


def check_pisa_sizes(path: Path, index: Path) -> int:
    """Raise SystemExit (one line, the first chunk named) unless PISA indexed exactly FTS5's
    number of tokens of every chunk, under the chunk's own rowid as docno; returns the number
    of chunks checked. Equal sizes for every chunk mean the same avgdl too."""
    n, bad = pisa_size_mismatches(path, index)
    if bad:
        rowid, ps, fs = bad[0]
        raise SystemExit(f"PISA's feed differs from FTS5's tokens: {len(bad)} of {n} chunks have "
                         f"another size, the first chunk {rowid}: {ps} tokens in PISA, {fs} in "
                         "FTS5 (-1: absent)")
    return n


def _child_build_pisa(a: dict[str, Any]) -> dict[str, Any]:
    """PISA over the same chunks with the same terms: each chunk's FTS5 tokens (drsearch's
    tokenizer, read from its built index), each written as its code (``pisa_code``: PISA's
    tokenizer would cut non-ASCII terms), docno = chunk rowid. Then PISA's document sizes are
    checked against FTS5's for every chunk (``check_pisa_sizes``)."""
    from drsearch.index import Engine

    pisa, why = load_pisathon()
    if pisa is None:
        raise SystemExit(why)
    path = Path(a["dir"])
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    codes = _PisaCodes()
    with Engine.open(a["index"]) as e:
        tok = e.tokenizer
        t0 = time.perf_counter()
        fifo = path / "input.fifo"
        os.mkfifo(fifo)
        n = [0]
        failed: list[BaseException] = []

        def feed() -> None:
            try:
                with open(fifo, "w", encoding="ascii") as out:
                    for c in iter_chunks(Path(a["corpus"])):
                        out.write(f"{c.rowid} {' '.join(map(codes.__getitem__, tok.terms(c.text)))}\n")
                        n[0] += 1
            except BaseException as exc:  # reported after PISA has read the (closed) fifo
                failed.append(exc)

        writer = threading.Thread(target=feed, daemon=True)
        writer.start()
        pisa.index(str(fifo), str(path), "", 100_000, max(1, a["threads"] - 1))  # uses threads + 1
        writer.join()
        fifo.unlink()
        if failed:
            raise SystemExit(f"feeding PISA failed after {n[0]} chunks: {failed[0]!r}")
        (path / PISA_TERMS_FILE).write_text(json.dumps(codes.terms, ensure_ascii=False),
                                            encoding="utf-8")
        _pisa_prepare(pisa, path)
        seconds = time.perf_counter() - t0
    checked = check_pisa_sizes(path, Path(a["index"]))
    return {"seconds": seconds, "peak_rss_bytes": _max_rss_bytes(), "bytes": _dir_bytes(path),
            "chunks": n[0], "threads": a["threads"], "encoding": PISA_ENCODING,
            "block": PISA_BLOCK, "terms": len(codes.terms), "sizes_equal_fts5": checked}


def _child_build_bm25s(a: dict[str, Any]) -> dict[str, Any]:
    import bm25s

    path = Path(a["dir"])
    shutil.rmtree(path, ignore_errors=True)
    t0 = time.perf_counter()
    # A generator: bm25s never holds the chunk texts, only their token ids.
    tokens = bm25s.tokenize((c.text for c in iter_chunks(Path(a["corpus"]))), stopwords=None,
                            show_progress=False)
    n = len(tokens.ids)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    del tokens
    retriever.save(str(path))
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "peak_rss_bytes": _max_rss_bytes(), "bytes": _dir_bytes(path),
            "chunks": n}


_FIRST_QUERY = """
import json, sys, time
t0 = time.perf_counter()
from drsearch.index import Engine
t1 = time.perf_counter()
e = Engine.open(sys.argv[1])
t2 = time.perf_counter()
r = e.search(sys.argv[2], 10)
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "open_s": t2 - t1, "query_s": t3 - t2,
                  "hits": len(r.hits)}))
"""


def drop_from_page_cache(path: Path) -> None:
    """Evict the file's clean pages from the OS page cache (no root needed): a cold start."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def read_through(path: Path) -> None:
    """Read the whole file once so that later measurements start from a warm page cache."""
    with open(path, "rb") as fh:
        while fh.read(1 << 24):
            pass


def first_query(index: Path, query: str, cold: bool = False) -> dict[str, Any]:
    """Spawn a fresh interpreter that opens the index and answers one query (parent wall).

    ``cold``: evict the index file from the page cache first (as after a reboot or a copy).
    """
    if cold:
        drop_from_page_cache(index)
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _FIRST_QUERY, str(index), query],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"fresh-process query failed:\n{out.stderr[-4000:]}")
    wall = time.perf_counter() - t0
    return {"wall_s": wall, **json.loads(out.stdout)}


CHILDREN: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "build-ours": _child_build_ours,
    "build-tantivy": _child_build_tantivy,
    "build-bm25s": _child_build_bm25s,
    "build-pisa": _child_build_pisa,
}


def run_child(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run one CHILDREN task in a fresh interpreter; returns its JSON result."""
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", name,
                           json.dumps(args)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"child {name} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------------------------
# Engines under test, behind one interface. Each returns, per document, its best chunk as
# (docid, url, title, score, chunk ordinal) [+ chunk text (+ snippet)].
# ---------------------------------------------------------------------------------------------

Row = tuple[str, str, str, float, int]


class Meta:
    """Per-document metadata and chunk arrays, read from the drsearch file once.

    tantivy and bm25s use these in-memory tables for ranked results (the most generous
    setting for them: no stored-field I/O); drsearch reads them from SQLite per query.
    """

    def __init__(self, index: Path) -> None:
        import apsw

        conn = apsw.Connection(f"file:{index}?mode=ro&immutable=1",
                               flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        docs = list(conn.execute("SELECT id, docid, url, title FROM documents ORDER BY id"))
        self.docs: list[tuple[str, str, str]] = [("", "", "")] + [(d, u, t) for _, d, u, t in docs]
        n = conn.execute("SELECT max(id) FROM chunks").get
        self.chunk_doc = np.zeros(n + 1, dtype=np.int64)
        self.chunk_ord = np.zeros(n + 1, dtype=np.int64)
        for cid, doc, ordinal in conn.execute("SELECT id, doc, ordinal FROM chunks"):
            self.chunk_doc[cid] = doc
            self.chunk_ord[cid] = ordinal
        conn.close()


class Ours:
    """drsearch: ``Engine.search`` (ranked: ``with_text=False``)."""

    name = "ours"

    def __init__(self, index: Path) -> None:
        from drsearch.index import Engine

        self.engine = Engine.open(index)

    def ranked(self, q: str, k: int) -> list[Row]:
        return [(h.docid, h.url, h.title, h.score, h.chunk_ordinal)
                for h in self.engine.search(q, k, with_text=False).hits]

    def complete(self, q: str, k: int) -> list[tuple[Row, str, str]]:
        return [((h.docid, h.url, h.title, h.score, h.chunk_ordinal), h.chunk_text, h.snippet)
                for h in self.engine.search(q, k).hits]


class Tantivy:
    """tantivy: OR of the query's analysed terms; best chunk per document by over-fetching."""

    name = "tantivy"

    def __init__(self, path: Path, tokenizer: str, meta: Meta) -> None:
        import tantivy

        self.t = tantivy
        self.index = tantivy.Index.open(str(path))
        self.analyzer = _tantivy_analyzer(tokenizer)
        self.index.register_tokenizer("drs", self.analyzer)
        self.schema = self.index.schema
        self.searcher: Any = self.index.searcher()  # untyped results: ints from fast fields
        self.meta = meta

    def _query(self, q: str) -> Any:
        t = self.t
        terms = list(dict.fromkeys(self.analyzer.analyze(q)))
        if not terms:
            return None
        return t.Query.boolean_query(
            [(t.Occur.Should, t.Query.term_query(self.schema, "text", w, index_option="freq"))
             for w in terms])

    def _top(self, query: Any, k: int) -> list[tuple[float, Any]]:
        limit = 4 * k
        while True:
            hits = self.searcher.search(query, limit, count=False).hits
            docs = self.searcher.fast_field_values("doc", [a for _, a in hits])
            seen: set[int] = set()
            out = []
            for (score, addr), doc in zip(hits, docs, strict=True):
                if doc not in seen:
                    seen.add(doc)
                    out.append((score, addr))
                    if len(out) == k:
                        return out
            if len(hits) < limit:
                return out
            limit *= 4

    def ranked(self, q: str, k: int) -> list[Row]:
        query = self._query(q)
        if query is None:
            return []
        top = self._top(query, k)
        chunks = self.searcher.fast_field_values("chunk", [a for _, a in top])
        m = self.meta
        return [(*m.docs[int(m.chunk_doc[c])], s, int(m.chunk_ord[c]))
                for (s, _), c in zip(top, chunks, strict=True)]

    def complete(self, q: str, k: int, snippet: bool = False) -> list[tuple[Row, str, str]]:
        query = self._query(q)
        if query is None:
            return []
        gen = (self.t.SnippetGenerator.create(self.searcher, query, self.schema, "text")
               if snippet else None)
        out = []
        for score, addr in self._top(query, k):
            d = self.searcher.doc(addr)
            row = (d.get_first("docid"), d.get_first("url"), d.get_first("title"), score,
                   d.get_first("ordinal"))
            snip = gen.snippet_from_doc(d).fragment() if gen is not None else ""
            out.append((row, d.get_first("text"), snip))
        return out


class Pisa:
    """PISA (``maxscore`` or ``block_max_wand``): the query's drsearch terms, pretokenised, as
    the codes they were indexed under (terms absent from the corpus match nothing, as in ours);
    best chunk per document by over-fetching, as for tantivy."""

    def __init__(self, path: Path, index: Path, meta: Meta, algorithm: str,
                 codes: dict[str, str] | None = None, quantized: bool = False) -> None:
        from drsearch.index import Engine

        pisa, why = load_pisathon()
        if pisa is None:
            raise SystemExit(why)
        self.pisa, self.algorithm, self.meta = pisa, algorithm, meta
        self.name = {"maxscore": "pisa", "block_max_wand": "pisa_bmw"}[algorithm] + (
            "_q8" if quantized else "")
        self.codes = pisa_term_codes(path) if codes is None else codes
        self.ctx = _pisa_prepare(pisa, path, quantized)
        self.engine = Engine.open(index)  # its FTS5 tokenizer: the same terms as drsearch's

    def terms(self, q: str) -> dict[str, float]:
        """The query's terms as PISA's codes (absent terms dropped): what its call takes."""
        codes = self.codes
        return {codes[t.term]: 1.0 for t in self.engine.parse(q).terms if t.term in codes}

    def _retrieve(self, terms: dict[str, float], limit: int) -> tuple[np.ndarray, np.ndarray]:
        qidx, ranks = np.empty(limit, dtype=np.int32), np.empty(limit, dtype=np.int32)
        docnos, scores = np.empty(limit, dtype=object), np.empty(limit, dtype=np.float32)
        n = self.pisa.retrieve(self.ctx, self.algorithm, [(0, terms)], k=limit, threads=1,
                               pretokenised=True, query_weighted=0, result_qidxs=qidx,
                               result_docnos=docnos, result_ranks=ranks, result_scores=scores)
        return docnos[:n], scores[:n]

    def ranked(self, q: str, k: int, ties: bool = False) -> list[Row]:
        """Top k documents. PISA orders chunks of equal score arbitrarily (its final sort is
        not stable) and keeps an arbitrary few of those tied at the over-fetch's boundary;
        ``ties``: order them as ours and FTS5 do (lower chunk rowid first), with every chunk
        tied at the k-th document's score fetched, for the agreement check only, so that the
        timed path does no extra work."""
        terms = self.terms(q)
        if not terms:
            return []
        m = self.meta
        limit = 4 * k
        while True:
            docnos, scores = self._retrieve(terms, limit)
            hits: Iterator[tuple[Any, float]] = zip(docnos.tolist(), scores.tolist(), strict=True)
            if ties:
                hits = iter(sorted(((int(d), s) for d, s in hits), key=lambda h: (-h[1], h[0])))
            seen: set[int] = set()
            out: list[Row] = []
            for docno, score in hits:
                chunk = int(docno)
                doc = int(m.chunk_doc[chunk])
                if doc not in seen:
                    seen.add(doc)
                    out.append((*m.docs[doc], float(score), int(m.chunk_ord[chunk])))
                    if len(out) == k:
                        break
            if len(docnos) < limit:
                return out
            # PISA's top-limit heap keeps an arbitrary few of the chunks tied at its lowest
            # score; with ``ties``, fetch on until that score is below the k-th document's,
            # so that every chunk tied at the k-th score is there (ours: lower rowid first).
            if len(out) == k and not (ties and float(scores.min()) >= out[-1][3]):
                return out
            limit *= 4


class PisaBare:
    """PISA's engine-only call: the ``retrieve`` itself over a query parsed beforehand (its
    codes looked up once, outside the timing), k chunks, no grouping into documents and no
    hit rows: the floor any Python caller of PISA pays. Its ranked lists are chunks, not
    documents; it is timed, not compared."""

    def __init__(self, pisa: Pisa, queries: Sequence[str]) -> None:
        self.pisa = pisa
        self.name = pisa.name + "_bare"
        self.parsed = {q: pisa.terms(q) for q in queries}

    def ranked(self, q: str, k: int) -> object:
        terms = self.parsed[q]
        return self.pisa._retrieve(terms, k) if terms else None


class Bm25s:
    """bm25s (numpy backend): scores every chunk, then best chunk per document."""

    name = "bm25s"

    def __init__(self, path: Path, meta: Meta) -> None:
        import bm25s

        self.bm25s = bm25s
        self.retriever = bm25s.BM25.load(str(path), mmap=True)
        self.meta = meta

    def ranked(self, q: str, k: int) -> list[Row]:
        toks = self.bm25s.tokenize([q], stopwords=None, return_ids=False, show_progress=False)[0]
        vocab = self.retriever.vocab_dict
        toks = [t for t in dict.fromkeys(toks) if t in vocab]
        if not toks:
            return []
        scores = self.retriever.get_scores(toks)
        limit = min(len(scores), 4 * k)
        while True:
            top = np.argpartition(-scores, limit - 1)[:limit]
            top = top[np.lexsort((top, -scores[top]))]
            top = top[scores[top] > 0]
            docs = self.meta.chunk_doc[top + 1]
            _, first = np.unique(docs, return_index=True)
            if len(first) >= k or limit >= len(scores) or len(top) < limit:
                break
            limit = min(len(scores), limit * 4)
        first = np.sort(first)[:k]
        m = self.meta
        return [(*m.docs[int(docs[i])], float(scores[top[i]]), int(m.chunk_ord[top[i] + 1]))
                for i in first.tolist()]


# ---------------------------------------------------------------------------------------------
# Measurements
# ---------------------------------------------------------------------------------------------

@dataclass
class Timings:
    """Latencies (seconds) of one operation for one engine: ``rounds`` samples per query."""

    per_query: list[list[float]] = field(default_factory=list)

    def typical(self) -> np.ndarray:
        """Each query's median over the rounds (damps one-off hiccups of a shared machine)."""
        return np.array([np.median(s) for s in self.per_query])

    def pct(self, p: float) -> float:
        return float(np.percentile(self.typical(), p)) if self.per_query else float("nan")


ORDER_SEED = 20261129
PISA_NAMES = ("pisa", "pisa_bmw", "pisa_q8", "pisa_q8_bare")


def interleaved(engines: Sequence[Any], queries: Sequence[str], warmup: int, rounds: int,
                snippet_peer: bool, order: str = "shuffle") -> dict[str, dict[str, Timings]]:
    """Latency per (operation, engine): every (engine, operation) pair takes its turn on each
    query, in a fresh seeded random order per query and round (``shuffle``), so that every
    task follows every other about equally often. A task's time depends on what ran just
    before it (what that evicted from the caches and TLB: bm25s's dense score arrays evict
    far more than a ranked tantivy query), so a fixed cyclic order (``rotate``: rotated from
    query to query, as the first versions of this script did) always hands each engine's
    first task the same predecessor, a systematic bias."""
    ops: list[tuple[str, Callable[[Any, str], object], set[str]]] = [
        ("ranked_k10", lambda e, q: e.ranked(q, 10), {"ours", "tantivy", "bm25s", *PISA_NAMES}),
        ("ranked_k100", lambda e, q: e.ranked(q, 100), {"ours", "tantivy", "bm25s", *PISA_NAMES}),
        ("complete_k10", lambda e, q: e.complete(q, 10), {"ours", "tantivy"}),
    ]
    if snippet_peer:
        ops.append(("complete_k10_snippet", lambda e, q: e.complete(q, 10, snippet=True),
                    {"tantivy"}))
    tasks = [(e, op, fn) for e in engines for op, fn, who in ops if e.name in who]
    for q in queries[:warmup]:
        for e, _, fn in tasks:
            fn(e, q)
    res = {op: {e.name: Timings([[] for _ in queries]) for e in engines if e.name in who}
           for op, _, who in ops}
    clock = time.perf_counter
    rng = random.Random(ORDER_SEED)
    for r in range(rounds):
        for i, q in enumerate(queries):
            if order == "shuffle":
                turn = rng.sample(tasks, len(tasks))
            else:
                j = (i + r * 7) % len(tasks)
                turn = [*tasks[j:], *tasks[:j]]
            for e, op, fn in turn:
                t0 = clock()
                fn(e, q)
                res[op][e.name].per_query[i].append(clock() - t0)
    return res


def fts5_top_docs(engine: Any, q: str, k: int) -> list[tuple[int, int, float]]:
    """FTS5's own ranking grouped to the best chunk per document: first k (doc, chunk, score)."""
    limit = 1000
    while True:
        rows = engine.fts5_rank(q, limit)
        out: list[tuple[int, int, float]] = []
        seen: set[int] = set()
        for cid, score in rows:
            doc = int(engine._chunk_doc[cid])
            if doc not in seen:
                seen.add(doc)
                out.append((doc, cid, score))
                if len(out) == k:
                    return out
        if len(rows) < limit:
            return out
        limit *= 4


def fts5_agreement(index: Path, queries: Sequence[str], k: int = 10) -> dict[str, Any]:
    """On how many queries ``rank`` gives FTS5's ordered top-k documents (and chunks, scores)."""
    from drsearch.index import Engine

    same_docs = same_chunks = same_scores = 0
    mismatches: list[str] = []
    t_fts = t_ours = 0.0
    with Engine.open(index) as e:
        for q in queries:
            t0 = time.perf_counter()
            ours = e.rank(q, k)
            t1 = time.perf_counter()
            ref = fts5_top_docs(e, q, k)
            t2 = time.perf_counter()
            t_ours += t1 - t0
            t_fts += t2 - t1
            docs = [int(e._chunk_doc[c]) for c, _ in ours]
            if docs == [d for d, _, _ in ref]:
                same_docs += 1
            else:
                mismatches.append(q)
            same_chunks += [c for c, _ in ours] == [c for _, c, _ in ref]
            same_scores += [s for _, s in ours] == [s for _, _, s in ref]
    n = len(queries)
    return {"queries": n, "same_docs": same_docs, "same_chunks": same_chunks,
            "same_scores_bitwise": same_scores, "mismatches": mismatches[:20],
            "fts5_mean_s": t_fts / n, "rank_mean_s": t_ours / n}


# PISA's BM25 is FTS5's, computed in float32: at equal rank, its score is within this relative
# difference of ours (float64, FTS5's bits). Float32 rounds each step to 6e-8 relative, a few
# steps per term: a bound of 1e-5 holds for the benchmark's queries (3-20 words) with a wide
# margin; measured at most 4.5e-7 (300 to 1,000 documents, every query class). Float32 also
# cannot see the terms in half of the chunks or more (idf floored at 1e-6: each adds at most
# 2.2e-6, and one more occurrence 1e-9 to 1e-7, below one unit in the last place of a float32
# score of ~10, ~1e-6): chunks that differ only in such terms' counts tie in PISA (ordered by
# rowid) where FTS5 and ours order them by those counts.
PISA_SCORE_RTOL = 1e-5


def pisa_agreement(ours: Any, pisa: Any, queries: Sequence[str], k: int = 10) -> dict[str, Any]:
    """PISA's top k documents against ours, query by query.

    PISA (``block_simdbp``, ``bm25`` with k1 1.2, b 0.75) scores with FTS5's formula: idf
    ln((N - df + 0.5) / (df + 0.5)) floored at 1e-6, times (k1 + 1) tf / (tf + k1 (1 - b + b
    dl / avgdl)), dl the chunk's token count and avgdl their mean over the chunks: the same
    numbers once its feed holds FTS5's tokens (``check_pisa_sizes``). What differs is the
    arithmetic: float32, summed in its own term order, where ours and FTS5 use float64 in
    phrase order. So scores agree within float32 rounding (``PISA_SCORE_RTOL``), not bitwise,
    and two documents whose scores differ by less than that can tie in PISA, or swap.
    PISA's equal scores are ordered as ours (lower chunk rowid first: ``Pisa.ranked(ties=True)``).

    Counts (of ``queries``): ``ordered``, the same documents in the same order; ``same_set``,
    the same documents in any order; ``near_ties``, lists that are not ordered-equal but whose
    scores agree at every rank within PISA_SCORE_RTOL (they differ only among documents within
    float32 rounding of each other, a tie at the k-th score included; the first 20 in
    ``near_tie_swaps``: the ranks that differ and both sides' (docid, score) there);
    ``differ``, the others (first 20 in ``mismatches``): real disagreements.
    ``max_rel_score_diff``: the largest |PISA - ours| / ours at equal rank over all queries
    (lists of unequal length excluded: they count in ``differ``)."""
    ordered = same_set = near_ties = 0
    max_rel = 0.0
    mismatches: list[str] = []
    swaps: list[dict[str, Any]] = []
    for q in queries:
        a, b = ours.ranked(q, k), pisa.ranked(q, k, ties=True)
        da, db = [r[0] for r in a], [r[0] for r in b]
        sa, sb = np.array([r[3] for r in a]), np.array([r[3] for r in b])
        close = len(sa) == len(sb)
        if close and len(sa):
            max_rel = max(max_rel, float(np.max(np.abs(sb - sa) / np.abs(sa))))
            close = bool(np.allclose(sb, sa, rtol=PISA_SCORE_RTOL, atol=0.0))
        same_set += set(da) == set(db)
        if da == db:
            ordered += 1
        elif close:
            near_ties += 1
            at = [i for i, (x, y) in enumerate(zip(da, db, strict=True)) if x != y]
            swaps.append({"query": q, "ranks": [at[0] + 1, at[-1] + 1],
                          "ours": [[r[0], r[3]] for r in a[at[0]:at[-1] + 1]],
                          "pisa": [[r[0], r[3]] for r in b[at[0]:at[-1] + 1]]})
        else:
            mismatches.append(q)
    return {"queries": len(queries), "k": k, "ordered": ordered, "same_set": same_set,
            "near_ties": near_ties, "near_tie_swaps": swaps[:20], "differ": len(mismatches),
            "mismatches": mismatches[:20],
            "max_rel_score_diff": max_rel, "score_rtol": PISA_SCORE_RTOL}


def pisa_agreement_line(cls: str, pa: dict[str, Any]) -> str:
    """The report's line for one class's ``pisa_agreement``."""
    n = pa["queries"]
    return (f"{cls}: PISA MaxScore top-{pa['k']} vs ours (same BM25, float32): ordered "
            f"documents equal on {pa['ordered']}/{n}, same set {pa['same_set']}/{n}; of the "
            f"others {pa['near_ties']} differ only among scores within {pa['score_rtol']:g} "
            f"relative (float32 near-ties), {pa['differ']} otherwise; max relative score "
            f"difference at equal rank {pa['max_rel_score_diff']:.1e} (info)")


def _smaps() -> dict[str, int]:
    """This process's /proc/self/smaps_rollup, in bytes."""
    out: dict[str, int] = {}
    with open("/proc/self/smaps_rollup") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                out[parts[0].rstrip(":")] = int(parts[1]) * 1024
    return out


# What getrusage(RUSAGE_SELF) says of a serving process over the timed window (every thread
# of it): CPU seconds, voluntary context switches (a thread that sleeps: in the threads mode
# mostly a wait for the GIL), involuntary ones (preempted), minor page faults.
_RUSAGE_FIELDS = (("user_s", "ru_utime"), ("sys_s", "ru_stime"), ("waits", "ru_nvcsw"),
                  ("preempted", "ru_nivcsw"), ("faults", "ru_minflt"))


def _rusage_delta(a: Any, b: Any) -> dict[str, float]:
    return {name: float(getattr(b, f) - getattr(a, f)) for name, f in _RUSAGE_FIELDS}


def per_query_costs(results: Sequence[dict[str, Any]]) -> dict[str, float]:
    """The serving processes' rusage over their timed windows, per query served: CPU µs
    (user, system, both), voluntary and involuntary context switches, minor faults. Where the
    threads mode's q/s falls short of one thread's times T, this says whether the threads
    spent more CPU per query (shared cache lines, hand-offs) or waited (for the GIL)."""
    total = sum(r["queries"] for r in results)
    got = {name: sum(r["rusage"][name] for r in results) / max(total, 1) for name, _ in _RUSAGE_FIELDS}
    return {"user_us_per_query": got["user_s"] * 1e6, "sys_us_per_query": got["sys_s"] * 1e6,
            "cpu_us_per_query": (got["user_s"] + got["sys_s"]) * 1e6,
            "waits_per_query": got["waits"], "preempted_per_query": got["preempted"],
            "faults_per_query": got["faults"]}


def _burn(_: str) -> int:
    """Pure-Python CPU work of about one query's size: the machine's own scaling ceiling."""
    x = 0
    for i in range(20_000):
        x += i * i
    return x


_BURN_BUFFER = bytes(256 << 10)


def _burn_nogil(_: str) -> bytes:
    """CPU work of about one query's size that releases the GIL (hashlib does for buffers over
    2 KiB): the machine's scaling ceiling for threads of one process."""
    return hashlib.sha256(_BURN_BUFFER).digest()


def _serving_fn(kind: str, index: str, extra: dict[str, Any]) -> tuple[Callable[[str], object], str | None]:
    """What a serving process calls per query, and the scorer it ranks with (ours only)."""
    if kind == "ours":
        from drsearch.index import Engine

        if "gil_poll_ns" in extra:  # the kernel's poll for the GIL (throughput_ab.py's A/B)
            from drsearch.index import gil_poll_ns

            if gil_poll_ns(int(extra["gil_poll_ns"])) < 0:
                raise SystemExit("search_bench: this kernel cannot poll for the GIL (gil_poll_ns -1)")
        e = Engine.open(index)  # thread-safe: each thread gets its own connection and arena
        k = int(extra.get("k", 10))  # http_bench.py's engine rate for /retrieve's topk
        return (lambda q: e.search(q, k)), str(e.scorer.kind)
    if kind == "tantivy":
        t = Tantivy(Path(extra["dir"]), extra["tokenizer"], Meta(Path(index)))
        return (lambda q: t.complete(q, 10)), None
    return {"burn": _burn, "burn_nogil": _burn_nogil}[kind], None


def _gil_stats_fn(kind: str) -> Callable[[], tuple[float, float, int]] | None:
    """ours: the C kernel's per-thread GIL account (``_kernels.gil_stats``: seconds without the
    GIL, seconds waiting to take it back, releases); None for the other kinds, or where the
    engine ranks without the kernel."""
    if kind != "ours":
        return None
    from drsearch.index.native import native_kernels

    kernels = native_kernels()
    return None if kernels is None else kernels.gil_stats  # type: ignore[no-any-return]


def gil_account(results: Sequence[dict[str, Any]]) -> dict[str, float] | None:
    """The serving threads' time per query, split by the kernel's GIL account: the GIL-free
    work, the waits to take the GIL back, and the rest — the GIL held (Python, the kernel's
    GIL-held parts, and any wait for the GIL outside the kernel). The held part is the serial
    part: two threads cannot both be in it. None without the account (not ours, no kernel)."""
    if any(r.get("gil") is None for r in results):
        return None
    queries = max(sum(r["queries"] for r in results), 1)
    free = sum(r["gil"][0] for r in results)
    wait = sum(r["gil"][1] for r in results)
    releases = sum(r["gil"][2] for r in results)
    held = sum(r["thread_seconds"] for r in results) - free - wait
    return {"gil_held_us_per_query": held / queries * 1e6, "nogil_us_per_query": free / queries * 1e6,
            "gil_wait_us_per_query": wait / queries * 1e6, "gil_releases_per_query": releases / queries,
            "gil_held_share": held / max(held + free + wait, 1e-12)}


def _scorer_kind(kind: str, index: str) -> str | None:
    """The scorer ours ranks with in this process (``Scorer.kind``: the C kernel or numpy);
    None for the other kinds."""
    if kind != "ours":
        return None
    from drsearch.index import Engine

    with Engine.open(index) as e:
        return str(e.scorer.kind)


def _serve(kind: str, index: str, extra: dict[str, Any], queries: list[str], duration: float,
           threads: int, barrier: Any, out: Any) -> None:
    """A serving process with ``threads`` threads sharing one engine: open; every thread
    answers every query once; then all threads answer as many as they can in ``duration``
    (each thread starting at its own offset in the query list)."""
    fn, scorer = _serving_fn(kind, index, extra)
    gil = _gil_stats_fn(kind)
    local = threading.Barrier(threads)
    state: dict[str, Any] = {}
    counts, ends = [0] * threads, [0.0] * threads
    gil_used = [(0.0, 0.0, 0)] * threads

    def work(j: int) -> None:
        for q in queries:
            fn(q)
        if local.wait() == 0:  # one thread: every thread of every process has warmed up
            barrier.wait()
            state["smaps"] = _smaps()
            barrier.wait()
            state["t0"], state["c0"] = time.perf_counter(), time.process_time()
            state["ru0"] = resource.getrusage(resource.RUSAGE_SELF)
        local.wait()
        g0 = gil() if gil else (0.0, 0.0, 0)
        t0, n, i = state["t0"], 0, j * len(queries) // threads
        while time.perf_counter() - t0 < duration:
            fn(queries[(i + n) % len(queries)])
            n += 1
        counts[j], ends[j] = n, time.perf_counter()
        if gil:
            g1 = gil()
            gil_used[j] = (g1[0] - g0[0], g1[1] - g0[1], g1[2] - g0[2])

    pool = [threading.Thread(target=work, args=(j,)) for j in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    out.put({"queries": sum(counts), "seconds": max(ends) - state["t0"],
             "cpu_seconds": time.process_time() - state["c0"], "smaps": state["smaps"],
             "rusage": _rusage_delta(state["ru0"], resource.getrusage(resource.RUSAGE_SELF)),
             # each thread's time in the window, and the kernel's GIL account of it (ours)
             "thread_seconds": sum(e - state["t0"] for e in ends),
             "gil": [sum(g[x] for g in gil_used) for x in range(3)] if gil else None,
             "scorer": scorer})


def throughput(kind: str, index: Path, extra: dict[str, Any], queries: list[str], procs: int,
               duration: float, threads: int = 1) -> dict[str, Any]:
    """Complete k=10 searches per second with ``procs`` independent serving processes of
    ``threads`` threads each."""
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(procs), ctx.Queue()
    ps = [ctx.Process(target=_serve,
                      args=(kind, str(index), extra, queries, duration, threads, barrier, out))
          for _ in range(procs)]
    for p in ps:
        p.start()
    results = [out.get() for _ in ps]
    for p in ps:
        p.join()
    # A serving process must rank as this one does: one whose kernel was refused (the code or
    # the kernel changed during the run: another KERNEL_ABI) would measure numpy, silently.
    want = _scorer_kind(kind, str(index))
    got = sorted({str(r["scorer"]) for r in results if r["scorer"] != want})
    if got:
        raise SystemExit(f"search_bench: a serving process ranked with scorer {got[0]}, this process "
                         f"with {want} (was the code or the C kernel changed during the run?)")
    total = sum(r["queries"] for r in results)
    qps = total / max(r["seconds"] for r in results)
    private = [r["smaps"].get("Private_Clean", 0) + r["smaps"].get("Private_Dirty", 0)
               for r in results]
    # Queries per CPU-second summed over processes: how the engine would scale with every
    # process on a core of its own (insensitive to other load on a shared machine).
    cpu_qps = sum(r["queries"] / r["cpu_seconds"] for r in results)
    # CPU seconds per wall second: the cores the run got (threads waiting for the GIL, or for
    # a core another job holds, use none).
    cores = sum(r["cpu_seconds"] for r in results) / max(r["seconds"] for r in results)
    return {"procs": procs, "threads": threads, "qps": qps, "cpu_qps": cpu_qps, "scorer": want,
            "cores_busy": cores, "queries": total, **per_query_costs(results),
            **(gil_account(results) or {}),
            "private_bytes": private,
            "anonymous_bytes": [r["smaps"].get("Anonymous", 0) for r in results],
            "rss_bytes": [r["smaps"].get("Rss", 0) for r in results],
            "pss_bytes": [r["smaps"].get("Pss", 0) for r in results]}


# (kind, modes): a mode is "1" (one process, one thread), "2" (two processes) or "threads"
# (one process, --threads threads). tantivy and the pure-Python loop only as processes (the
# loop holds the GIL); the GIL-free loop is the threads' control.
THROUGHPUT_KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ours", ("1", "threads", "2")), ("tantivy", ("1", "2")), ("burn", ("1", "2")),
    ("burn_nogil", ("1", "threads")))


_VCPU: dict[str, Any] = {}


def vcpu_round_trip_ns() -> float | None:
    """A cache line's round trip between CPUs 0 and 1 now (``vcpu_probe.py``'s probe, 100,000
    trips, a few ms), or None where it cannot be measured (no C compiler, one CPU). Taken
    before each of ours' throughput runs: the threads mode's cost a query depends on it (a VM's
    host may place the two vCPUs on cores that share a cache or not, and move them; see
    docs/BENCHMARKS.md, "Why the threads ratio flips between runs")."""
    if "lib" not in _VCPU:
        _VCPU["lib"] = None
        cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set()
        if {0, 1} <= cpus:
            import atexit
            import tempfile

            import vcpu_probe

            tmp = Path(tempfile.mkdtemp(prefix="vcpu_probe-"))
            atexit.register(shutil.rmtree, tmp, True)
            with contextlib.suppress(SystemExit):  # no compiler: no samples
                _VCPU["lib"] = vcpu_probe.compile_probe(tmp)
    lib = _VCPU["lib"]
    if lib is None:
        return None
    ns = float(lib.round_trip_ns(0, 1, 100_000))
    return ns if ns > 0 else None


def measure_throughput(index: Path, extra: dict[str, Any], queries: list[str], duration: float,
                       repeats: int, threads: int) -> dict[str, dict[str, Any]]:
    """Every THROUGHPUT_KINDS run, ``repeats`` times with the modes alternating (interference
    hits each mode alike); the best run of each is kept, with all runs' q/s (and, for ours,
    the CPUs' cache-line round trip sampled before each run: ``vcpu_round_trip_ns``)."""
    shape = {"1": (1, 1), "2": (2, 1), "threads": (1, threads)}
    tp: dict[str, dict[str, Any]] = {}
    for kind, modes in THROUGHPUT_KINDS:
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        for _ in range(repeats):
            for m in modes:
                procs, t = shape[m]
                placement = vcpu_round_trip_ns() if kind == "ours" else None
                got = throughput(kind, index, extra, queries, procs, duration, t)
                if placement is not None:
                    got["vcpu_round_trip_ns"] = placement
                runs[m].append(got)
        tp[kind] = {m: {**max(rs, key=lambda x: x["qps"]), "all_qps": [x["qps"] for x in rs],
                        **({"all_vcpu_round_trip_ns": [x["vcpu_round_trip_ns"] for x in rs]}
                           if all("vcpu_round_trip_ns" in x for x in rs) else {})}
                    for m, rs in runs.items()}
    return tp


def placement_line(ours: dict[str, Any]) -> str | None:
    """The CPUs' cache-line round trip before each of ours' throughput runs, by mode (None
    without samples)."""
    cells = [f"{label.replace('T', str(ours[m].get('threads', 'T')))} "
             + " / ".join(f"{x:.0f}" for x in ours[m]["all_vcpu_round_trip_ns"])
             for m, label in _MODE_LABELS if "all_vcpu_round_trip_ns" in ours.get(m, {})]
    if not cells:
        return None
    return ("the two CPUs' cache-line round trip before each run, ns (benchmarks/vcpu_probe.py; "
            "~100 when they share a cache, several times that when the host places them apart): "
            + "; ".join(cells))


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------

def verdict(name: str, value: float) -> str:
    bound, sense = TARGETS[name]
    ok = {"<=": value <= bound, "<": value < bound, ">=": value >= bound}[sense]
    return "PASS" if ok else "FAIL"


# Targets set for DR-256's scale only (a 4x corpus takes about 4x the build time and file).
DR256_ONLY = frozenset({"build_seconds", "file_bytes"})


def scale_verdict(name: str, value: float, docs: int) -> str:
    """``verdict``, or an info note where the target is not for this corpus size."""
    if name in DR256_ONLY and docs != corpus_gen.DR256_DOCS:
        return f"(info: the target is for {corpus_gen.DR256_DOCS:,} docs)"
    return verdict(name, value)


def _fmt_bytes(n: float) -> str:
    return f"{n / GB:.2f} GB" if n >= GB else f"{n / MiB:.0f} MiB"


# The goals against PISA MaxScore (ours/PISA, "<="), per query class: (operation, percentile).
PISA_GOALS: dict[str, dict[tuple[str, str], float]] = {
    "normal": {("ranked_k10", "p50"): 1.0, ("ranked_k10", "p99"): 0.7, ("ranked_k100", "p50"): 0.8},
    "web": {("ranked_k10", "p50"): 1.0, ("ranked_k10", "p99"): 0.7, ("ranked_k100", "p50"): 0.8},
    "entity": {("ranked_k10", "p50"): 1.5, ("ranked_k10", "p99"): 1.5, ("ranked_k100", "p50"): 1.5},
    "rare": {("ranked_k10", "p50"): 1.5, ("ranked_k10", "p99"): 1.5, ("ranked_k100", "p50"): 1.5},
    "single": {}, "pair-rare": {},
}
# The per-query fixed cost's goals: ours/PISA-q8's engine-only call (pisa_q8_bare), ranked k=10.
BARE_GOALS: dict[str, dict[str, float]] = {"single": {"p50": 1.0, "p99": 1.0},
                                           "pair-rare": {"p50": 1.0, "p99": 1.0}}
CLASS_NOTES = {"normal": "agent-style, 3-20 words", "web": "2-8 words, 1-3 tail types",
               "entity": "1-2 rare names + 2 words", "rare": "one rare name",
               "single": "one word: frequent, mid, rare", "pair-rare": "a word + a rare name"}


def _in_class_order(d: dict[str, Any]) -> dict[str, Any]:
    """``d``'s query classes in QUERY_CLASSES order (a JSON round trip may sort them)."""
    return {c: d[c] for c in corpus_gen.QUERY_CLASSES if c in d}


def _fts5_need(n: int) -> int:
    """FTS5 agreement target: 299 of every 300 queries, rounded up."""
    return -(-n * 299 // 300)


def _corpus_line(r: dict[str, Any]) -> str:
    c = r["corpus"]
    line = (f"corpus: {c['documents']:,} docs, {r['builds']['ours']['chunks']:,} chunks,"
            f" {c['words']:,} words (seed {c['seed']}), vocabulary {c.get('vocabulary', 'normal')}")
    if c.get("vocabulary") == "large":
        line += (f" ({c['entity_tokens']:,} words replaced by {c['entity_types_present']:,} of "
                 f"{c['entity_types']:,} Zipf(s={c['zipf_s']:g}) names, rate {c['entity_rate']:g})")
    if c.get("vocabulary") == "web":
        line += (f" ({c['types']:,} types: {c['backbone_types']:,} of the sample and "
                 f"{c['tail_types']:,} tail types (model: {c['tail_types_expected']:,}) in "
                 f"{c['tail_tokens']:,} content words, rate {c['tail_rate']:g}; vocab_fit.json "
                 f"{c['fit_sha256_12']})")
    return line


def _peers(builds: dict[str, dict[str, Any] | None], key: str) -> str:
    """``   (tantivy 2 MiB; PISA 1 MiB)`` for the peers that were built ("" for none)."""
    parts = [f"{name} {_fmt_bytes(b[key])}" for name, b in builds.items() if b]
    return f"   ({'; '.join(parts)})" if parts else ""


def _rss_peers(builds: dict[str, Any]) -> str:
    """``   (bm25s 4.55 GB = ours x5.50; tantivy 392 MiB; PISA 3.43 GB)``: the build peak RSS
    of each peer that was built ("" for none)."""
    ours = builds["ours"]["peak_rss_bytes"]
    parts = [f"{label} {_fmt_bytes(builds[name]['peak_rss_bytes'])}"
             + (f" = ours x{builds[name]['peak_rss_bytes'] / ours:.2f}" if name == "bm25s" else "")
             for name, label in (("bm25s", "bm25s"), ("tantivy", "tantivy"), ("pisa", "PISA"))
             if builds.get(name)]
    return f"   ({'; '.join(parts)})" if parts else ""


def report(r: dict[str, Any]) -> str:
    """A plain-text table of one configuration's results with ratios and PASS/FAIL per target."""
    src = r["source"]
    classes = _in_class_order(r.get("classes", {"normal": r["queries"]}))
    lines = [f"drsearch speed benchmark  {r['date']}  {r['machine']}",
             f"drsearch code: {src['module']} (commit {src.get('commit', '?')[:10]}, "
             f"local edits: {src.get('local_edits', '?')})"
             + (f"; indexes built by commit {str(r['builds']['built_by'].get('commit', '?'))[:10]}"
                if r.get("builds", {}).get("built_by") else ""),
             _corpus_line(r),
             "queries: " + ", ".join(f"{n} {cls} ({CLASS_NOTES.get(cls, '')})"
                                     for cls, n in classes.items())
             + f"; tokenizer {r['tokenizer']}; "
             + ", ".join(f"{k} {v}" for k, v in r["versions"].items())]
    for name, why in sorted(r.get("skipped", {}).items()):
        lines.append(f"{name} skipped: {why}")
    lo = r.get("latency_order")
    if lo:
        lines.append(f"latency: engines interleaved, task order per query {lo['order']} "
                     f"(seed {lo['seed']}), median of {lo['rounds']} rounds per query"
                     + (f"; 1-min load average {lo['load_1min']['before']:.2f} before, "
                        f"{lo['load_1min']['after']:.2f} after" if "load_1min" in lo else ""))
    lines.append("")
    lat = r["latency_ms"]
    engines = [e for e in ("ours", "tantivy", "bm25s", *PISA_NAMES) if e in lat["ranked_k10"]]
    head = f"{'latency (ms), normal':<26}" + "".join(f"{e:>10}" for e in engines)
    lines += [head + f"{'ours/tantivy':>14}  target", "-" * (len(head) + 30)]
    for op in lat:
        for p in ("p50", "p99"):
            vals = lat[op]
            row = f"{op + ' ' + p:<26}" + "".join(
                f"{vals[e][p]:>10.2f}" if e in vals else f"{'':>10}" for e in engines)
            if "ours" in vals and "tantivy" in vals:
                ratio = vals["ours"][p] / vals["tantivy"][p]
                key = ("ranked" if op.startswith("ranked") else "complete") + f"_{p}_ratio"
                tgt = f"<= {TARGETS[key][0]}x {verdict(key, ratio)}" if key in TARGETS else "(info)"
                row += f"{ratio:>13.2f}x  {tgt}"
            elif op == "complete_k10_snippet":
                ratio = lat["complete_k10"]["ours"][p] / vals["tantivy"][p]
                row += f"{ratio:>13.2f}x  (info: tantivy + its SnippetGenerator)"
            lines.append(row)
    by_class = _in_class_order(r.get("latency_ms_by_class", {"normal": lat}))
    if "pisa" in lat["ranked_k10"]:
        for cls, cl in by_class.items():
            lines.append("")
            goals = PISA_GOALS[cls]
            for op, p in (("ranked_k10", "p50"), ("ranked_k10", "p99"), ("ranked_k100", "p50"),
                          ("ranked_k100", "p99")):
                vals = cl[op]
                ratio = vals["ours"][p] / vals["pisa"][p]
                bmw = vals["ours"][p] / vals["pisa_bmw"][p]
                goal = goals.get((op, p))
                lines.append(f"{cls}: ours/PISA MaxScore {op} {p}: {ratio:.2f}x "
                             f"({vals['ours'][p]:.3f} vs {vals['pisa'][p]:.3f} ms)"
                             + (f"  goal <= {goal}x {'met' if ratio <= goal else 'not met'}"
                                if goal else "  (info)")
                             + f"   (ours/PISA block-max WAND {bmw:.2f}x)")
                if "pisa_q8" in vals:
                    bare = vals['ours'][p] / vals['pisa_q8_bare'][p]
                    bare_goal = BARE_GOALS.get(cls, {}).get(p) if op == "ranked_k10" else None
                    lines.append(f"{cls}: ours/PISA-q8 MaxScore {op} {p}: "
                                 f"{vals['ours'][p] / vals['pisa_q8'][p]:.2f}x ({vals['pisa_q8'][p]:.3f}"
                                 f" ms); ours/PISA-q8 engine-only call: {bare:.2f}x "
                                 f"({vals['pisa_q8_bare'][p]:.3f} ms)"
                                 + (f"  goal <= {bare_goal}x {'met' if bare <= bare_goal else 'not met'}"
                                    if bare_goal else ""))
            pa = (r.get("pisa_agreement_by_class") or {}).get(cls) or (
                r.get("pisa_agreement") if cls == "normal" else None)
            if pa:
                lines.append(pisa_agreement_line(cls, pa))
    else:
        for cls, cl in by_class.items():
            if cls != "normal":
                lines.append(f"{cls}: ranked k=10 p50 ours {cl['ranked_k10']['ours']['p50']:.3f} "
                             f"ms, tantivy {cl['ranked_k10']['tantivy']['p50']:.3f} ms (no PISA)")
    tp = r["throughput"]
    t1, t2 = tp["ours"]["1"], tp["ours"]["2"]
    scale = t2["qps"] / t1["qps"]
    cpu_norm = t2["cpu_qps"] / t1["cpu_qps"]
    tv_scale = tp["tantivy"]["2"]["qps"] / tp["tantivy"]["1"]["qps"]
    cpu_scale = tp["burn"]["2"]["qps"] / tp["burn"]["1"]["qps"]
    b, bt, bb = r["builds"]["ours"], r["builds"].get("tantivy"), r["builds"].get("bm25s")
    fq, fqw = r["first_query"]["cold"], r["first_query"]["warm"]
    # The target is on the memory the process alone holds (anonymous pages). The file's
    # clean pages that only one process happens to have mapped also count as "private" in
    # smaps; they are page cache (shared, dropped under pressure) and vary run to run on
    # the same state (benchmarks/memory_probe.py), so they are printed, not judged.
    priv = max(t2["anonymous_bytes"])
    lines += [
        "",
        f"throughput (complete k=10): 1 proc {t1['qps']:.0f} q/s, 2 procs {t2['qps']:.0f} q/s"
        f" = {scale:.2f}x   target >= {TARGETS['throughput_2p_over_1p'][0]}x  "
        f"{verdict('throughput_2p_over_1p', scale)}"
        f"   (per CPU-second {cpu_norm:.2f}x; tantivy {tv_scale:.2f}x, pure-Python CPU loop"
        f" {cpu_scale:.2f}x on this machine in the same run)",
    ]
    if "threads" in tp["ours"]:
        tt = tp["ours"]["threads"]
        ts = tt["qps"] / t1["qps"]
        ctl = tp["burn_nogil"]["threads"]["qps"] / tp["burn_nogil"]["1"]["qps"]
        n = tt["threads"]
        tgt = (f"target >= {TARGETS['throughput_threads_over_1'][0]}x  "
               f"{verdict('throughput_threads_over_1', ts)}" if n == 2 else "(info: target is for 2)")
        label = {"1": "1 thread", "threads": f"{n} threads", "2": "2 procs"}
        busy = ", ".join(f"{label[m]} {tp['ours'][m]['cores_busy']:.2f}" for m in label
                         if "cores_busy" in tp["ours"][m])
        lines.append(f"throughput, 1 proc x {n} threads: {tt['qps']:.0f} q/s = {ts:.2f}x one thread"
                     f"   {tgt}   (GIL-free CPU loop {ctl:.2f}x on this machine in the same run;"
                     f" cores busy: {busy or '?'})")
        lines.append(f"q/s per core: 1 thread {t1['qps']:.0f}, {n} threads "
                     f"{tt['qps'] / n:.0f}, 2 procs {t2['qps'] / 2:.0f}")
    costs = cost_line(tp["ours"])
    if costs:
        lines.append(costs)
    placement = placement_line(tp["ours"])
    if placement:
        lines.append(placement)
    for cls, agree in _in_class_order(r.get("fts5_by_class", {"normal": r["fts5"]})).items():
        need = _fts5_need(agree["queries"])
        lines.append(
            f"FTS5 bm25() ordered top-10 docs identical ({cls}): {agree['same_docs']}/"
            f"{agree['queries']}   target >= {need}  {'PASS' if agree['same_docs'] >= need else 'FAIL'}"
            f"   (same chunks {agree['same_chunks']}, bitwise-equal scores "
            f"{agree['same_scores_bitwise']}; FTS5 {agree['fts5_mean_s'] * 1e3:.0f} ms/query)")
    lines += [
        f"build: {b['seconds']:.1f} s  target <= 300 s  "
        f"{scale_verdict('build_seconds', b['seconds'], r['corpus']['documents'])}"
        + (f"   (tantivy {bt['seconds']:.1f} s with {bt['threads']} threads;" if bt else "")
        + (f" bm25s {bb['seconds']:.1f} s" if bb else "")
        + (f"{';' if bb else ''} PISA {r['builds']['pisa']['seconds']:.1f} s"
           if "pisa" in r["builds"] else "")
        + (")" if bt else ""),
        f"build peak RSS: {_fmt_bytes(b['peak_rss_bytes'])}  target <= 2 GB  "
        f"{verdict('build_peak_rss_bytes', b['peak_rss_bytes'])}" + _rss_peers(r["builds"]),
        f"index file: {_fmt_bytes(b['bytes'])}  target <= 3.5 GB  "
        f"{scale_verdict('file_bytes', b['bytes'], r['corpus']['documents'])}"
        + _peers({"tantivy": bt, "bm25s": bb, "PISA": r["builds"].get("pisa")}, "bytes"),
        f"fresh process open + first query, page cache cold: {fq['wall_s'] * 1e3:.0f} ms wall"
        f" (median of {fq['runs']}; import {fq['import_s'] * 1e3:.0f}, open "
        f"{fq['open_s'] * 1e3:.0f}, query {fq['query_s'] * 1e3:.0f} ms)  target < 1 s  "
        f"{verdict('first_query_seconds', fq['wall_s'])}   (warm cache: "
        f"{fqw['wall_s'] * 1e3:.0f} ms)",
        f"private memory per serving process after {sum(classes.values())} queries (2 procs): "
        f"{_fmt_bytes(priv)} anonymous  target < 100 MiB  {verdict('private_bytes_per_process', priv)}"
        f"   (private with the file's clean pages mapped by it alone "
        f"{_fmt_bytes(max(t2['private_bytes']))}; RSS "
        f"{_fmt_bytes(max(t2['rss_bytes']))}, mostly the shared mmap of the file)",
    ]
    return "\n".join(lines)


_MODE_LABELS = (("1", "1 thread"), ("threads", "T threads"), ("2", "2 procs"))


def _cost(mode: dict[str, Any], one: dict[str, Any]) -> str | None:
    """A mode's CPU µs per query (and its change from one thread's) and voluntary context
    switches per query; None for a run recorded before they were (no rusage)."""
    if "cpu_us_per_query" not in mode or "cpu_us_per_query" not in one:
        return None
    cpu = mode["cpu_us_per_query"]
    delta = "" if mode is one else f" ({cpu / one['cpu_us_per_query'] - 1:+.0%})"
    return f"{cpu:.0f}{delta} / {mode['waits_per_query']:.2f}"


def cost_line(ours: dict[str, Any]) -> str | None:
    """The report's line of per-query costs by mode (``per_query_costs``), or None."""
    def cells(cell: Callable[[dict[str, Any]], str | None]) -> list[str]:
        return [f"{label.replace('T', str(ours[m].get('threads', 'T')))} {got}"
                for m, label in _MODE_LABELS if m in ours and (got := cell(ours[m])) is not None]

    costs = cells(lambda mode: _cost(mode, ours["1"]))
    if not costs:
        return None
    line = ("CPU µs per query (user + system, change from one thread) / voluntary context switches "
            "per query (threads: mostly waits for the GIL): " + ", ".join(costs))
    gil = cells(_gil_cell)
    if gil:
        line += ("\nthe kernel's GIL account, µs per query: held (share of a thread's time) / "
                 "without it in the kernel / waiting to take it back: " + ", ".join(gil))
    return line


def _gil_cell(mode: dict[str, Any]) -> str | None:
    if "gil_held_us_per_query" not in mode:
        return None
    return (f"{mode['gil_held_us_per_query']:.0f} ({mode['gil_held_share']:.0%}) / "
            f"{mode['nogil_us_per_query']:.0f} / {mode['gil_wait_us_per_query']:.1f}")


def cost_table(runs: Sequence[dict[str, Any]]) -> str:
    """Per configuration, each throughput mode's CPU µs per query (user + system, its change
    from one thread's) / voluntary context switches per query: where a mode's q/s falls short
    of one thread's times its cores, whether it spent more CPU a query or waited. Runs
    recorded before these were measured show '-'."""
    def block(title: str, w: int, cell: Callable[[dict[str, Any], dict[str, Any]], str | None]) -> list[str]:
        lines = [title, f"{'docs':>8} {'vocab':<13}" + "".join(f"{label:>{w}}" for _, label in _MODE_LABELS)]
        for r in runs:
            ours = r["throughput"]["ours"]
            cells = [(cell(ours[m], ours["1"]) if m in ours else None) or "-" for m, _ in _MODE_LABELS]
            lines.append(f"{r['corpus']['documents']:>8,} {r.get('vocabulary', 'normal'):<13}"
                         + "".join(f"{c:>{w}}" for c in cells))
        return lines

    return "\n".join([
        *block("CPU µs per query (change from 1 thread) / voluntary context switches per query "
               "(threads: mostly waits for the GIL)", 22, _cost),
        "",
        *block("the kernel's GIL account, µs per query: held (share of a thread's time: the serial "
               "part) / without the GIL in the kernel / waiting to take it back", 26,
               lambda mode, _one: _gil_cell(mode))])


def _cell(x: float | None, width: int, fmt: str = ".2f") -> str:
    return f"{x:>{width}{fmt}}" if x is not None else f"{'-':>{width}}"


def _goal_cell(ratio: float | None, goal: float | None, width: int) -> str:
    """``0.85 ok`` / ``1.20 NO`` against a "<=" goal; ``-`` without a value."""
    if ratio is None:
        return f"{'-':>{width}}"
    mark = "" if goal is None else (" ok" if ratio <= goal else " NO")
    return f"{f'{ratio:.2f}{mark}':>{width}}"


def _lat(cl: dict[str, Any], op: str, engine: str, p: str) -> float | None:
    v = cl.get(op, {}).get(engine)
    return None if v is None else float(v[p])


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def scale_table(runs: Sequence[dict[str, Any]]) -> str:
    """One table over every configuration of a run: rows = scale x vocabulary x query class;
    latencies (ms) of ours, tantivy and PISA, the ours/PISA MaxScore ratios against their
    goals (PISA_GOALS), FTS5 agreement; then throughput per configuration (threads and
    processes against one thread, q/s per core)."""
    w = 9
    groups = [("ours k10", "p50"), ("ours k10", "p99"), ("tantivy k10", "p50"),
              ("PISA-MS k10", "p50"), ("PISA-MS k10", "p99"), ("PISA-BMW k10", "p50"),
              ("ours k100", "p50"), ("PISA-MS k100", "p50"),
              ("ours/MS k10", "p50"), ("ours/MS k10", "p99"), ("ours/MS k100", "p50"),
              ("FTS5", "agree")]
    lead = f"{'docs':>8} {'chunks':>9} {'vocab':<13}{'class':<10}{'n':>5}"
    head1 = " " * len(lead) + "".join(f"{g:>{w + 4}}" for g, _ in groups)
    head2 = lead + "".join(f"{p:>{w + 4}}" for _, p in groups)
    lines = ["all configurations: ranked latency in ms (PISA-MS: PISA MaxScore, PISA-BMW: PISA "
             "block-max WAND), ours/PISA MaxScore against its goals (ok: met, NO: not met; "
             "normal <= 1.0 / 0.7 / 0.8, entity and rare <= 1.5), FTS5 agreement (ordered "
             "top-10 docs, target 299/300)",
             head1, head2, "-" * len(head2)]
    for r in runs:
        by_class = _in_class_order(r.get("latency_ms_by_class", {"normal": r["latency_ms"]}))
        fts = r.get("fts5_by_class", {"normal": r["fts5"]})
        for cls, cl in by_class.items():
            vals = [_lat(cl, "ranked_k10", "ours", "p50"), _lat(cl, "ranked_k10", "ours", "p99"),
                    _lat(cl, "ranked_k10", "tantivy", "p50"), _lat(cl, "ranked_k10", "pisa", "p50"),
                    _lat(cl, "ranked_k10", "pisa", "p99"), _lat(cl, "ranked_k10", "pisa_bmw", "p50"),
                    _lat(cl, "ranked_k100", "ours", "p50"), _lat(cl, "ranked_k100", "pisa", "p50")]
            goals = PISA_GOALS[cls]
            ag = fts[cls]
            agree = (f"{ag['same_docs']}/{ag['queries']} "
                     + ("ok" if ag["same_docs"] >= _fts5_need(ag["queries"]) else "NO"))
            lines.append(
                f"{r['corpus']['documents']:>8,} {r['builds']['ours']['chunks']:>9,} "
                f"{r.get('vocabulary', 'normal'):<13}{cls:<10}{ag['queries']:>5}"
                + "".join(_cell(v, w + 4, ".3f") for v in vals)
                + _goal_cell(_ratio(vals[0], vals[3]), goals.get(("ranked_k10", "p50")), w + 4)
                + _goal_cell(_ratio(vals[1], vals[4]), goals.get(("ranked_k10", "p99")), w + 4)
                + _goal_cell(_ratio(vals[6], vals[7]), goals.get(("ranked_k100", "p50")), w + 4)
                + f"{agree:>{w + 4}}")
    if not any("pisa" in r["latency_ms"]["ranked_k10"] for r in runs):
        lines.append("(no PISA in this run: its columns and the ratios are '-')")
    lines += ["", "throughput (complete k=10, q/s): one process with 1 thread, T threads, 2 "
              "processes; ratios to one thread (targets >= 1.9x at T = 2; 'ctl': the machine's own "
              "ceiling, CPU loops run the same way); q/s per core",
              f"{'docs':>8} {'vocab':<13}{'1 thread':>10}{'T':>3}{'T threads':>11}{'ratio':>11}"
              f"{'ctl':>6}{'2 procs':>10}{'ratio':>11}{'ctl':>6}{'per core: 1t / Tt / 2p':>27}"]
    for r in runs:
        tp = r["throughput"]["ours"]
        one, two = tp["1"]["qps"], tp["2"]["qps"]
        ctl2 = r["throughput"]["burn"]["2"]["qps"] / r["throughput"]["burn"]["1"]["qps"]
        r2 = two / one
        t2 = f"{r2:.2f} {'ok' if r2 >= TARGETS['throughput_2p_over_1p'][0] else 'NO'}"
        if "threads" in tp:
            th, n = tp["threads"]["qps"], tp["threads"]["threads"]
            nogil = r["throughput"]["burn_nogil"]
            ctlt = f"{nogil['threads']['qps'] / nogil['1']['qps']:.2f}"
            rt = th / one
            mark = ("ok" if rt >= TARGETS["throughput_threads_over_1"][0] else "NO") if n == 2 else ""
            tcol = f"{th:>11.0f}{f'{rt:.2f} {mark}':>11}{ctlt:>6}"
            per = f"{one:.0f} / {th / n:.0f} / {two / 2:.0f}"
        else:
            n, tcol, per = 0, f"{'-':>11}{'-':>11}{'-':>6}", f"{one:.0f} / - / {two / 2:.0f}"
        lines.append(f"{r['corpus']['documents']:>8,} {r.get('vocabulary', 'normal'):<13}"
                     f"{one:>10.0f}{n:>3}{tcol}{two:>10.0f}{t2:>11}{ctl2:>6.2f}{per:>27}")
    return "\n".join(lines)


BM25S_MAX_CHUNKS = 300_000  # bm25s's build peaked at 4.55 GB at 243,615 chunks: ~18 GB at 4x


def _docs_list(ap: argparse.ArgumentParser, args: argparse.Namespace) -> list[int]:
    """--docs N[,N...] or --scales F[,F...] (multiples of DR-256's 30,318 documents)."""
    try:
        if args.scales is not None:
            docs = [round(float(f) * corpus_gen.DR256_DOCS) for f in args.scales.split(",")]
        else:
            docs = [int(d) for d in args.docs.split(",")]
    except ValueError:
        ap.error("--docs takes integers and --scales numbers, comma-separated")
    if not docs or min(docs) < 1:
        ap.error("--docs / --scales: every scale must be at least one document")
    if len(set(docs)) != len(docs):
        ap.error("--docs / --scales: a scale is given twice")
    return docs


def run_config(args: argparse.Namespace, docs: int, vocab: corpus_gen.Vocabulary,
               engines_wanted: set[str], source: dict[str, str], skipped_engines: dict[str, str],
               log: Callable[[str], None]) -> dict[str, Any]:
    """One configuration (scale x vocabulary): corpus, builds, every measurement; its result.
    ``skipped_engines``: engines left out for the whole run, and why (reported)."""
    engines = set(engines_wanted)
    skipped = dict(skipped_engines)
    duration = args.duration or (8.0 if docs >= 10_000 else 2.0)
    corpus, cmeta = corpus_gen.ensure_corpus(docs, args.seed, vocab=vocab)
    if "bm25s" in engines and int(cmeta["chunks"]) > BM25S_MAX_CHUNKS:
        skipped["bm25s"] = (f"{int(cmeta['chunks']):,} chunks > {BM25S_MAX_CHUNKS:,}: its build "
                            "would need ~4.5 GB per 243,615 chunks")
        log(f"bm25s skipped: {skipped['bm25s']}")
        engines.discard("bm25s")
    _, normal_queries = corpus_gen.ensure_queries(args.queries, args.seed)
    classes: dict[str, list[str]] = {"normal": normal_queries}
    if vocab.name == "large":
        _, extra_q = corpus_gen.ensure_entity_queries(corpus, cmeta, args.entity_queries, args.seed)
        classes.update(extra_q)
    elif vocab.name == "web":
        _, extra_q = corpus_gen.ensure_web_queries(corpus, cmeta, args.entity_queries, args.seed)
        classes.update(extra_q)
    if vocab.name in ("large", "web"):  # one-term and two-word queries: the fixed cost
        _, extra_q = corpus_gen.ensure_short_queries(corpus, cmeta, args.entity_queries, args.seed)
        classes.update(extra_q)
    queries = [q for qs in classes.values() for q in qs]
    # The throughput runs keep the mix they had before the short classes came (comparable).
    mix = [q for cls, qs in classes.items() if cls not in corpus_gen.SHORT_CLASSES for q in qs]
    spans, at = {}, 0
    for cls, qs in classes.items():
        spans[cls] = (at, at + len(qs))
        at += len(qs)
    work = corpus_gen.bench_dir_for(docs, args.seed, args.tokenizer, vocab)
    work.mkdir(parents=True, exist_ok=True)
    ours_path, tv_path, bm_path = work / "ours.sqlite3", work / "tantivy", work / "bm25s"
    pisa_path = work / "pisa"
    builds_file = work / "builds.json"
    builds = reused_builds(builds_file, source, pisa_path, log, other_code=args.reuse_other_code) \
        if args.reuse else {}
    builds["source"] = source
    common = {"corpus": str(corpus), "tokenizer": args.tokenizer}
    if "ours" not in builds:
        log(f"building drsearch index ({cmeta['chunks']:,} chunks)")
        builds["ours"] = run_child("build-ours", {**common, "out": str(ours_path)})
    if "tantivy" not in builds:
        log("building tantivy index")
        builds["tantivy"] = run_child("build-tantivy", {
            **common, "dir": str(tv_path), "threads": args.tantivy_threads,
            "heap_bytes": 256 * MiB * args.tantivy_threads})
    if "bm25s" in engines and "bm25s" not in builds:
        log("building bm25s index")
        builds["bm25s"] = run_child("build-bm25s", {**common, "dir": str(bm_path)})
    if "pisa" in engines and "pisa" not in builds:
        log("building PISA index")
        builds["pisa"] = run_child("build-pisa", {**common, "dir": str(pisa_path),
                                                  "index": str(ours_path),
                                                  "threads": args.tantivy_threads})
    builds_file.write_text(json.dumps(builds, indent=2))
    for name in ("tantivy", "bm25s", "pisa"):
        if name in builds and builds[name]["chunks"] != builds["ours"]["chunks"]:
            raise SystemExit(f"{name} indexed {builds[name]['chunks']} chunks, "
                             f"drsearch {builds['ours']['chunks']}")

    log("fresh-process open + first query (page cache cold, then warm)")
    fq: dict[str, Any] = {}
    for mode in ("cold", "warm"):
        fq_runs = [first_query(ours_path, normal_queries[i % len(normal_queries)],
                               cold=mode == "cold") for i in range(3)]
        fq[mode] = {key: float(np.median([x[key] for x in fq_runs])) for key in fq_runs[0]}
        fq[mode]["runs"] = len(fq_runs)
        if mode == "cold":
            read_through(ours_path)

    log(f"interleaved latency ({', '.join(f'{len(v)} {k}' for k, v in classes.items())} queries)")
    meta = Meta(ours_path)
    eng: list[Any] = [Ours(ours_path), Tantivy(tv_path, args.tokenizer, meta)]
    if "bm25s" in engines:
        eng.append(Bm25s(bm_path, meta))
    if "pisa" in engines:
        codes = pisa_term_codes(pisa_path)
        eng += [Pisa(pisa_path, ours_path, meta, alg, codes)
                for alg in ("maxscore", "block_max_wand")]
        q8 = Pisa(pisa_path, ours_path, meta, "maxscore", codes, quantized=True)
        eng += [q8, PisaBare(q8, queries)]
    load = {"before": os.getloadavg()[0]}
    lat = interleaved(eng, queries, args.warmup, args.rounds, snippet_peer=True, order=args.order)
    load["after"] = os.getloadavg()[0]
    lat_ms = {cls: {op: {e: _latency_summary(Timings(t.per_query[a:b])) for e, t in per.items()}
                    for op, per in lat.items()} for cls, (a, b) in spans.items()}
    pisa_agree = None
    if "pisa" in engines:
        log("PISA MaxScore against ours: documents and scores at every rank")
        by_name = {e.name: e for e in eng}
        pisa_agree = {cls: pisa_agreement(by_name["ours"], by_name["pisa"], qs)
                      for cls, qs in classes.items()}
    del eng

    log("FTS5 agreement (slow oracle)")
    agree = {cls: fts5_agreement(ours_path, qs) for cls, qs in classes.items()}

    log(f"throughput: 1 process, 1 process x {args.threads} threads, 2 processes "
        f"({duration:.0f} s per run, best of {args.repeats})")
    tp = measure_throughput(ours_path, {"dir": str(tv_path), "tokenizer": args.tokenizer},
                            mix, duration, args.repeats, args.threads)
    if args.drop_indexes:
        log(f"--drop-indexes: removing {work}")
        shutil.rmtree(work, ignore_errors=True)
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}",
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "tokenizer": args.tokenizer, "queries": len(normal_queries), "corpus": cmeta,
        "vocabulary": vocab.name, "classes": {cls: len(qs) for cls, qs in classes.items()},
        "latency_order": {"order": args.order, "seed": ORDER_SEED, "rounds": args.rounds,
                          "load_1min": load},
        "builds": builds, "first_query": fq, "throughput": tp, "threads": args.threads,
        "fts5": agree["normal"], "fts5_by_class": agree,
        "pisa_agreement": pisa_agree["normal"] if pisa_agree else None,
        "pisa_agreement_by_class": pisa_agree,
        "latency_ms": lat_ms["normal"], "latency_ms_by_class": lat_ms,
        "skipped": skipped,
        "versions": _versions(),
        "source": source,
    }


def reused_builds(builds_file: Path, source: dict[str, str], pisa_path: Path, log: Callable[[str], None],
                  *, other_code: bool = False) -> dict[str, Any]:
    """The build records ``--reuse`` keeps: those of an earlier run of the same drsearch code;
    with ``other_code`` also those of other code, whose source is kept as ``built_by`` (and
    printed), for runs where only the query side changed (the index's bytes did not: the file
    still has to open, and its schema version is checked then). A PISA index of the old
    plain-text feed (no term-code file) is never reused: it indexed other tokens."""
    if not builds_file.is_file():
        return {}
    builds: dict[str, Any] = json.loads(builds_file.read_text())
    if builds.get("source") != source:
        if not other_code:
            log("--reuse: the indexes were built by other drsearch code; rebuilding "
                "(--reuse-other-code keeps them)")
            return {}
        built_by = builds.get("built_by") or builds.get("source") or {}
        log(f"--reuse-other-code: indexes built by commit {str(built_by.get('commit', '?'))[:10]}")
        builds["built_by"] = built_by
    if "pisa" in builds and not (pisa_path / PISA_TERMS_FILE).is_file():
        log(f"--reuse: the PISA index has no {PISA_TERMS_FILE} (the old plain-text feed); rebuilding it")
        del builds["pisa"]
    return builds


def _latency_summary(t: Timings) -> dict[str, float]:
    return {"p50": t.pct(50) * 1e3, "p99": t.pct(99) * 1e3,
            "mean": float(np.mean(t.typical())) * 1e3}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the whole benchmark over every configuration (scale x vocabulary); print each
    one's table, then the table of all of them (and write --json)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--docs", default=str(corpus_gen.DR256_DOCS),
                    help="documents, or a comma list of scales (default: DR-256's 30318)")
    ap.add_argument("--scales", default=None,
                    help="scales as multiples of DR-256's documents, e.g. 1,4 (= --docs "
                         "30318,121272)")
    ap.add_argument("--vocabulary", default="web",
                    help="comma list of corpus variants: web (default: the sample's text with a "
                         "fitted tail of rare types, vocab_fit.py; adds the web, entity and rare "
                         "query classes), synthetic15k (the sample's ~15K terms; 'normal' still "
                         "names it), large (synthetic15k + entity names; entity and rare classes)")
    ap.add_argument("--queries", type=int, default=corpus_gen.DEFAULT_QUERIES)
    ap.add_argument("--seed", type=int, default=corpus_gen.DEFAULT_SEED)
    ap.add_argument("--tokenizer", choices=("porter", "unicode61"), default="porter")
    corpus_gen.add_entity_args(ap)
    ap.add_argument("--json", type=Path, help="also write all results here")
    ap.add_argument("--engines", default="ours,tantivy,bm25s,pisa",
                    help="comma list; ours and tantivy are required; pisa (MaxScore and "
                         "block-max WAND) is skipped with a note when pyterrier-pisa is absent")
    ap.add_argument("--duration", type=float, default=None,
                    help="seconds per throughput run (default 8 at >= 10,000 docs, else 2)")
    ap.add_argument("--repeats", type=int, default=3,
                    help="throughput runs per mode (the best is kept; 3 since 2026-12-06: one 8 s run "
                         "of a mode spreads by ~5%% on a shared VM)")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads of the one-process threads throughput mode (default 2)")
    ap.add_argument("--warmup", type=int, default=20, help="untimed queries per engine first")
    ap.add_argument("--rounds", type=int, default=3,
                    help="timed passes over the queries; each query's median is kept")
    ap.add_argument("--order", choices=("shuffle", "rotate"), default="shuffle",
                    help="task order per query in the latency runs (see interleaved())")
    ap.add_argument("--tantivy-threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--reuse", action="store_true",
                    help="reuse the indexes and build numbers of an earlier run (debugging)")
    ap.add_argument("--reuse-other-code", action="store_true",
                    help="with --reuse, also keep indexes built by other drsearch code (the report "
                         "names that code); only when the index's bytes are the same")
    ap.add_argument("--drop-indexes", action="store_true",
                    help="delete each configuration's indexes once it is measured (disk)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(CHILDREN[args.child[0]](json.loads(args.child[1]))))
        return 0
    docs_list = _docs_list(ap, args)
    vocabs = [corpus_gen.VOCABULARY_ALIASES.get(v, v) for v in args.vocabulary.split(",")]
    if not vocabs or not set(vocabs) <= set(corpus_gen.VOCABULARIES) or len(set(vocabs)) != len(vocabs):
        ap.error(f"--vocabulary: a comma list of {', '.join(corpus_gen.VOCABULARIES)}")
    corpus_gen.check_entity_args(ap, args)
    for name in ("queries", "repeats", "threads", "rounds"):
        if getattr(args, name) < 1:
            ap.error(f"--{name} must be positive")
    engines = set(args.engines.split(","))
    if not {"ours", "tantivy"} <= engines or not engines <= {"ours", "tantivy", "bm25s", "pisa"}:
        ap.error("--engines: ours and tantivy are required; bm25s and pisa optional")
    source = _source_state()

    def log(msg: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)

    skipped: dict[str, str] = {}
    if "pisa" in engines:
        pisa_missing = load_pisathon()[1]
        if pisa_missing:
            log(f"pisa skipped: {pisa_missing}")
            engines.discard("pisa")
            skipped["pisa"] = pisa_missing
    runs: list[dict[str, Any]] = []
    planned = len(docs_list) * len(vocabs)
    for docs in docs_list:
        for name in vocabs:
            vocab = corpus_gen.Vocabulary(name, args.entity_types, args.entity_rate)
            log(f"configuration {docs:,} docs, vocabulary {name}")
            runs.append(run_config(args, docs, vocab, engines, source, skipped, log))
            print(report(runs[-1]) + "\n", flush=True)
            if args.json:  # after every configuration: a run cut short keeps what it measured
                write_results(args.json, runs, planned)
    print(scale_table(runs))
    print("\n" + cost_table(runs))
    return 0


def write_results(path: Path, runs: Sequence[dict[str, Any]], planned: int) -> None:
    """``{"runs": [...], "configurations": planned}``, replaced whole (a reader never sees
    half a file): written after each configuration, so that a run stopped part way (the
    machine taken back, a 2-hour run cut off) keeps the configurations it finished, and says
    how many of the planned ones those are."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"runs": list(runs), "configurations": planned}, indent=2,
                              sort_keys=True) + "\n")
    os.replace(tmp, path)


def _source_state() -> dict[str, str]:
    """Which drsearch code ran: its directory, git commit and whether it had local edits."""
    import drsearch

    src = Path(drsearch.__file__).resolve().parent
    out = {"module": str(src)}
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        git = ["git", "-C", str(src)]
        out["commit"] = subprocess.run([*git, "rev-parse", "HEAD"], check=True,
                                       capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "--", "."], check=True,
                               capture_output=True, text=True).stdout.strip()
        out["local_edits"] = "yes" if dirty else "no"
    return out


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("drsearch", "apsw", "numpy", "tantivy", "bm25s"):
        with contextlib.suppress(PackageNotFoundError):
            out[pkg] = version(pkg)
    return out


if __name__ == "__main__":
    sys.exit(main())
