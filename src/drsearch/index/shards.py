"""Split a frozen index into S shard files that rank exactly as the whole index does.

A shard is an ordinary corpus file (of a version-2 index, schema version 3: version 2 plus
``meta.shard`` and the ``shard_terms`` table; of a version-4 index, version 4 with the same
two, its chunks still spans of its documents' texts) holding a contiguous range of the
index's documents, their chunks, texts and URLs, and those chunks' postings. Exactness comes
by construction: every posting keeps the impact the whole index computed (with the
corpus-wide N, avgdl and df), byte for byte; the only other corpus statistics a query reads
are recorded and used in their place:

- ``meta.shard.chunks`` and ``meta.shard.tokens``: the corpus' N and total length, whose
  quotient is the avgdl of a clamped (dense) term's impact, computed at query time;
- ``shard_terms(term, df, hidden)``: every term of the corpus with its corpus-wide df (the
  IDF that weighs a term in a snippet) and whether only blocked documents hold it anywhere
  (such a term is absent to a query, so it never picks a snippet).

Documents are cut into contiguous rowid ranges of about N/S chunks each (never by hash):
chunk rowids are FTS5's tie-break, so with ranges, among equal scores a lower shard index
means a lower rowid, and a broker merges ties exactly by (score, shard, rank in shard)
(docs/SCALING.md "Exact shards"). A clamped term stays clamped in every shard, a sparse one
sparse: the storage follows the corpus' df, not the shard's.

The blocklist is part of the split (``hidden`` depends on it): a shard refuses to open with
any other list (Engine.open), and a blocked document stays in its shard's file, hidden by
the shard's server as by the whole index's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import apsw
import numpy as np
import numpy.typing as npt
import xxhash

from ..contract.errors import BuildError, InvalidInputError
from . import chunktext
from .blocklist import BlockList
from .build import SourceChunk, build
from .doctable import DocTable
from .engine import Engine
from .fts5spec import sql_string
from .listcodes import RAW_WIDTH, check_layout, decode, list_blob
from .schema import (
    APPLICATION_ID,
    BLOCK_POSTINGS,
    DDL,
    DDL_V2,
    DDL_V4,
    FTS_DDL,
    FTS_DDL_V2,
    SHARD_DDL,
    SHARD_SCHEMA_VERSION,
    SPAN_TEXT_VERSION,
    block_count,
    has_list_codes,
)
from .terms import IDF_FLOOR, chunk_norms, term_impacts

if TYPE_CHECKING:
    from .settings import BuildSettings  # pydantic: imported by the build itself when it runs

# meta.shard's own format: a reader that does not know it refuses the file (schema version 3).
SHARD_FORMAT = 1


@dataclass(frozen=True, slots=True)
class ShardReport:
    """One written shard: its path, index, documents, chunks and identity."""

    path: Path
    index: int
    documents: int
    chunks: int
    identity: str


def shard_paths(out_dir: Path, count: int) -> list[Path]:
    """The files a split into ``count`` shards writes in ``out_dir``."""
    width = len(str(count - 1))
    return [out_dir / f"shard-{i:0{width}d}-of-{count}.sqlite3" for i in range(count)]


def _partition(chunk_doc: npt.NDArray[np.int32], n_docs: int, count: int) -> list[tuple[int, int]]:
    """Each shard's document rowid range (first, last), contiguous, about N/S chunks each:
    document d goes to shard ``chunks_before(d) * S // N`` (``(d - 1) * S // D`` without
    chunks), a non-decreasing function of d."""
    n_chunks = len(chunk_doc) - 1
    per_doc = np.bincount(chunk_doc[1:], minlength=n_docs + 1)[1:] if n_chunks else np.zeros(n_docs, np.int64)
    before = np.concatenate([[0], np.cumsum(per_doc)[:-1]]) if n_docs else np.zeros(0, np.int64)
    owner = (before * count) // n_chunks if n_chunks else (np.arange(n_docs) * count) // max(n_docs, 1)
    ranges = []
    for i in range(count):
        docs = np.flatnonzero(owner == i)
        if not len(docs):
            raise InvalidInputError(f"cannot split {n_docs} documents of {n_chunks} chunks into {count} "
                                    f"shards: shard {i} would hold no document (fewer shards)")
        ranges.append((int(docs[0]) + 1, int(docs[-1]) + 1))
    return ranges


def _set_identity(corpus: str, count: int, blocklist: BlockList) -> str:
    """The sharded build's identity: the same in every shard of one split."""
    return xxhash.xxh3_128(f"drsearch-shards\0{SHARD_FORMAT}\0{corpus}\0{count}\0{blocklist.sha256}"
                           .encode()).hexdigest()


