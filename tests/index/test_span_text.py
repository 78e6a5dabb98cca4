"""Chunk text stored once (schema version 4: a chunk as a byte span of its document's text)
against every chunk's text stored (version 2, ``BuildSettings(chunk_text="stored")``): the
same corpus built both ways gives every reader the same chunk texts, search results, snippets
and documents; FTS5 stays the index of record (its ``bm25()`` on a plain connection, its
``integrity-check`` through ``drsearch validate --deep``, which catches a damaged span);
``drsearch shard`` splits a version-4 file; the same input gives the same bytes."""

from __future__ import annotations

import json
import random
import shutil
import zlib
from pathlib import Path

import apsw
import pytest

from drsearch.contract import CorruptIndexError
from drsearch.index import BuildSettings, Engine, build, chunktext, integrity, lzcodec, native
from drsearch.index.blobs import SpanTexts
from drsearch.index.chunking import chunk_spans
from drsearch.index.integrity import fts5_integrity_check
from drsearch.index.shards import split_index
from drsearch.tools.cli import main

from ..helpers import cranfield_docs, cranfield_queries, sample_docs

QUERIES = [*cranfield_queries()[:40], "pressure", "the of a", "boundary layer theory", "zzzz unknown"]


def _all_chunks(path: Path) -> list[str]:
    with Engine.open(path) as e:
        return e.chunk_texts(list(range(1, int(e.meta["chunks"]) + 1)))


@pytest.mark.parametrize("which", ["sample", "cran_small"])
def test_every_reader_gets_the_same_chunk_texts_as_from_stored_text(
        which: str, sample_index: Path, sample_index_stored: Path, cran_small_chunks: Path,
        cran_small_chunks_stored: Path) -> None:
    spans, stored = {"sample": (sample_index, sample_index_stored),
                     "cran_small": (cran_small_chunks, cran_small_chunks_stored)}[which]
    assert spans.stat().st_size < stored.stat().st_size
    with Engine.open(spans) as e4, Engine.open(stored) as e2:
        assert (e4.stats()["schema_version"], e2.stats()["schema_version"]) == (5, 2)
        assert e4.stats()["content_identity"] == e2.stats()["content_identity"]
        n = int(e2.meta["chunks"])
        rows = list(range(1, n + 1))
        assert e4.chunk_texts(rows) == e2.chunk_texts(rows)
        plain = [r[0] for r in e2._db().execute("SELECT text FROM chunks ORDER BY id")]
        assert e4.chunk_texts(rows) == plain
        # the view, on the engine's connection, is every chunk's text too
        assert [t for _, t in e4._db().execute("SELECT id, text FROM chunk_texts ORDER BY id")] == plain
        for q in QUERIES:
            for k in (1, 10, 100):
                assert repr(e4.search(q, k)) == repr(e2.search(q, k)), (q, k)
            assert repr(e4.search(q, 10, with_text=False)) == \
                repr(e2.search(q, 10, with_text=False))
            ranked = e2.rank(q, 5)
            assert e4.hits(q, ranked) == e2.hits(q, ranked)
            assert e4.fts5_rank(q, 50) == e2.fts5_rank(q, 50)
        docids = [d for (d,) in e2._db().execute("SELECT docid FROM documents ORDER BY id LIMIT 30")]
        for d in docids:
            assert e4.open_document(docid=d) == e2.open_document(docid=d)


def test_spans_rebuild_every_chunk_of_unicode_and_odd_whitespace(tmp_path: Path) -> None:
    words = ["ab", "é", "日本", "x\u00a0y", "𝔘𝔫", "w", "naïve", "ß", "İ"]
    seps = [" ", "  ", "\n", "\t\u2003", "\x1c", "\u3000", " \u00a0 "]
    docs = []
    for i in range(30):
        parts = []
        for j in range(40 + 13 * i):
            parts += [words[(i * 7 + j) % len(words)], seps[(i + j * j) % len(seps)]]
        docs.append({"docid": f"d{i:02d}", "url": f"https://ex.org/{i}", "title": f"T {i}",
                     "text": ("  " if i % 3 else "") + "".join(parts)})
    settings = {"chunk_words": 25, "chunk_stride": 20}
    spans, stored = tmp_path / "spans.sqlite3", tmp_path / "stored.sqlite3"
    build(docs, spans, BuildSettings(**settings))
    build(docs, stored, BuildSettings(**settings, chunk_text="stored"))
    texts = _all_chunks(spans)
    assert texts == _all_chunks(stored)
    expected = [" ".join(w[s.start:s.end]) for d in docs
                for w in [d["text"].split()] for s in chunk_spans(len(w), 25, 20)]
    assert texts == expected
    conn = apsw.Connection(str(spans))
    assert conn.execute("SELECT count(*) FROM chunks WHERE text IS NOT NULL").get == 0
    conn.close()


