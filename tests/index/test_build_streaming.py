"""The streaming build: FTS5 indexes the chunks in a side file and the postings are read out
of its merged index, the indexing side in a worker process with ``threads=2``; the file is the
same bytes whatever the thread count, and the same content as the builds before (the same
format but for the block maxima of schema version 2, and term ids now in key order)."""

from __future__ import annotations

import hashlib
import importlib
import time
from collections.abc import Iterator
from multiprocessing.connection import Pipe
from pathlib import Path
from typing import Any

import apsw
import pytest

from drsearch.contract import BuildError, InvalidDocumentError
from drsearch.index import BlockList, BuildSettings, SourceChunk, build, chunktext, read_jsonl
from drsearch.index.build import tokenize_worker
from drsearch.index.version4 import write_version4

from .schema_v1 import write_v1

build_module = importlib.import_module("drsearch.index.build")  # the module, not build()
ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "data" / "sample" / "docs.jsonl"
BLOCKED = ROOT / "data" / "sample" / "blocked_docids.txt"
VERSION_KEYS = {"build_tool", "sqlite_version", "apsw_version"}

# Per-table digests of files built by the build before streaming (commit e564378: postings
# held per partition, FTS5 'rebuild'), with the digest function below. Equal digests mean the
# same rows in every table, FTS5's shadow tables included: the format did not change. Only
# the page layout differs (rows are written in another order), which the format leaves free.
BEFORE_STREAMING = {
    "porter": {
        "arrays": "1d2470b7f2ba61aa", "chunks": "2bb298f1bdcb4f10", "chunks_fts_config": "a8b2b0af8b6c9a95",
        "chunks_fts_data": "574c26d719ec9925", "chunks_fts_docsize": "a5716622a1689c87",
        "chunks_fts_idx": "524ef194b45a3cfb", "dense_tfs": "8e2ff9bffb835a90", "doc_texts": "c36f20f0298e367a",
        "documents": "d803a53d147a3aa3", "meta": "9318303a1ecb592a", "postings": "be22abd641e0bb55",
        "terms": "6b07b1c650748c5c", "urls": "926d19755a3e61ac",
    },
    "unicode61-excluded": {
        "arrays": "9bae37085ca59127", "chunks": "d4acc1fc31843d4f", "chunks_fts_config": "a8b2b0af8b6c9a95",
        "chunks_fts_data": "101e3095a2f6ff05", "chunks_fts_docsize": "9ecbeca82846eb9c",
        "chunks_fts_idx": "1879c5b19bf2c037", "dense_tfs": "36ccbefe2d12b9c6", "doc_texts": "e34ef475be1c82ba",
        "documents": "9ada1f03e833f38b", "meta": "e4489bdc11472483", "postings": "a070fe39519e0d7e",
        "terms": "e93d3a8fa59a214c", "urls": "7e0b4b4a784a874a",
    },
    "pre-chunked": {
        "arrays": "181bed6af126efcd", "chunks": "bf5ad316e6f0a15d", "chunks_fts_config": "a8b2b0af8b6c9a95",
        "chunks_fts_data": "1b322ed78a102007", "chunks_fts_docsize": "a537193335ce8a21",
        "chunks_fts_idx": "56125621f3d733ab", "dense_tfs": "8551509901866b65", "doc_texts": "745afce511e7ac46",
        "documents": "fc89632d3c4d8bef", "meta": "68b230517c7b1525", "postings": "791e4a7dd05e8577",
        "terms": "b2552fa4a296908d", "urls": "d419b4df18e1e42b",
    },
}


def content_digests(path: Path) -> dict[str, str]:
    """sha256 (16 hex digits) of every table's rows in full sort order; ``meta`` without the
    versions of drsearch, SQLite and apsw (they change with upgrades, not with the build)."""
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        out = {}
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                    "AND name != 'chunks_fts' ORDER BY name"):
            n_cols = len(list(conn.execute(f"PRAGMA table_info('{name}')")))
            order = ", ".join(str(i) for i in range(1, n_cols + 1))
            h = hashlib.sha256()
            for row in conn.execute(f'SELECT * FROM "{name}" ORDER BY {order}'):
                if name == "meta" and row[0] in VERSION_KEYS:
                    continue
                h.update(repr(row).encode("utf-8"))
            out[str(name)] = h.hexdigest()[:16]
        return out
    finally:
        conn.close()


def sample_chunks() -> list[SourceChunk]:
    """Pre-chunked input: 300-word pieces of each sample document, given last piece first."""
    out = []
    for d in read_jsonl(SAMPLE):
        words = d["text"].split()
        out += [SourceChunk(d["docid"], " ".join(words[i:i + 300])) for i in range(0, len(words), 300)][::-1]
    return out


VARIANTS: dict[str, dict[str, Any]] = {
    "porter": {},
    "unicode61-excluded": {"settings": {"tokenizer": "unicode61"}, "exclude": True},
    "pre-chunked": {"chunks": True},
}