class _Shard:
    """One shard file being written (a temporary name until complete)."""

    def __init__(self, path: Path, src: Path, index: int, docs: tuple[int, int], chunks: tuple[int, int],
                 tokenizer: str, source_version: int) -> None:
        """``source_version``: the index's; a shard of a version-4 or -5 index (chunks as spans
        of their documents' texts; version 5: coded lists, listcodes.py) is of the same
        version, a shard of a version-2 index is a version-3 file."""
        spans = source_version >= SPAN_TEXT_VERSION
        self.path, self.index, self.spans = path, index, spans
        self.coded = has_list_codes(source_version)
        self.version = source_version if spans else SHARD_SCHEMA_VERSION
        self.tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        self.tmp.unlink(missing_ok=True)
        self.first_doc, self.last_doc = docs
        self.first_chunk, self.last_chunk = chunks
        self.conn = apsw.Connection(str(self.tmp), flags=apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
                                    | apsw.SQLITE_OPEN_URI)
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "locking_mode=EXCLUSIVE", "page_size=4096",
                       "cache_size=-65536"):
            self.conn.execute(f"PRAGMA {pragma}")
        self.conn.execute("ATTACH ? AS src", ("file:" + quote(str(src.resolve())) + "?mode=ro&immutable=1",))
        chunktext.register(self.conn)  # FTS5's rebuild reads the chunk_texts view
        self.conn.execute("BEGIN")
        self.conn.execute(DDL if self.coded else DDL_V4 if spans else DDL_V2)
        self.conn.execute(SHARD_DDL)
        self.conn.execute((FTS_DDL if spans else FTS_DDL_V2).format(tokenize=tokenizer))
        self.terms: list[tuple[Any, ...]] = []
        self.postings = self.dense = 0

    def copy_rows(self) -> None:
        """Documents, texts, URLs and chunks of the shard's range, renumbered from 1; FTS5's
        index over those chunks (FTS5 is the index of record, not a source of scores here)."""
        d_off, c_off = self.first_doc - 1, self.first_chunk - 1
        d_range, c_range = (self.first_doc, self.last_doc), (self.first_chunk, self.last_chunk)
        c = self.conn
        c.execute("INSERT INTO documents SELECT id - ?, docid, url, canonical_url, title, metadata, n_words, "
                  "n_chunks FROM src.documents WHERE id BETWEEN ? AND ? ORDER BY id", (d_off, *d_range))
        c.execute("INSERT INTO doc_texts SELECT id - ?, text FROM src.doc_texts WHERE id BETWEEN ? AND ? "
                  "ORDER BY id", (d_off, *d_range))
        # The whole index's URL -> document rows (every collision already resolved: first
        # docid wins), each in its document's shard: a URL opens in one shard only.
        c.execute("INSERT INTO urls SELECT canonical_url, doc - ? FROM src.urls WHERE doc BETWEEN ? AND ? "
                  "ORDER BY canonical_url", (d_off, *d_range))
        span = "start_byte, end_byte, zstart, " if self.spans else ""
        c.execute(f"INSERT INTO chunks SELECT id - ?, doc - ?, ordinal, start_word, end_word, {span}text "
                  "FROM src.chunks WHERE id BETWEEN ? AND ? ORDER BY id", (c_off, d_off, *c_range))
        c.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('rebuild')")
        c.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")

    def add_term(self, term: str, dense: bool, blob: bytes, df: int, max_impact: float,
                 width: int = RAW_WIDTH, n_table: int = 0) -> None:
        tid = len(self.terms)
        self.conn.execute(f"INSERT INTO {'dense_tfs' if dense else 'postings'} VALUES(?,?)", (tid, blob))
        row = (term, tid, df, int(dense), max_impact)
        self.terms.append((*row, width, n_table) if self.coded else row)
        self.postings += df
        self.dense += dense

    def finish(self, meta: dict[str, Any], arrays: dict[str, npt.NDArray[Any]]) -> ShardReport:
        c = self.conn
        c.executemany(f"INSERT INTO terms VALUES({','.join('?' * (7 if self.coded else 5))})", self.terms)
        c.execute("INSERT INTO shard_terms SELECT term, df, hidden FROM temp.global_terms ORDER BY term")
        rows = ((int(i), str(d), str(u), str(t)) for i, d, u, t in
                c.execute("SELECT id, docid, url, title FROM documents ORDER BY id"))
        n_docs = self.last_doc - self.first_doc + 1
        offsets, data = DocTable.from_rows(rows, n_docs).arrays()
        c.executemany("INSERT INTO arrays VALUES(?,?,?)", [
            *((name, "<i4", arrays[name].astype("<i4").tobytes())
              for name in ("chunk_doc", "chunk_len", "chunk_ordinal")),
            ("doc_field_offsets", "<i8", offsets), ("doc_fields", "u1", data)])
        c.executemany("INSERT INTO meta VALUES(?,?)",
                      [(k, json.dumps(v, sort_keys=True)) for k, v in sorted(meta.items())])
        c.execute(f"PRAGMA application_id={APPLICATION_ID}")
        c.execute(f"PRAGMA user_version={self.version}")
        c.execute("COMMIT")
        c.execute("DETACH src")
        c.close()
        with open(self.tmp, "rb") as fh:
            os.fsync(fh.fileno())
        return ShardReport(self.path, self.index, n_docs, self.last_chunk - self.first_chunk + 1,
                           str(meta["content_identity"]))

    def abandon(self) -> None:
        try:
            self.conn.close()
        finally:
            self.tmp.unlink(missing_ok=True)


