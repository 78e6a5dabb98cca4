"""The streaming build: postings spilled as sorted runs and merged, the tokenizing side in a
worker process with ``threads=2``; the file is the same bytes whatever those settings are,
and the same content as the build before streaming (the same format but for the block
maxima of schema version 2)."""

from __future__ import annotations

import hashlib
import importlib
import time
from collections.abc import Iterator
from multiprocessing.connection import Pipe
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest

from drsearch.index import (
    BlockList,
    BuildError,
    BuildSettings,
    Engine,
    InvalidDocumentError,
    SourceChunk,
    build,
    read_jsonl,
)
from drsearch.index.build import tokenize_worker
from drsearch.index.spill import FAN_IN, PAIR, SortedRuns, sorted_pairs, token_pairs

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


@pytest.mark.parametrize("name", sorted(VARIANTS))
def test_same_bytes_for_any_thread_count_and_same_content_as_before(tmp_path: Path, name: str) -> None:
    one = build_variant(name, tmp_path / "one.sqlite3", threads=1)
    two = build_variant(name, tmp_path / "two.sqlite3", threads=2)
    assert one.read_bytes() == two.read_bytes()
    # Schema version 2 appends block maxima to long posting lists (and records their block
    # size in meta): without them, the file holds exactly what the build wrote before.
    v2 = content_digests(one)
    v1 = content_digests(write_v1(one, tmp_path / "v1.sqlite3"))
    assert v1 == BEFORE_STREAMING[name]
    assert {t for t in v2 if v2[t] != v1[t]} == {"meta", "postings"}


def test_a_tiny_memory_budget_spills_many_runs_and_gives_the_same_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_tokens`` 2000: a run per chunk or two, more than FAN_IN of them, so the merge
    first merges runs into longer runs, reading each through 125-triple blocks; same bytes."""
    written: list[int] = []
    windows = SortedRuns.windows

    def counting(self: SortedRuns) -> Any:
        initial = len(self.paths)
        yield from windows(self)
        written.extend([initial, self.written])

    monkeypatch.setattr(SortedRuns, "windows", counting)
    big = build_variant("porter", tmp_path / "big.sqlite3")
    assert written[0] == 1  # the default budget: the sample is one run
    written.clear()
    tiny = build_variant("porter", tmp_path / "tiny.sqlite3", run_tokens=2000)
    initial, total = written
    assert initial > FAN_IN and total > initial  # spilled, and merged in more than one level
    assert tiny.read_bytes() == big.read_bytes()
    with Engine.open(tiny) as e:
        assert e.stats()["postings"] > 0 and e.search("the", 3).hits


def _runs(rng: np.random.Generator, n_runs: int, n_terms: int) -> list[np.ndarray]:
    """Random runs as a build makes them: disjoint ascending chunk ranges, dense and rare terms."""
    runs, chunk = [], 1
    for _ in range(n_runs):
        n_chunks = int(rng.integers(1, 20))
        lens = rng.integers(0, 60, size=n_chunks)
        terms = rng.integers(0, n_terms, size=int(lens.sum())) ** 2 % n_terms  # skewed: some terms dense
        chunks = np.repeat(np.arange(chunk, chunk + n_chunks), lens)
        chunk += n_chunks
        key = terms.astype(np.uint64) << np.uint64(32) | chunks.astype(np.uint64)
        uniq, tf = np.unique(key, return_counts=True)
        runs.append(sorted_pairs((uniq >> np.uint64(32)).astype(np.uint32),
                                 (uniq & np.uint64(0xFFFFFFFF)).astype(np.uint32), tf.astype(np.uint32)))
    return runs


@pytest.mark.parametrize("seed", range(6))
def test_merged_windows_are_every_triple_by_term_then_chunk(tmp_path: Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    runs = _runs(rng, n_runs=int(rng.integers(1, 3 * FAN_IN)), n_terms=int(rng.integers(1, 200)))
    expected = np.concatenate(runs) if runs else np.empty(0, dtype=PAIR)
    expected = expected[np.lexsort((expected["chunk"], expected["term"]))]
    for block in (1, 7, 1000):
        d = tmp_path / f"b{block}"
        d.mkdir()
        spilled = SortedRuns(d, block)
        for r in runs:
            spilled.add(r)
        windows = list(spilled.windows())
        got = np.concatenate(windows) if windows else np.empty(0, dtype=PAIR)
        assert got.tobytes() == expected.tobytes()
        seen = [set(w["term"].tolist()) for w in windows]  # a term's postings lie in one window
        assert sum(len(s) for s in seen) == len(set().union(*seen))
        # Memory: a window holds at most a block (plus the rest of one term) per merged run,
        # never whole runs: with small blocks this is far below the triples in all.
        df = np.bincount(expected["term"]).max() if len(expected) else 0
        assert max((len(w) for w in windows), default=0) <= FAN_IN * (block + df)
        assert not list(d.iterdir())  # the runs' files are consumed


def test_sorted_pairs_saturates_tf_and_orders_by_term_then_chunk() -> None:
    pairs = sorted_pairs(np.array([5, 1, 5, 1], dtype=np.uint32), np.array([2, 3, 1, 1], dtype=np.uint32),
                         np.array([70000, 1, 2, 3], dtype=np.uint32))
    assert pairs.tolist() == [(1, 1, 3), (1, 3, 1), (5, 1, 2), (5, 2, 65535)]


@pytest.mark.parametrize("seed", range(8))
def test_token_pairs_are_the_counted_chunks_sorted_pairs(seed: int) -> None:
    """The batch sort counts each chunk's terms exactly as counting chunk by chunk does
    (chunks without a token included), so runs are the same triples as before."""
    rng = np.random.default_rng(seed)
    n_terms = int(rng.integers(1, 300))
    first = int(rng.integers(1, 2**32 - 100))  # chunk ids near the top: no 32-bit overflow
    lens = rng.integers(0, 80, size=int(rng.integers(0, 40)))
    tokens = [rng.integers(0, n_terms, size=int(n)) ** 2 % n_terms for n in lens]
    terms, chunks, tfs = [], [], []
    for c, toks in enumerate(tokens, first):
        ids, counts = np.unique(toks, return_counts=True)
        order = rng.permutation(len(ids))  # a chunk's terms in any order: sorted_pairs sorts
        terms += ids[order].tolist()
        chunks += [c] * len(ids)
        tfs += counts[order].tolist()
    expected = sorted_pairs(np.array(terms, dtype=np.uint32), np.array(chunks, dtype=np.uint32),
                            np.array(tfs, dtype=np.uint32))
    flat = np.concatenate(tokens).astype(np.uint32) if tokens else np.empty(0, dtype=np.uint32)
    got = token_pairs(flat, lens.astype(np.int64), first)
    assert got.dtype == PAIR
    assert got.tobytes() == expected.tobytes()


def test_token_pairs_saturate_tf() -> None:
    ids = np.array([5] * 70000 + [1, 5, 1], dtype=np.uint32)
    pairs = token_pairs(ids, np.array([70000, 0, 3], dtype=np.int64), 7)
    assert pairs.tolist() == [(1, 9, 2), (5, 7, 65535), (5, 9, 1)]
    assert token_pairs(np.empty(0, dtype=np.uint32), np.zeros(2, dtype=np.int64), 1).tolist() == []


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