def build_variant(name: str, out: Path, **settings: Any) -> Path:
    v = VARIANTS[name]
    build(read_jsonl(SAMPLE), out, BuildSettings(**{**v.get("settings", {}), **settings}),
          exclude=BlockList.from_file(BLOCKED) if v.get("exclude") else None,
          chunks=sample_chunks() if v.get("chunks") else None)
    return out


# Tables whose rows changed when the postings came to be read out of FTS5's own index (term
# ids in FTS5's key order instead of first seen; FTS5's segment renumbered by its one merge):
# their rows are pinned here as they are now, and what they mean by LOGICAL below.
RENUMBERED = {"terms", "postings", "dense_tfs", "chunks_fts_data", "chunks_fts_idx"}
NOW = {
    "porter": {"chunks_fts_data": "dea882486f4eee49", "chunks_fts_idx": "6186d97c079d577b",
               "dense_tfs": "f20070ebcf989981", "postings": "e3067d2e93d80c16", "terms": "8f1f0029891172d6"},
    "unicode61-excluded": {"chunks_fts_data": "5e72782cfd9e877d", "chunks_fts_idx": "498efa1e68261e4a",
                           "dense_tfs": "6416019a3589ce82", "postings": "1c98849af09c2211",
                           "terms": "9b7eb091ef29eddc"},
    "pre-chunked": {"chunks_fts_data": "50b43cf4cb9e8825", "chunks_fts_idx": "dc49ef5ab2abb244",
                    "dense_tfs": "d875863357a52f96", "postings": "c00f0264a35b0b69", "terms": "0b6de5410000b944"},
}
# logical_digests of the builds before (commit 479c386, first-seen term ids): every term's
# postings by its text, and FTS5's index as fts5vocab lists it, position by position.
LOGICAL = {
    "porter": {"postings": "f87072dec0e1f0df", "fts5": "3e798d944f8ad896"},
    "unicode61-excluded": {"postings": "420bb1e38ae2ef89", "fts5": "f4cf124c4c0153bc"},
    "pre-chunked": {"postings": "11236ccbd367e5ee", "fts5": "31ed7ef5b780307c"},
}


def logical_digests(path: Path) -> dict[str, str]:
    """What the renumbered tables hold, whatever the ids: each term (in text order) with its
    df, dense flag, upper bound and postings BLOB; FTS5's every (term, rowid, column, offset)."""
    conn = apsw.Connection(str(path))
    try:
        postings = dict(conn.execute("SELECT id, data FROM postings"))
        dense = dict(conn.execute("SELECT id, tfs FROM dense_tfs"))
        h = hashlib.sha256()
        for term, tid, df, is_dense, bound in conn.execute(
                "SELECT term, id, df, dense, max_impact FROM terms ORDER BY term"):
            h.update(repr((term, df, is_dense, bound)).encode("utf-8"))
            h.update((dense if is_dense else postings)[tid])
        conn.execute("CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, chunks_fts, instance)")
        v = hashlib.sha256()
        for row in conn.execute("SELECT * FROM temp.v ORDER BY 1, 2, 3, 4"):
            v.update(repr(row).encode("utf-8"))
        return {"postings": h.hexdigest()[:16], "fts5": v.hexdigest()[:16]}
    finally:
        conn.close()


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_same_bytes_for_any_thread_count_and_same_content_as_before(tmp_path: Path, name: str) -> None:
    spans = build_variant(name, tmp_path / "one.sqlite3", threads=1)
    assert spans.read_bytes() == build_variant(name, tmp_path / "two.sqlite3", threads=2).read_bytes()
    one = build_variant(name, tmp_path / "stored.sqlite3", threads=1, chunk_text="stored")
    # Schema version 4 stores chunks as spans of their documents' texts, compressed in drlz
    # blocks that start where chunks start: only the chunks rows, the document texts' bytes (the
    # same texts; a pre-chunked build's too, drlz in one block) and meta's version differ from
    # version 2's; FTS5's index and the postings are the same. Version 5 codes the lists'
    # impacts: decoded (a version-4 file), the same postings and terms again.
    v5 = content_digests(spans)
    v4 = content_digests(write_version4(spans, tmp_path / "v4.sqlite3"))
    v2 = content_digests(one)
    differ = {"meta", "chunks", "doc_texts"}
    assert {t for t in v2.keys() | v4.keys() if v2.get(t) != v4.get(t)} == differ
    assert {t for t in v5.keys() | v4.keys() if v5.get(t) != v4.get(t)} == {"meta", "terms", "postings"}
    # Schema version 2 appends block maxima to long posting lists (and records their block
    # size in meta): without them, the file holds exactly what the build wrote before.
    v1 = content_digests(write_v1(one, tmp_path / "v1.sqlite3"))
    assert {t: d for t, d in v1.items() if t not in RENUMBERED} == {
        t: d for t, d in BEFORE_STREAMING[name].items() if t not in RENUMBERED}
    assert {t: v1[t] for t in RENUMBERED} == NOW[name]
    assert {t for t in v2 if v2[t] != v1[t]} == {"meta", "postings"}
    assert logical_digests(one) == LOGICAL[name]
    for path in (one, spans):  # FTS5's own check of the index it was handed
        conn = apsw.Connection(str(path))
        chunktext.register(conn)
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
        conn.close()