def split_index(src: str | os.PathLike[str], out_dir: str | os.PathLike[str], count: int, *,
                blocklist: BlockList | None = None, allow_missing_blocked: bool = False,
                overwrite: bool = False,
                progress: Callable[[int], None] | None = None) -> list[ShardReport]:
    """Split the index ``src`` into ``count`` shard files in ``out_dir`` (:func:`shard_paths`).

    ``blocklist``: the list the shards will be served with (the same every shard's server
    must use; None: a release's own list, else none, as Engine.open decides); a list naming
    docids the index lacks is a BlocklistError unless ``allow_missing_blocked``.
    ``progress`` is called with numbers of terms done.
    Raises InvalidInputError (count < 1, more shards than the documents allow, ``src`` a
    shard itself or its chunks not grouped by document, ``out_dir`` missing), BuildError
    (an output exists and not ``overwrite``, or cannot be written), and what Engine.open
    raises for ``src``. Nothing is left behind on failure; the same inputs give the same bytes.
    """
    paths = _check_outputs(out_dir, count, overwrite)
    # Engine.open's rule: a release's database gets the release's own list unless told
    with Engine.open(src, blocklist) as engine:
        if not allow_missing_blocked:
            engine.check_blocklist_complete()
        return _split(engine, paths, engine.blocklist, progress)


def _check_outputs(out_dir: str | os.PathLike[str], count: int, overwrite: bool) -> list[Path]:
    """The shard paths in ``out_dir``, after the checks both ways into shards make before any
    work: a count of at least 1, a directory that exists, no file to replace unless told."""
    if count < 1:
        raise InvalidInputError(f"--shards must be at least 1, got {count}")
    out = Path(out_dir)
    if not out.is_dir():
        raise InvalidInputError(f"directory {out} does not exist (create it first)")
    paths = shard_paths(out, count)
    existing = [p for p in paths if p.exists()]
    if existing and not overwrite:
        raise BuildError(f"{existing[0]} already exists (use --force / overwrite=True to replace it)")
    return paths


