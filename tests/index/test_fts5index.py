"""The build's postings come out of FTS5's own index: the leaf decoder (C and Python) against
an oracle that counts FTS5's tokenizer's terms itself, on awkward texts, tiny pages and every
window size; damaged pages give both decoders the same error, never a wrong count."""

from __future__ import annotations

import importlib
import random
from collections import Counter
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest

from drsearch.contract import BuildError
from drsearch.index import BuildSettings, Engine, SourceChunk, build, chunktext, read_jsonl
from drsearch.index.fts5index import (
    STRUCTURE_ROWID,
    chunk_lengths,
    decode_pages,
    segment_rowid,
    segments,
    windows,
)
from drsearch.index.fts5spec import sql_string
from drsearch.index.native import NATIVE_AVAILABLE, native_kernels
from drsearch.index.schema import FTS_DDL
from drsearch.index.text import MAX_TOKEN_BYTES, Tokenizer, indexed_term

fts5index = importlib.import_module("drsearch.index.fts5index")
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample" / "docs.jsonl"
TOKENIZE = "porter unicode61"
DECODERS = ["python", *(["c"] if NATIVE_AVAILABLE else [])]
needs_c = pytest.mark.skipif(not NATIVE_AVAILABLE, reason="the C kernel is not built")

AWKWARD = [
    "wing flutter at transonic speed " * 3,
    "",  # a chunk without a token: a document size of 0, no postings
    "flutter " * 2500,  # one position list of 5,000 bytes: it runs over many pages
    "x" * 5000 + " short words after a long token",
    "y" * 40000 + " a token cut by FTS5 at 32,768 bytes",
    "字" * 11000 + " cut inside a character",  # 33,000 bytes of one token: its cut falls mid-character
    "naïve café über straße Ελληνικά русский 日本語",
    " ".join(f"w{i}" for i in range(3000)),  # many terms: many pages start a term
    "flutter wing",
]


def fts5_file(path: Path, texts: list[str], pgsz: int | None = None, optimize: bool = True) -> apsw.Connection:
    """An FTS5 table as the build makes it (rowids 1..n), with FTS5 pages of ``pgsz`` bytes."""
    conn = apsw.Connection(str(path))
    conn.execute("BEGIN")
    conn.execute(FTS_DDL.format(tokenize=sql_string(TOKENIZE)))
    if pgsz is not None:
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('pgsz', ?)", (pgsz,))
    for rowid, text in enumerate(texts, 1):
        conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES(?,?)", (rowid, text))
    if optimize:
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
    conn.execute("COMMIT")
    return conn


def oracle(texts: list[str]) -> list[tuple[str, list[tuple[int, int]]]]:
    """Every term's (rowid, tf) list in FTS5's key order, counted from the tokenizer's terms."""
    tok = Tokenizer(apsw.Connection(":memory:"), TOKENIZE)
    by_key: dict[bytes, list[tuple[int, int]]] = {}
    for rowid, text in enumerate(texts, 1):
        counts = Counter(t.encode("utf-8")[:MAX_TOKEN_BYTES] for t in tok.terms(text))
        for key, tf in counts.items():
            by_key.setdefault(key, []).append((rowid, tf))
    return [(key.decode("utf-8", "replace"), by_key[key]) for key in sorted(by_key)]


def decoded(conn: apsw.Connection, n_rows: int, decoder: str, window_bytes: int
            ) -> tuple[list[tuple[str, list[tuple[int, int]]]], list[int], int]:
    """What ``windows`` reads: every term's (rowid, tf) list, the positions per rowid, windows."""
    positions = np.zeros(n_rows + 1, dtype=np.int64)
    out: list[tuple[str, list[tuple[int, int]]]] = []
    n_windows = 0
    for w in windows(conn, "chunks_fts", positions, window_bytes,
                     decoder == "c"):
        n_windows += 1
        at = 0
        for term, df in zip(w.terms, w.dfs.tolist(), strict=True):
            out.append((term, list(zip(w.chunks[at:at + df].tolist(), w.tfs[at:at + df].tolist(), strict=True))))
            at += df
        assert at == len(w.chunks) == len(w.tfs)
    return out, positions.tolist(), n_windows


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("window_bytes", [1, 700, 8 << 20])
@pytest.mark.parametrize("pgsz", [64, None])
def test_every_doclist_is_what_the_tokenizer_counts(tmp_path: Path, decoder: str, window_bytes: int,
                                                     pgsz: int | None) -> None:
    conn = fts5_file(tmp_path / "f.sqlite3", AWKWARD, pgsz)
    got, positions, n_windows = decoded(conn, len(AWKWARD), decoder, window_bytes)
    expected = oracle(AWKWARD)
    assert got == expected
    lengths = chunk_lengths(conn, "chunks_fts", len(AWKWARD))
    assert positions == lengths.tolist()  # the positions decoded are FTS5's document sizes
    assert lengths[2] == 0 and lengths.tolist() == [0, *(sum(tf for _, p in expected for r, tf in p if r == i)
                                                         for i in range(1, len(AWKWARD) + 1))]
    if window_bytes == 1:  # a window per page that starts a term (after the first)
        pages, _ = leaf_pages(conn)
        assert n_windows == sum(map(fts5index._starts_term, pages[1:])) + 1 > (300 if pgsz else 2)
    if window_bytes == 8 << 20:
        assert n_windows == 1
    cut = [t for t, _ in got if len(t.encode("utf-8")) > 30000]
    assert {t[:3] for t in cut} == {"yyy", "字字字"} and all(indexed_term(t) == t for t in cut)
    assert any(t.endswith("\ufffd") for t in cut)  # the cut inside 字's three bytes