def test_a_failing_worker_reports_one_line(tmp_path: Path) -> None:
    """The worker's side sends its failure instead of dying silently (here: no staged input)."""
    recv, send = Pipe(duplex=False)
    tokenize_worker(tmp_path / "missing", BuildSettings(), False, tmp_path / "p.bin", send)
    kind, message = recv.recv()
    assert kind == "error" and "CantOpenError" in message and "\n" not in message


def test_more_than_two_threads_are_refused() -> None:
    with pytest.raises(ValueError, match="threads"):
        BuildSettings(threads=3)


@pytest.mark.parametrize(("interpreter", "why"), [
    ("/bin/false", r"died \(exit code 1\)$"),  # starts, then exits without a word
    ("/bin/ls", r"died \(exit code 2\): .*No such file"),  # complains on stderr: its last line
    ("/nonexistent/python", "cannot start"),
])
def test_a_worker_failure_fails_the_build_and_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, interpreter: str, why: str) -> None:
    """A worker process that cannot start or dies: one BuildError naming it, and no output
    file, not even a partial one."""
    monkeypatch.setattr("sys.executable", interpreter)
    with pytest.raises(BuildError, match=why):
        build(read_jsonl(SAMPLE), tmp_path / "x.sqlite3", BuildSettings(threads=2))
    assert not list(tmp_path.iterdir())


def _slow_docs(docs: list[dict[str, Any]], written: list[int], seen: dict[str, bool]) -> Iterator[object]:
    """Documents as a slow reader gives them (50 ms apart until the build has written
    something, at most ~9 s); ``seen["written_before_last"]``: whether it had, by the last one."""
    for i, d in enumerate(docs):
        if i == len(docs) - 1:
            seen["written_before_last"] = bool(written)
        yield d
        if not written:
            time.sleep(0.05)


def _recording_writes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    written: list[int] = []
    write = build_module._Writing.write

    def recording(self: Any, item: Any) -> None:
        written.append(len(item.chunks))
        write(self, item)

    monkeypatch.setattr(build_module._Writing, "write", recording)
    return written


def test_two_threads_tokenize_and_write_while_sorted_input_is_still_being_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Documents in docid order: the worker starts at once and the file is written while
    documents are still coming (no staging phase first); the same bytes as one thread's build
    of the unsorted sample; progress only after ``on_start`` has the total."""
    one = build_variant("porter", tmp_path / "one.sqlite3", threads=1)
    docs = sorted(read_jsonl(SAMPLE), key=lambda d: d["docid"])
    written = _recording_writes(monkeypatch)
    seen: dict[str, bool] = {}
    events: list[tuple[str, int]] = []
    report = build(_slow_docs(docs, written, seen), tmp_path / "two.sqlite3", BuildSettings(threads=2),
                   on_start=lambda n: events.append(("start", n)),
                   progress=lambda n: events.append(("progress", n)))
    assert seen["written_before_last"]
    assert (tmp_path / "two.sqlite3").read_bytes() == one.read_bytes()
    assert events[0] == ("start", report.chunks) and len(events) > 1
    assert sum(n for kind, n in events[1:] if kind == "progress") == report.chunks == sum(written)


def test_two_threads_start_again_when_the_input_turns_out_of_docid_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The smallest docid comes last, after the streamed build has written documents: what was
    written is discarded and the file built from the staged input, the same bytes."""
    one = build_variant("porter", tmp_path / "one.sqlite3", threads=1)
    docs = sorted(read_jsonl(SAMPLE), key=lambda d: d["docid"])
    docs = docs[1:] + docs[:1]
    written = _recording_writes(monkeypatch)
    seen: dict[str, bool] = {}
    build(_slow_docs(docs, written, seen), tmp_path / "two.sqlite3", BuildSettings(threads=2))
    assert seen["written_before_last"]
    assert (tmp_path / "two.sqlite3").read_bytes() == one.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.sqlite3", "two.sqlite3"]


@pytest.mark.parametrize(("bad", "why"), [
    ({"docid": "zzz", "url": "u", "text": 5}, r"document 185: 'text' must be a string"),
    ("dup", r"document 185: duplicate docid"),
])
def test_a_bad_document_late_in_a_streamed_build_fails_it_and_leaves_nothing(
        tmp_path: Path, bad: Any, why: str) -> None:
    docs: list[Any] = sorted(read_jsonl(SAMPLE), key=lambda d: d["docid"])
    docs = [dict(d) for d in docs] + [dict(docs[-1]) if bad == "dup" else bad]
    with pytest.raises(InvalidDocumentError, match=why):
        build(iter(docs), tmp_path / "x.sqlite3", BuildSettings(threads=2))
    assert not list(tmp_path.iterdir())