def build_shards(docs: Iterable[object], out_dir: str | os.PathLike[str], count: int,
                 settings: BuildSettings | None = None, *, blocklist: BlockList | None = None,
                 allow_missing_blocked: bool = False, overwrite: bool = False,
                 progress: Callable[[int], None] | None = None, on_start: Callable[[int], None] | None = None,
                 chunks: Iterable[SourceChunk] | None = None,
                 exclude: BlockList | None = None) -> list[ShardReport]:
    """Build the index of ``docs`` straight into ``count`` shard files in ``out_dir``: the
    files :func:`split_index` writes from ``build(docs, ...)``'s index, byte for byte.

    Exactness needs the corpus-wide statistics (N, avgdl, every term's df) before any
    posting's impact is final, so the whole index is built first, as an unnamed file in
    ``out_dir`` (``.whole-PID.sqlite3``; the directory must hold it and the shards at once,
    about 2.1 times the index), split, and removed, whatever happens. ``settings``,
    ``progress``, ``on_start``, ``chunks`` and ``exclude`` are :func:`build`'s; ``blocklist``,
    ``allow_missing_blocked`` and ``overwrite`` :func:`split_index`'s (None: no blocklist; a
    new index is not a release). Raises what both raise; the count, the directory and the
    outputs are checked before any document is read, and a failure leaves what was there.
    """
    paths = _check_outputs(out_dir, count, overwrite)
    whole = Path(out_dir) / f".whole-{os.getpid()}.sqlite3"
    whole.unlink(missing_ok=True)  # a killed run's, under this pid: nobody else's
    try:
        build(docs, whole, settings, progress=progress, on_start=on_start, chunks=chunks, exclude=exclude)
        with Engine.open(whole, blocklist or BlockList.empty()) as engine:
            if not allow_missing_blocked:
                engine.check_blocklist_complete()
            return _split(engine, paths, engine.blocklist, None)
    finally:
        whole.unlink(missing_ok=True)


def _split(engine: Engine, paths: list[Path], bl: BlockList,
           progress: Callable[[int], None] | None) -> list[ShardReport]:
    meta = engine.meta
    if "shard" in meta:
        raise InvalidInputError(f"{engine.path} is already a shard (split the whole index instead)")
    chunk_doc = engine.chunk_documents
    if len(chunk_doc) > 2 and not bool(np.all(chunk_doc[2:] >= chunk_doc[1:-1])):
        raise InvalidInputError(f"{engine.path}: its chunks are not grouped by document, so no range "
                                "of documents is a range of chunk rowids (FTS5's tie-break): cannot split")
    count = len(paths)
    n_docs, n_chunks = int(meta["documents"]), int(meta["chunks"])
    ranges = _partition(chunk_doc, n_docs, count)
    first_chunk = np.searchsorted(chunk_doc[1:], [lo for lo, _ in ranges], side="left") + 1
    chunk_ranges = [(int(first_chunk[i]), int(first_chunk[i + 1]) - 1 if i + 1 < count else n_chunks)
                     for i in range(count)]
    chunk_len = engine.scorer._chunk_len
    ordinal = engine._chunk_ordinal
    k1, b = float(meta["bm25"]["k1"]), float(meta["bm25"]["b"])
    avgdl = float(int(meta["tokens"])) / float(n_chunks) if n_chunks else 1.0
    shards: list[_Shard] = []
    try:
        for i, path in enumerate(paths):
            shards.append(_Shard(path, engine.path, i, ranges[i], chunk_ranges[i],
                                 sql_string(meta["tokenizer"]), engine.schema_version))
            shards[-1].copy_rows()
        hidden = engine.hidden_terms()
        for s in shards:
            s.conn.execute("CREATE TEMP TABLE global_terms(term TEXT PRIMARY KEY, df INTEGER, "
                           "hidden INTEGER) WITHOUT ROWID")
            s.conn.executemany("INSERT INTO temp.global_terms VALUES(?,?,?)",
                               ((t, df, int(t in hidden)) for t, df in engine._conn.execute(
                                   "SELECT term, df FROM terms")))
        _split_postings(engine, shards, (k1, b, avgdl), chunk_len, progress)
        set_id = _set_identity(str(meta["content_identity"]), count, bl)
        reports = []
        for s, (lo, hi) in zip(shards, chunk_ranges, strict=True):
            local = {"chunk_doc": np.concatenate([chunk_doc[:1], chunk_doc[lo:hi + 1] - (s.first_doc - 1)]),
                     "chunk_len": np.concatenate([chunk_len[:1], chunk_len[lo:hi + 1]]),
                     "chunk_ordinal": np.concatenate([ordinal[:1], ordinal[lo:hi + 1]])}
            reports.append(s.finish(_shard_meta(meta, s, local, set_id, count, bl, engine), local))
        # every file complete before any is renamed into place: a failed split leaves the
        # files that were there (another split's, which a broker would refuse to mix) intact
        for s in shards:
            os.replace(s.tmp, s.path)
        return reports
    except BaseException:
        for s in shards:
            s.abandon()
        raise