def test_a_real_build_holds_every_term_in_key_order_with_the_tokenizers_counts(tmp_path: Path) -> None:
    docs = list(read_jsonl(SAMPLE))
    out = tmp_path / "s.sqlite3"
    build(docs, out, BuildSettings())
    conn = apsw.Connection(str(out), flags=apsw.SQLITE_OPEN_READONLY)
    chunktext.register(conn)  # the chunks' texts: the chunk_texts view (schema version 4)
    texts = [t for (t,) in conn.execute("SELECT text FROM chunk_texts ORDER BY id")]
    terms = [(t, df) for t, df in conn.execute("SELECT term, df FROM terms ORDER BY id")]
    assert [t for t, _ in terms] == sorted(t for t, _ in terms)  # ids in key order
    assert terms == [(t, len(p)) for t, p in oracle(texts)]
    for decoder in DECODERS:
        got, positions, _ = decoded(conn, len(texts), decoder, 1 << 16)
        assert got == oracle(texts)
        assert positions == chunk_lengths(conn, "chunks_fts", len(texts)).tolist()


def damaged(pages: list[bytes], rng: random.Random) -> list[bytes]:
    """One page hurt: a byte changed, bytes cut off or inserted, a header offset moved."""
    out = list(pages)
    i = rng.randrange(len(out))
    p = bytearray(out[i])
    how = rng.randrange(5)
    if how == 0:
        p[rng.randrange(len(p))] = rng.randrange(256)
    elif how == 1:
        del p[rng.randrange(len(p)):]
    elif how == 2:
        at = rng.randrange(len(p) + 1)
        p[at:at] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4)))
    elif how == 3:
        p[rng.randrange(4)] = rng.randrange(256)
    else:
        p[rng.randrange(len(p))] ^= 1 << rng.randrange(8)
    out[i] = bytes(p)
    return out


def leaf_pages(conn: apsw.Connection) -> tuple[list[bytes], int]:
    """The one segment's leaves, and its first page number."""
    (seg,) = segments(conn.execute("SELECT block FROM chunks_fts_data WHERE id = ?",
                                   (STRUCTURE_ROWID,)).fetchone()[0])
    pages = [b for (b,) in conn.execute(
        "SELECT block FROM chunks_fts_data WHERE id BETWEEN ? AND ? ORDER BY id",
        (segment_rowid(seg.segid, seg.first), segment_rowid(seg.segid, seg.last)))]
    return pages, seg.first


def run_decoder(decode: Any, pages: list[bytes], first: int, n_rows: int) -> tuple[Any, ...]:
    cap = sum(map(len, pages)) // 3 + 1
    chunks = np.zeros(cap, dtype=np.uint32)
    tfs = np.zeros(cap, dtype=np.uint32)
    lengths = np.zeros(n_rows + 1, dtype=np.int64)
    try:
        terms, dfs, n = decode(pages, first, True, chunks, tfs, lengths)
    except ValueError as e:
        return ("error", str(e))
    return (terms, dfs, n, chunks[:n].tolist(), tfs[:n].tolist(), lengths.tolist())


@needs_c
@pytest.mark.parametrize("seed", range(4))
def test_damaged_pages_give_both_decoders_the_same_result_or_the_same_error(tmp_path: Path, seed: int) -> None:
    conn = fts5_file(tmp_path / "f.sqlite3", AWKWARD[:4] + AWKWARD[6:], pgsz=64)
    pages, first = leaf_pages(conn)
    n_rows = len(AWKWARD) - 2
    kernels = native_kernels()
    assert run_decoder(kernels.fts5_doclists, pages, first, n_rows) == run_decoder(
        decode_pages, pages, first, n_rows) != ("error",)
    rng = random.Random(seed)
    errors = 0
    for _ in range(100):
        hurt = damaged(pages, rng)
        c = run_decoder(kernels.fts5_doclists, hurt, first, n_rows)
        assert c == run_decoder(decode_pages, hurt, first, n_rows)
        errors += c[0] == "error"
    assert errors > 50  # most damage is caught (the rest: a byte of a term or of a position)