def test_byte_spans_and_restart_points_cut_the_words() -> None:
    text = " a  bé\n日本 c\u2003d "
    assert chunktext.byte_spans(text, [(0, 2), (1, 4), (4, 5)]) == [(1, 7), (4, 16), (19, 20)]
    packed, zstarts = chunktext.pack_text(text, [1, 4, 19])
    assert zlib.decompress(packed) == text.encode()  # one zlib stream: the document reads whole
    assert chunktext.pack_text(text) == (zlib.compress(text.encode(), 6), [])  # version 2's bytes
    assert chunktext.pack_text(text, [0, 4])[1][0] == chunktext.ZLIB_HEADER_BYTES
    assert [chunktext.chunk_text(packed, z, a, b) for z, (a, b) in
            zip(zstarts, [(1, 7), (4, 16), (19, 20)], strict=True)] == ["a bé", "bé 日本 c", "d"]
    with pytest.raises(ValueError, match="past the text's words"):
        chunktext.byte_spans(text, [(0, 6)])
    for bad in ((zstarts[0], 5, 4), (zstarts[0], 1, 99), (len(packed) + 1, 1, 2)):
        with pytest.raises(ValueError):
            chunktext.chunk_text(packed, *bad)
    with pytest.raises(ValueError, match="not zlib"):
        chunktext.chunk_text(b"\xff" * 8, 0, 0, 3)  # (deflate block type 3: reserved)


def test_a_plain_connection_still_ranks_with_fts5s_bm25(sample_index: Path, sample_index_stored: Path) -> None:
    """What a user of the plain sqlite3 shell runs: bm25() reads FTS5's own tables only, so
    it answers without drsearch's function; the text through FTS5 needs it."""
    sql = "SELECT rowid, bm25(chunks_fts) FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY rank LIMIT 20"
    ro = apsw.SQLITE_OPEN_READONLY
    for q in ("pressure", "climate OR energy", "the"):
        plain, stored = apsw.Connection(str(sample_index), flags=ro), apsw.Connection(str(sample_index_stored), flags=ro)
        assert plain.execute(sql, (q,)).fetchall() == stored.execute(sql, (q,)).fetchall()
        assert plain.execute("PRAGMA quick_check").get == "ok"
        with pytest.raises(apsw.SQLError, match="drsearch_chunk_text"):
            plain.execute("SELECT text FROM chunk_texts LIMIT 1").fetchall()
        chunktext.register(plain)
        assert plain.execute("SELECT text FROM chunks_fts WHERE rowid = 3").get == \
            stored.execute("SELECT text FROM chunks_fts WHERE rowid = 3").get
        plain.close()
        stored.close()


def _damage_span(src: Path, dst: Path, chunk: int, delta: int) -> None:
    shutil.copyfile(src, dst)
    conn = apsw.Connection(str(dst))
    conn.execute("UPDATE chunks SET end_byte = end_byte + ? WHERE id = ?", (delta, chunk))
    conn.close()


def test_the_fts5_check_passes_and_catches_a_damaged_span(sample_index: Path, tmp_path: Path) -> None:
    """``validate --deep``'s FTS5 check (fts5_integrity_check; the release-level test is in
    tests/release/test_release.py)."""
    assert fts5_integrity_check(sample_index) == []
    bad = tmp_path / "bad.sqlite3"
    _damage_span(sample_index, bad, 5, -40)
    (problem,) = fts5_integrity_check(bad)
    assert "integrity-check" in problem
    # a span past its document's end: the reader reports the file damaged, never a wrong text
    past = tmp_path / "past.sqlite3"
    _damage_span(sample_index, past, 5, 10**7)
    with Engine.open(past) as e, pytest.raises(CorruptIndexError, match="validate --deep"):
        e.chunk_texts([5])


def test_a_version_4_file_splits_into_shards_that_search_as_the_whole(sample_index: Path,
                                                                      tmp_path: Path) -> None:
    out = tmp_path / "shards"
    out.mkdir()
    reports = split_index(sample_index, out, 2)
    with Engine.open(sample_index) as whole:
        texts = whole.chunk_texts(list(range(1, int(whole.meta["chunks"]) + 1)))
        got: list[str] = []
        for r in reports:
            assert fts5_integrity_check(r.path) == []
            with Engine.open(r.path) as shard:
                assert shard.stats()["schema_version"] == 5 and shard.shard is not None
                got += shard.chunk_texts(list(range(1, r.chunks + 1)))
                for q in QUERIES[:10]:
                    for h in shard.search(q, 5).hits:
                        assert h.chunk_text in texts
        assert got == texts