def _split_postings(engine: Engine, shards: list[_Shard], bm25: tuple[float, float, float],
                    chunk_len: npt.NDArray[np.int32], progress: Callable[[int], None] | None) -> None:
    """Every term's postings cut at the shards' chunk ranges: impacts copied as they are (a
    version-5 shard's coded again, each part with a table of its own distinct impacts: the same
    float64s), rowids renumbered, block maxima made again for the shorter lists; a clamped
    term's tf array sliced. A shard that holds none of a term's chunks gets no row for it."""
    k1, b, avgdl = bm25
    starts = np.array([s.first_chunk for s in shards], dtype=np.int64)
    conn = engine._conn
    done = 0
    codes = "width, n_table" if engine._coded else f"{RAW_WIDTH}, 0"
    for term, tid, df, dense, width, n_table in conn.execute(
            f"SELECT term, id, df, dense, {codes} FROM terms ORDER BY id"):
        table, column = ("dense_tfs", "tfs") if dense else ("postings", "data")
        row = conn.execute(f"SELECT {column} FROM {table} WHERE id = ?", (tid,)).fetchone()
        if row is None:
            raise BuildError(f"{engine.path}: term id {tid} has no {table} row")
        blob = bytes(row[0])
        if dense:
            tfs = np.frombuffer(blob, "<u2")
            for s in shards:
                local = np.concatenate([tfs[:1], tfs[s.first_chunk:s.last_chunk + 1]]).astype("<u2")
                nz = np.flatnonzero(local)
                if len(nz):
                    lens = np.concatenate([chunk_len[:1], chunk_len[s.first_chunk:s.last_chunk + 1]])
                    top = term_impacts(IDF_FLOOR, local[nz].astype(np.float64),
                                       chunk_norms(lens[nz], k1, b, avgdl), k1 + 1.0)
                    s.add_term(term, True, local.tobytes(), len(nz), float(top.max()))
        else:
            check_layout(term, df, width, n_table)
            rows, impacts, _ = decode(blob, df, width, n_table, len(blob))
            cuts = [*np.searchsorted(rows, starts, side="left").tolist(), df]
            for s, a, z in zip(shards, cuts[:-1], cuts[1:], strict=True):
                if z > a:
                    part = impacts[a:z]
                    local_rows = rows[a:z] - (s.first_chunk - 1)
                    if s.coded:
                        data, w, nt = list_blob(part, local_rows, BLOCK_POSTINGS)
                        s.add_term(term, False, data, z - a, float(part.max()), w, nt)
                        continue
                    parts = [part.tobytes(), local_rows.astype("<u4").tobytes()]
                    if block_count(z - a):
                        parts.append(np.maximum.reduceat(part, np.arange(0, z - a, BLOCK_POSTINGS)).tobytes())
                    s.add_term(term, False, b"".join(parts), z - a, float(part.max()))
        done += 1
        if progress is not None and done % 10_000 == 0:
            progress(10_000)
    if progress is not None and done % 10_000:
        progress(done % 10_000)


def _shard_meta(meta: dict[str, Any], s: _Shard, local: dict[str, npt.NDArray[Any]], set_id: str,
                count: int, bl: BlockList, engine: Engine) -> dict[str, Any]:
    n_docs = s.last_doc - s.first_doc + 1
    empty = int(s.conn.execute("SELECT count(*) FROM documents WHERE n_chunks = 0").get)
    corpus = str(meta["content_identity"])
    identity = xxhash.xxh3_128(f"{set_id}\0{s.index}".encode()).hexdigest()
    return {**meta, "schema_version": s.version, "documents": n_docs,
            "indexed_documents": n_docs - empty,
            "empty_documents": empty, "chunks": len(local["chunk_len"]) - 1,
            "tokens": int(local["chunk_len"][1:].sum(dtype=np.int64)), "vocabulary": len(s.terms),
            "postings": s.postings, "dense_terms": s.dense, "content_identity": identity,
            "shard": {"format": SHARD_FORMAT, "set": set_id, "index": s.index, "count": count,
                      "corpus": corpus,
                      "documents": int(meta["documents"]), "chunks": int(meta["chunks"]),
                      "tokens": int(meta["tokens"]), "vocabulary": int(meta["vocabulary"]),
                      "first_document": s.first_doc, "first_chunk": s.first_chunk,
                      "blocklist": {"sha256": bl.sha256, "count": len(bl),
                                    "matched": engine.blocked_matched}}}


__all__ = ["SHARD_FORMAT", "ShardReport", "build_shards", "shard_paths", "split_index"]