def test_an_index_of_several_segments_is_refused(tmp_path: Path) -> None:
    conn = fts5_file(tmp_path / "f.sqlite3", ["wing flutter"], optimize=False)
    conn.execute("INSERT INTO chunks_fts(rowid, text) VALUES(2, 'heat transfer')")  # a second segment
    with pytest.raises(BuildError, match="holds 2 segments, not one"):
        list(windows(conn, "chunks_fts", np.zeros(3, dtype=np.int64)))


@pytest.mark.parametrize("decoder", DECODERS)
def test_an_empty_index_has_no_windows(tmp_path: Path, decoder: str) -> None:
    for texts in ([], ["", "..."]):
        conn = fts5_file(tmp_path / f"f{len(texts)}.sqlite3", texts)
        native = decoder == "c"
        assert list(windows(conn, "chunks_fts", np.zeros(len(texts) + 1, dtype=np.int64), native=native)) == []
        assert chunk_lengths(conn, "chunks_fts", len(texts)).tolist() == [0] * (len(texts) + 1)


@pytest.mark.parametrize("decoder", DECODERS)
def test_a_second_column_and_a_delete_marker_are_errors(tmp_path: Path, decoder: str) -> None:
    decode = native_kernels().fts5_doclists if decoder == "c" else decode_pages
    conn = apsw.Connection(str(tmp_path / "two.sqlite3"))
    conn.execute("CREATE VIRTUAL TABLE chunks_fts USING fts5(a, b, detail=full)")
    conn.execute("INSERT INTO chunks_fts(rowid, a, b) VALUES(1, 'wing', 'wing')")
    conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
    pages, first = leaf_pages(conn)
    assert run_decoder(decode, pages, first, 1) == (
        "error", f"leaf page {first}, offset 12: a position list holds a column marker or a position "
                 "beyond 32 bits")
    conn = fts5_file(tmp_path / "one.sqlite3", ["wing"])
    pages, first = leaf_pages(conn)
    page = bytearray(pages[0])
    assert page[4:11] == b"\x05" + b"0wing" + b"\x01"  # the term, then rowid 1
    page[11] |= 1  # its position list's size, with the delete flag
    assert run_decoder(decode, [bytes(page)], first, 1)[1].endswith(
        "a delete marker (the index is not a merged, optimized one)")
    assert run_decoder(decode, pages, first, 1)[:3] == (["wing"], [1], 1)


def test_a_misread_index_fails_the_build_and_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Positions decoded that are not FTS5's document sizes: a loud error, never postings."""
    real = fts5index.decode_pages

    def dropping(pages: Any, first: int, to_end: bool, chunks: Any, tfs: Any, lengths: Any) -> Any:
        terms, dfs, n = real(pages, first, to_end, chunks, tfs, lengths)
        lengths[int(chunks[0])] -= 1  # as if a position had been missed
        return terms, dfs, n

    monkeypatch.setattr(fts5index, "decode_pages", dropping)
    monkeypatch.setattr(importlib.import_module("drsearch.index.native"), "_kernels", None)
    out = tmp_path / "x.sqlite3"
    with pytest.raises(BuildError, match=r"FTS5's index holds \d+ positions for chunk \d+, its document "
                                         r"size says \d+: the index was misread"):
        build(list(read_jsonl(SAMPLE))[:20], out, BuildSettings())
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("threads", [1, 2])
def test_a_token_longer_than_fts5_keeps_is_searched_as_fts5_searches_it(tmp_path: Path, threads: int) -> None:
    """A token of 33,000 bytes: FTS5 keeps its first 32,768 (cut inside a character); the
    terms table holds that cut, a query of the token finds it, ranked as FTS5's bm25()."""
    long = "字" * 11000
    chunks = [SourceChunk("a", f"{long} wing"), SourceChunk("b", f"{long}字 flutter wing"),
              SourceChunk("c", "heat transfer wing")]
    docs = [{"docid": d, "url": f"https://{d}.example/", "text": ""} for d in "abc"]
    out = tmp_path / "long.sqlite3"
    build(docs, out, BuildSettings(threads=threads), chunks=chunks)
    with Engine.open(out) as e:
        for query in (long, f"{long}字字", "wing", f"wing {long}"):
            ranked = [(h.docid, h.score) for h in e.search(query, 10, with_text=False).hits]
            oracle_ranked = [("abc"[rowid - 1], score) for rowid, score in e.fts5_rank(query)]
            assert ranked == oracle_ranked and ranked  # the cut token matches both long tokens
        assert len(e.search(long, 10).hits) == 2


@needs_c
def test_a_build_without_the_kernel_writes_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python decoder and the Python chunk texts (split and join) make the same file."""
    docs = list(read_jsonl(SAMPLE))
    build(docs, tmp_path / "c.sqlite3", BuildSettings())
    monkeypatch.setattr(importlib.import_module("drsearch.index.native"), "_kernels", None)
    build(docs, tmp_path / "py.sqlite3", BuildSettings())
    assert (tmp_path / "c.sqlite3").read_bytes() == (tmp_path / "py.sqlite3").read_bytes()