def test_the_same_input_gives_the_same_bytes(tmp_path: Path) -> None:
    docs = cranfield_docs()[:300]
    a, b = tmp_path / "a.sqlite3", tmp_path / "b.sqlite3"
    build(docs, a, BuildSettings(chunk_words=60, chunk_stride=45))
    build(docs, b, BuildSettings(chunk_words=60, chunk_stride=45, threads=2))
    assert a.read_bytes() == b.read_bytes()


def test_a_version_2_file_still_opens_and_says_so(sample_index_stored: Path, sample_index: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    for path, version in ((sample_index_stored, 2), (sample_index, 5)):
        assert main(["stats", "--database", str(path), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["schema_version"] == version


def test_pre_chunked_chunks_keep_their_own_text(tmp_path: Path) -> None:
    from drsearch.index import SourceChunk
    docs = sample_docs()[:5]
    chunks = [SourceChunk(d["docid"], f"given  text {i} of {d['docid']}", "t") for i, d in enumerate(docs)]
    path = tmp_path / "pre.sqlite3"
    build(docs, path, chunks=chunks)
    assert _all_chunks(path) == [c.text for c in chunks]
    assert fts5_integrity_check(path) == []


def test_the_kernel_and_python_cut_the_same_texts_and_hits(sample_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With zlib at build time the kernel cuts version-4 texts from the pages (one call per
    search, blobs.SpanTexts); without, the engine cuts them in Python: the same hits."""
    if not native.span_texts():
        pytest.skip("the kernel was built without zlib: the Python cut only")
    with Engine.open(sample_index) as c_engine:
        assert isinstance(c_engine._chunk_texts, SpanTexts)
        monkeypatch.setattr(native, "span_texts", lambda: False)
        with Engine.open(sample_index) as py_engine:
            assert py_engine._chunk_texts is None
            rows = list(range(1, int(c_engine.meta["chunks"]) + 1))
            assert c_engine.chunk_texts(rows) == py_engine.chunk_texts(rows)
            for q in QUERIES[:20]:
                assert repr(c_engine.search(q, 10)) == repr(py_engine.search(q, 10))


def test_the_kernels_byte_spans_are_pythons() -> None:
    """The build's spans: native.word_byte_spans (with the kernel) and chunktext.byte_spans, on
    random texts of every kind of whitespace and width of code point."""
    if not native.available():
        pytest.skip("C kernel not built")
    rng = random.Random(5)
    alphabet = ["ab", "é", "日本", "𝔘", "w", " ", "  ", "\n", "\u2003", "\x1c", "\u00a0", "\u3000", "x\u0085y"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 400)))
        n = len(text.split())
        spans = [(s.start, s.end) for s in chunk_spans(n, rng.randint(1, 30), 1)] if n else []
        spans = [(a, b) for a, b in spans if a < b][::max(1, len(spans) // 7)]
        assert native.word_byte_spans(text, spans) == chunktext.byte_spans(text, spans), text
    with pytest.raises(ValueError, match="not within"):
        native.word_byte_spans("a b", [(1, 3)])


def _damage_text(src: Path, dst: Path, chunk: int, at: int) -> None:
    """Flip every bit of the byte ``at`` bytes into chunk ``chunk``'s block of its document's text."""
    shutil.copyfile(src, dst)
    conn = apsw.Connection(str(dst))
    doc, zstart = conn.execute("SELECT doc, zstart FROM chunks WHERE id = ?", (chunk,)).fetchone()
    blob = bytearray(conn.execute("SELECT text FROM doc_texts WHERE id = ?", (doc,)).get)
    assert blob[0] == lzcodec.MAGIC_JOINED  # (version 4 stores its document texts joined, in drlz)
    blob[zstart + at] ^= 0xFF
    conn.execute("UPDATE doc_texts SET text = ? WHERE id = ?", (bytes(blob), doc))
    conn.close()


@pytest.mark.parametrize("at", [0, 1, 40, 700])
def test_validate_deep_catches_a_damaged_drlz_block(sample_index: Path, tmp_path: Path, at: int) -> None:
    """A flipped byte in a chunk's block: the text it decodes to is not what FTS5 indexed (or it
    does not decode): ``validate --deep``'s checks report it; the engine never returns a text
    longer or shorter than the span, and a block that does not decode is a CorruptIndexError."""
    bad = tmp_path / "bad.sqlite3"
    _damage_text(sample_index, bad, 5, at)
    problems = fts5_integrity_check(bad) + integrity.document_problems(bad)
    assert problems, at
    with Engine.open(bad) as e:
        try:
            (text,) = e.chunk_texts([5])
        except CorruptIndexError as err:
            assert "validate --deep" in str(err)
        else:
            with Engine.open(sample_index) as good:
                assert text != good.chunk_texts([5])[0]


def _odd_whitespace_docs(rng: random.Random) -> list[dict[str, str]]:
    """Long runs of words with every kind of whitespace (single, doubled, ASCII, beyond ASCII)
    and non-ASCII letters."""
    words = ["word", "x", "naïve", "’quoted’", "日本語", "𝔘𝔫", "ab\x7fc", "a\x00b", "tail-end", "1234567"]
    seps = [" "] * 30 + ["  ", "\n", "\n\n", "\t", "\x1c", "\x1f", "\x0b", "\u00a0", "\u0085", "\u2003",
                         "\u2009", "\u200b", "\u2028", "\u202f", "\u205f", "\u3000", "\u1680", " \u00a0"]
    docs = []
    for i in range(40):
        parts = []
        for _ in range(rng.randint(50, 600)):
            parts += [rng.choice(words), rng.choice(seps)]
        docs.append({"docid": f"r{i:02d}", "url": f"https://ex.org/r{i}", "title": f"R {i}", "text": "".join(parts)})
    return docs


def test_the_kernel_joins_random_whitespace_as_python_does(tmp_path: Path) -> None:
    """Texts with every kind of whitespace (at a block's edge too) and non-ASCII letters: each
    chunk's span, decoded, is str.split()'s words joined (the build stores them joined)."""
    docs = _odd_whitespace_docs(random.Random(17))
    path = tmp_path / "ws.sqlite3"
    build(docs, path, BuildSettings(chunk_words=70, chunk_stride=50))
    expected = [" ".join(w[s.start:s.end]) for d in docs
                for w in [d["text"].split()] for s in chunk_spans(len(w), 70, 50)]
    assert _all_chunks(path) == expected


def _as_earlier_version_4(path: Path, lz: bool) -> None:
    """Rewrite a version-4 file's document texts as earlier version-4 code stored them: the
    text as it is, in drlz (``lz``) or zlib with a full flush at each chunk start, the chunks'
    spans in the text as it is. FTS5's index is untouched (the same chunk texts)."""
    conn = apsw.Connection(str(path))
    with conn:
        for doc, blob in list(conn.execute("SELECT id, text FROM doc_texts")):
            text = chunktext.unpack_text(blob)
            rows = list(conn.execute("SELECT id, start_word, end_word FROM chunks WHERE doc = ? ORDER BY id", (doc,)))
            spans = chunktext.byte_spans(text, [(s, e) for _, s, e in rows]) if rows else []
            packed, zstarts = chunktext.pack_text(text, [a for a, _ in spans], lz=lz)
            assert packed[0] == lzcodec.MAGIC if lz else not lzcodec.is_lz(packed)
            conn.execute("UPDATE doc_texts SET text = ? WHERE id = ?", (packed, doc))
            conn.executemany("UPDATE chunks SET start_byte = ?, end_byte = ?, zstart = ? WHERE id = ?",
                             [(a, b, z, cid) for (cid, _, _), (a, b), z in zip(rows, spans, zstarts, strict=True)])
    conn.close()


@pytest.mark.parametrize("lz", [True, False])
def test_earlier_version_4_files_read_as_before(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lz: bool) -> None:
    """A file whose document texts are stored as they are (earlier version-4 code: drlz, or zlib
    with a full flush at each chunk start) reads the same chunk texts, documents and hits: the
    kernel joins each span's words as it cuts them (16 bytes at a time where it can,
    _k_texts.h's collapse16), the Python reader with str.split()."""
    docs = _odd_whitespace_docs(random.Random(19))
    path, old = tmp_path / "new.sqlite3", tmp_path / "old.sqlite3"
    build(docs, path, BuildSettings(chunk_words=70, chunk_stride=50))
    shutil.copyfile(path, old)
    _as_earlier_version_4(old, lz)
    expected = _all_chunks(path)
    assert expected == [" ".join(w[s.start:s.end]) for d in docs
                        for w in [d["text"].split()] for s in chunk_spans(len(w), 70, 50)]
    assert _all_chunks(old) == expected
    assert fts5_integrity_check(old) == [] and integrity.document_problems(old) == []
    with Engine.open(path) as new_e, Engine.open(old) as old_e:
        assert [old_e.open_document(docid=d["docid"]).text for d in docs] == [d["text"] for d in docs]
        for q in ["word", "naïve tail-end", "日本語 x"]:
            assert repr(old_e.search(q, 10)) == repr(new_e.search(q, 10))
    monkeypatch.setattr(native, "span_texts", lambda: False)
    assert _all_chunks(old) == expected
