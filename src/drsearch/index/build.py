"""Build a frozen index file from documents.

``build(docs, path)`` writes one SQLite file in one transaction: documents (sorted by
docid, so the same input gives the same rowids and the same bytes), 800/700-word chunks,
the FTS5 index of record (rebuilt then optimised), per-term posting lists derived from
FTS5's own tokenizer for the fast scorer, and a ``meta`` table. ``build(docs, path,
chunks=...)`` takes the chunks as given instead (pre-chunked input, e.g. another tool's
FTS5 table imported by ``drsearch import``): their text and order are kept exactly, so
the index ranks as that table's own ``bm25()`` does. The file is written under
a temporary name and renamed into place only when complete, so an interrupted build never
leaves a half-written index where a good one was expected.
"""

from __future__ import annotations

import json
import os
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import apsw
import numpy as np
import numpy.typing as npt
import xxhash

from .. import __version__
from .blocklist import BlockList
from .chunking import chunk_spans
from .doctable import DocTable
from .errors import BuildError, InvalidDocumentError, InvalidInputError
from .fts5spec import sql_string
from .models import BuildSettings
from .schema import APPLICATION_ID, DDL, DOC_TEXT_CODEC, FTS_DDL, SCHEMA_VERSION
from .scoring import IDF_FLOOR, bm25_idf, chunk_norms, term_impacts
from .text import Tokenizer, normalize_text
from .urls import canonicalize_url

RESERVED_FIELDS = ("docid", "url", "title", "text", "aliases")
_PARTITIONS = 16
_PAIR = np.dtype([("term", "<u4"), ("chunk", "<u4"), ("tf", "<u2")])


@dataclass(frozen=True, slots=True)
class BuildReport:
    """What a build wrote (also stored in the file's ``meta``)."""

    path: Path
    documents: int
    indexed_documents: int
    empty_documents: int
    chunks: int
    tokens: int
    vocabulary: int
    url_collisions: int
    content_identity: str
    excluded_documents: int = 0  # documents left out by ``exclude``

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values (what ``drsearch build --json`` prints)."""
        return {"path": str(self.path), "documents": self.documents,
                "indexed_documents": self.indexed_documents, "empty_documents": self.empty_documents,
                "chunks": self.chunks, "tokens": self.tokens, "vocabulary": self.vocabulary,
                "url_collisions": self.url_collisions, "content_identity": self.content_identity,
                "excluded_documents": self.excluded_documents}


class _Vocab(dict[str, int]):
    """term → id, assigning the next id on first sight (C-speed lookups via map())."""

    def __missing__(self, term: str) -> int:
        tid = self[term] = len(self)
        return tid


def validate_document(raw: object, where: str) -> dict[str, Any]:
    """Check one input document; returns a normalised dict. Raises InvalidDocumentError."""
    if not isinstance(raw, Mapping):
        raise InvalidDocumentError(f"{where}: a document must be a JSON object")
    docid = raw.get("docid")
    if not isinstance(docid, str) or not docid.strip():
        raise InvalidDocumentError(f"{where}: 'docid' must be a non-empty string")
    if docid != docid.strip() or any(c in docid for c in "\r\n\t\x00"):
        raise InvalidDocumentError(f"{where}: docid {docid!r} has whitespace or control characters")
    for key in ("url", "text"):
        if not isinstance(raw.get(key), str):
            raise InvalidDocumentError(f"{where}: '{key}' must be a string (docid {docid!r})")
    title = raw.get("title", "")
    if not isinstance(title, str):
        raise InvalidDocumentError(f"{where}: 'title' must be a string (docid {docid!r})")
    aliases = raw.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise InvalidDocumentError(f"{where}: 'aliases' must be a list of strings")
    metadata = {k: v for k, v in raw.items() if k not in RESERVED_FIELDS}
    return {
        "docid": docid,
        "url": raw["url"],
        "title": normalize_text(title),
        "text": normalize_text(raw["text"]),
        "aliases": aliases,
        "metadata": metadata,
    }


@dataclass(frozen=True, slots=True)
class SourceChunk:
    """One chunk of pre-chunked input: its document's docid and its exact text.

    ``where`` (e.g. ``table rowid 17``) names the chunk in build errors.
    """

    docid: str
    text: str
    where: str = ""


class SourcedDoc(dict[str, Any]):
    """A document that remembers where it was read from: ``build`` names ``where`` (e.g.
    ``file:line`` or ``table rowid``) in its errors about the document."""

    def __init__(self, data: dict[str, Any], where: str) -> None:
        super().__init__(data)
        self.where = where


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield documents from a JSONL file; errors name the line. Blank lines are skipped."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed in finally
    except OSError as e:
        raise InvalidDocumentError(f"cannot read {path}: {e.strerror}") from e
    try:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise InvalidDocumentError(f"{path}:{n}: not valid JSON ({e})") from e
            if not isinstance(obj, dict):
                raise InvalidDocumentError(f"{path}:{n}: a document must be a JSON object")
            yield SourcedDoc(obj, where=f"{path}:{n}")
    finally:
        fh.close()


class _PairSpool:
    """(term, chunk, tf) triples spooled to disk, partitioned by term id."""

    def __init__(self, tmpdir: Path) -> None:
        self.files: list[BinaryIO] = [open(tmpdir / f"p{i}.bin", "w+b") for i in range(_PARTITIONS)]  # noqa: SIM115

    def add_batch(self, term_ids: np.ndarray, chunk_ids: np.ndarray) -> None:
        key = (term_ids.astype(np.uint64) << np.uint64(32)) | chunk_ids.astype(np.uint64)
        uniq, counts = np.unique(key, return_counts=True)
        pairs = np.empty(len(uniq), dtype=_PAIR)
        pairs["term"] = uniq >> np.uint64(32)
        pairs["chunk"] = uniq & np.uint64(0xFFFFFFFF)
        pairs["tf"] = np.minimum(counts, 65535)
        part = pairs["term"] % _PARTITIONS
        for p in range(_PARTITIONS):
            self.files[p].write(pairs[part == p].tobytes())

    def partitions(self) -> Iterator[np.ndarray]:
        for fh in self.files:
            fh.flush()
            fh.seek(0)
            yield np.frombuffer(fh.read(), dtype=_PAIR)
            fh.close()


def _stage(conn: apsw.Connection, docs: Iterable[object], settings: BuildSettings,
           count_chunks: bool, exclude: BlockList | None = None) -> tuple[int, int, int]:
    """Validate and stage documents in a temp table (sorted later by docid), leaving out
    those whose docid ``exclude`` lists.

    Returns (documents staged, documents left out, chunks): the chunks the staged documents
    will make are counted only when ``count_chunks`` (an extra word split per document, paid
    only by callers that show a total).
    """
    conn.execute(
        "CREATE TEMP TABLE stage(docid TEXT PRIMARY KEY, url TEXT, title TEXT, text TEXT,"
        " aliases TEXT, metadata TEXT) WITHOUT ROWID"
    )
    n = excluded = chunks = 0
    for i, raw in enumerate(docs, 1):
        where = getattr(raw, "where", f"document {i}")
        d = validate_document(raw, where)
        if exclude is not None and d["docid"] in exclude:
            excluded += 1
            continue
        n += 1
        if count_chunks:
            chunks += len(chunk_spans(len(d["text"].split()), settings.chunk_words, settings.chunk_stride))
        try:
            conn.execute(
                "INSERT INTO stage VALUES(?,?,?,?,?,?)",
                (d["docid"], d["url"], d["title"], d["text"], json.dumps(d["aliases"]),
                 json.dumps(d["metadata"], sort_keys=True, ensure_ascii=False)),
            )
        except apsw.ConstraintError:
            raise InvalidDocumentError(f"{where}: duplicate docid {d['docid']!r}") from None
    return n, excluded, chunks


def _stage_chunks(conn: apsw.Connection, chunks: Iterable[SourceChunk],
                  exclude: BlockList | None = None) -> int:
    """Validate and stage pre-chunked input in its given order (``seq``: the chunk rowid),
    leaving out the chunks of documents ``exclude`` lists."""
    conn.execute("CREATE TEMP TABLE stage_chunks(seq INTEGER PRIMARY KEY, docid TEXT NOT NULL, "
                 "text TEXT NOT NULL, at TEXT NOT NULL)")
    n = 0
    for n, chunk in enumerate(chunks, 1):
        where = getattr(chunk, "where", "") or f"chunk {n}"
        if not isinstance(chunk, SourceChunk):
            raise InvalidDocumentError(f"{where}: a chunk must be a SourceChunk, got {type(chunk).__name__}")
        if not isinstance(chunk.docid, str) or not chunk.docid:
            raise InvalidDocumentError(f"{where}: a chunk's docid must be a non-empty string")
        if not isinstance(chunk.text, str):
            raise InvalidDocumentError(f"{where}: a chunk's text must be a string (docid {chunk.docid!r})")
        try:
            chunk.text.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidDocumentError(
                f"{where}: chunk text is not valid Unicode (docid {chunk.docid!r})") from None
        if exclude is not None and chunk.docid in exclude:
            continue
        conn.execute("INSERT INTO stage_chunks VALUES(?,?,?,?)", (n, chunk.docid, chunk.text, where))
    orphan = conn.execute("SELECT at, docid FROM temp.stage_chunks WHERE docid NOT IN "
                          "(SELECT docid FROM temp.stage) ORDER BY seq LIMIT 1").fetchone()
    if orphan is not None:
        raise InvalidDocumentError(f"{orphan[0]}: chunk of docid {orphan[1]!r}, which no document has")
    return n


def build(
    docs: Iterable[object],
    path: str | os.PathLike[str],
    settings: BuildSettings | None = None,
    *,
    overwrite: bool = False,
    progress: Callable[[int], None] | None = None,
    provenance: Mapping[str, Any] | None = None,
    on_start: Callable[[int], None] | None = None,
    chunks: Iterable[SourceChunk] | None = None,
    exclude: BlockList | None = None,
) -> BuildReport:
    """Build a frozen index at ``path`` from documents (mappings with docid/url/title/text).

    Extra keys become the document's metadata; ``aliases`` (a list of URLs) adds alias URLs
    that ``open(url=...)`` resolves. Raises InvalidDocumentError (bad or duplicate docid,
    wrong field types; nothing is written) and BuildError (output exists and ``overwrite``
    is false, or the file cannot be written), InvalidInputError (``provenance`` is not
    JSON, or the output's directory does not exist: raised before any document is read).
    ``progress`` is called with chunk counts; ``on_start(total)``, once all documents are
    read and validated, with the number of chunks they make, so a bar can show a total.
    ``provenance`` (a JSON object: where the documents came from, e.g. ``drsearch import``'s
    source file and hash) is stored as ``meta`` key ``provenance``; without it no such key
    is written and the file is byte-identical to one built before the option existed. It
    does not enter the content identity, which depends on the documents only.

    ``chunks`` (pre-chunked input): the index's chunks, exactly as given, in the order
    given, instead of 800/700-word windows of the documents. Chunk rowids follow that order
    (it is FTS5's tie-break, so ties rank as in the table the chunks came from); a
    document's chunks get ordinals 0, 1, ... in that order; documents are laid out in the
    order of their first chunk (documents without one follow, by docid). Chunk text is
    kept byte for byte (not NFC-normalised, not re-split; empty chunks are kept: they count
    in BM25's N). Every chunk must name a document's docid (InvalidDocumentError
    otherwise). ``meta`` then records ``chunking: "pre-chunked"`` with null
    ``chunk_words``/``chunk_stride``/``chunk_overlap``, and the content identity covers
    the chunks too.

    ``exclude`` (a blocklist): documents it lists are left out entirely (not in the text,
    the postings or the BM25 statistics: a server of the file cannot leak them through
    scores); ``meta`` key ``excluded_docids`` records the list's hash, size and how many
    documents were left out. Without it no such key is written.
    """
    settings = settings or BuildSettings()
    out = Path(path)
    if provenance is not None:
        try:
            if not isinstance(provenance, Mapping):
                raise TypeError(f"got {type(provenance).__name__}")
            json.dumps(provenance, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise InvalidInputError(f"provenance must be a JSON object: {e}") from e
    if out.exists() and not overwrite:
        raise BuildError(f"{out} already exists (use --force / overwrite=True to replace it)")
    if out.is_dir():
        raise BuildError(f"{out} is a directory, not an index file")
    if not out.parent.is_dir():  # bad input, like a missing --database: exit 2, nothing read
        raise InvalidInputError(f"directory {out.parent} does not exist (create it first)")
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        with tempfile.TemporaryDirectory(prefix="drsearch-build-", dir=out.parent) as td:
            report = _build_into(docs, tmp, Path(td), settings, progress, provenance, on_start, chunks,
                                 exclude)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return BuildReport(out, *report)


def _build_into(
    docs: Iterable[object],
    tmp: Path,
    tmpdir: Path,
    settings: BuildSettings,
    progress: Callable[[int], None] | None,
    provenance: Mapping[str, Any] | None = None,
    on_start: Callable[[int], None] | None = None,
    chunks: Iterable[SourceChunk] | None = None,
    exclude: BlockList | None = None,
) -> tuple[Any, ...]:
    tmp.unlink(missing_ok=True)
    conn = apsw.Connection(str(tmp))
    try:
        for pragma in ("journal_mode=OFF", "synchronous=OFF", "locking_mode=EXCLUSIVE",
                       "cache_size=-262144", "temp_store=FILE", "page_size=4096"):
            conn.execute(f"PRAGMA {pragma}")
        conn.execute("BEGIN")
        conn.execute(DDL)
        conn.execute(FTS_DDL.format(tokenize=sql_string(settings.fts5_tokenize)))
        prechunked = chunks is not None
        n_docs, n_excluded, n_chunks = _stage(conn, docs, settings, on_start is not None and not prechunked,
                                              exclude)
        if chunks is not None:
            n_chunks = _stage_chunks(conn, chunks, exclude)
        if on_start is not None:
            on_start(n_chunks)
        tokenizer = Tokenizer(conn, settings.fts5_tokenize)
        stats = _write_documents(conn, tokenizer, tmpdir, settings, progress, prechunked)
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('rebuild')")
        conn.execute("INSERT INTO chunks_fts(chunks_fts) VALUES('optimize')")
        meta = _meta(settings, n_docs, stats, prechunked)
        if provenance is not None:
            meta["provenance"] = dict(provenance)
        if exclude is not None:
            meta["excluded_docids"] = {"sha256": exclude.sha256, "listed": len(exclude),
                                       "excluded": n_excluded, "source": Path(exclude.source).name}
        conn.executemany(
            "INSERT INTO meta VALUES(?,?)",
            [(k, json.dumps(v, sort_keys=True)) for k, v in sorted(meta.items())],
        )
        conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        conn.execute("DROP TABLE temp.stage")
        if prechunked:
            conn.execute("DROP TABLE temp.stage_chunks")
        conn.execute("COMMIT")
    except apsw.Error as e:
        raise BuildError(f"building {tmp.name}: {e}") from e
    finally:
        conn.close()
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    return (n_docs, stats["indexed_documents"], stats["empty_documents"], stats["chunks"],
            stats["tokens"], stats["vocabulary"], stats["url_collisions"], stats["content_identity"],
            n_excluded)


def _write_documents(
    conn: apsw.Connection,
    tokenizer: Tokenizer,
    tmpdir: Path,
    settings: BuildSettings,
    progress: Callable[[int], None] | None,
    prechunked: bool = False,
) -> dict[str, Any]:
    vocab = _Vocab()
    spool = _PairSpool(tmpdir)
    identity = xxhash.xxh3_128()
    chunk_doc: list[int] = [0]
    chunk_len: list[int] = [0]
    chunk_ordinal: list[int] = [0]
    batch_terms: list[list[int]] = []
    batch_first = 1
    n_chunks = indexed = empty = collisions = tokens = 0
    seen_urls: set[str] = set()

    def flush() -> None:
        nonlocal batch_first, batch_terms
        if not batch_terms:
            return
        lens = np.fromiter((len(t) for t in batch_terms), dtype=np.int64, count=len(batch_terms))
        ids = np.fromiter((i for t in batch_terms for i in t), dtype=np.uint32, count=int(lens.sum()))
        chunk_ids = np.repeat(np.arange(batch_first, batch_first + len(batch_terms), dtype=np.uint32), lens)
        spool.add_batch(ids, chunk_ids)
        if progress:
            progress(len(batch_terms))
        batch_first += len(batch_terms)
        batch_terms = []

    def add_chunk(doc_row: int, ordinal: int, start: int, end: int, chunk_text: str) -> None:
        nonlocal n_chunks, tokens
        n_chunks += 1
        terms = list(map(vocab.__getitem__, tokenizer.terms(chunk_text)))
        tokens += len(terms)
        chunk_doc.append(doc_row)
        chunk_len.append(len(terms))
        chunk_ordinal.append(ordinal)
        batch_terms.append(terms)
        conn.execute("INSERT INTO chunks VALUES(?,?,?,?,?,?)",
                     (n_chunks, doc_row, ordinal, start, end, chunk_text))
        if len(batch_terms) >= settings.batch_chunks:
            flush()

    if prechunked:  # documents in the order of their first chunk: chunk rowids stay in input order
        rows = conn.execute(
            "SELECT s.docid, s.url, s.title, s.text, s.aliases, s.metadata FROM temp.stage AS s "
            "LEFT JOIN (SELECT docid, min(seq) AS first FROM temp.stage_chunks GROUP BY docid) AS f "
            "ON f.docid = s.docid ORDER BY f.first IS NULL, f.first, s.docid")
        given: dict[str, int] = {str(d): int(n) for d, n in conn.execute(
            "SELECT docid, count(*) FROM temp.stage_chunks GROUP BY docid")}
    else:
        rows = conn.execute(
            "SELECT docid, url, title, text, aliases, metadata FROM temp.stage ORDER BY docid"
        )
    row_of: dict[str, int] = {}
    doc_rows: list[tuple[Any, ...]] = []
    doc_fields: list[tuple[int, str, str, str]] = []
    for doc_row, (docid, url, title, text, aliases, metadata) in enumerate(rows, 1):
        for part in (docid, url, title, text, metadata):
            identity.update(part.encode("utf-8"))
            identity.update(b"\x00")
        words = text.split()
        if prechunked:
            row_of[docid] = doc_row
            n_doc_chunks = given.get(docid, 0)
        else:
            spans = chunk_spans(len(words), settings.chunk_words, settings.chunk_stride)
            for span in spans:
                add_chunk(doc_row, span.ordinal, span.start, span.end, " ".join(words[span.start : span.end]))
            n_doc_chunks = len(spans)
        if n_doc_chunks:
            indexed += 1
        else:
            empty += 1
        canonical = canonicalize_url(url)
        doc_rows.append((doc_row, docid, url, canonical, title, metadata, len(words), n_doc_chunks))
        doc_fields.append((doc_row, docid, url, title))
        conn.execute("INSERT INTO doc_texts VALUES(?,?)", (doc_row, zlib.compress(text.encode("utf-8"), 6)))
        own = dict.fromkeys(canonicalize_url(u) for u in [url, *json.loads(aliases)])
        for c in own:
            if c in seen_urls:  # an earlier docid holds this URL: first docid wins
                collisions += 1
                continue
            seen_urls.add(c)
            conn.execute("INSERT INTO urls VALUES(?,?)", (c, doc_row))
        if len(doc_rows) >= 256:
            conn.executemany("INSERT INTO documents VALUES(?,?,?,?,?,?,?,?)", doc_rows)
            doc_rows = []
    conn.executemany("INSERT INTO documents VALUES(?,?,?,?,?,?,?,?)", doc_rows)
    if prechunked:  # word offsets into the document are unknown for given chunks: -1
        identity.update(b"\x01chunks\x00")
        ordinals: dict[int, int] = {}
        for docid, chunk_text in conn.execute("SELECT docid, text FROM temp.stage_chunks ORDER BY seq"):
            for part in (docid, chunk_text):
                identity.update(part.encode("utf-8"))
                identity.update(b"\x00")
            doc_row = row_of[docid]
            ordinal = ordinals[doc_row] = ordinals.get(doc_row, -1) + 1
            add_chunk(doc_row, ordinal, -1, -1, chunk_text)
    flush()
    lengths = np.asarray(chunk_len, dtype="<i4")
    counts = _write_postings(conn, spool, vocab, lengths, settings)
    field_offsets, field_data = DocTable.from_rows(
        doc_fields, doc_fields[-1][0] if doc_fields else 0).arrays()
    conn.executemany(
        "INSERT INTO arrays VALUES(?,?,?)",
        [
            ("chunk_doc", "<i4", np.asarray(chunk_doc, dtype="<i4").tobytes()),
            ("chunk_len", "<i4", lengths.tobytes()),
            ("chunk_ordinal", "<i4", np.asarray(chunk_ordinal, dtype="<i4").tobytes()),
            ("doc_field_offsets", "<i8", field_offsets),
            ("doc_fields", "u1", field_data),
        ],
    )
    return {
        "indexed_documents": indexed,
        "empty_documents": empty,
        "chunks": n_chunks,
        "tokens": tokens,
        "vocabulary": len(vocab),
        **counts,
        "url_collisions": collisions,
        "content_identity": identity.hexdigest(),
    }


def _write_postings(conn: apsw.Connection, spool: _PairSpool, vocab: _Vocab,
                    chunk_len: npt.NDArray[np.int32], settings: BuildSettings) -> dict[str, int]:
    """Write each term's postings: sparse impacts, or a dense tf array for clamped terms."""
    terms_by_id = list(vocab)
    n_rows = len(chunk_len) - 1
    norm = chunk_norms(chunk_len, settings.k1, settings.b)
    k1p1 = settings.k1 + 1.0
    counts = {"postings": 0, "dense_terms": 0}
    for pairs in spool.partitions():
        if not len(pairs):
            continue
        pairs = pairs[np.argsort(pairs["term"], kind="stable")]
        cut = np.flatnonzero(np.diff(pairs["term"])) + 1
        starts = np.concatenate(([0], cut))
        ends = np.concatenate((cut, [len(pairs)]))
        term_ids = pairs["term"][starts].tolist()
        # IDF per term with libm's log (as FTS5 computes it), then every impact at once.
        idfs = np.array([bm25_idf(n_rows, int(e - s)) for s, e in zip(starts, ends, strict=True)])
        chunks = pairs["chunk"].astype("<u4")
        tf = pairs["tf"].astype(np.float64)
        impacts = term_impacts(np.repeat(idfs, ends - starts), tf, norm[chunks], k1p1).astype("<f8")
        max_impacts = np.maximum.reduceat(impacts, starts).tolist()
        rows = []
        for tid, s, e, idf, top in zip(term_ids, starts.tolist(), ends.tolist(), idfs.tolist(), max_impacts,
                                       strict=True):
            dense = idf <= IDF_FLOOR
            rows.append((terms_by_id[tid], tid, e - s, int(dense), top))
            if dense:
                tfs = np.zeros(n_rows + 1, dtype="<u2")
                tfs[chunks[s:e]] = pairs["tf"][s:e]
                conn.execute("INSERT INTO dense_tfs VALUES(?,?)", (tid, tfs.tobytes()))
                counts["dense_terms"] += 1
            else:
                conn.execute("INSERT INTO postings VALUES(?,?)",
                             (tid, impacts[s:e].tobytes() + chunks[s:e].tobytes()))
        conn.executemany("INSERT INTO terms VALUES(?,?,?,?,?)", rows)
        counts["postings"] += len(pairs)
    return counts


def _meta(settings: BuildSettings, n_docs: int, stats: dict[str, Any],
          prechunked: bool = False) -> dict[str, Any]:
    if prechunked:  # the chunks came as given: no window rule to record
        return {**_meta(settings, n_docs, stats), "chunking": "pre-chunked", "chunk_words": None,
                "chunk_stride": None, "chunk_overlap": None}
    return {
        "format": "drsearch-index",
        "schema_version": SCHEMA_VERSION,
        "application_id": APPLICATION_ID,
        "frozen": True,
        "tokenizer": settings.fts5_tokenize,
        "chunk_words": settings.chunk_words,
        "chunk_stride": settings.chunk_stride,
        "chunk_overlap": settings.chunk_words - settings.chunk_stride,
        "bm25": {"k1": settings.k1, "b": settings.b, "idf_floor": 1e-6},
        "documents": n_docs,
        "doc_text_codec": DOC_TEXT_CODEC,
        "build_tool": f"drsearch {__version__}",
        "sqlite_version": apsw.sqlite_lib_version(),
        "apsw_version": apsw.apsw_version(),
        **stats,
    }


__all__ = ["BuildReport", "SourceChunk", "build", "read_jsonl", "validate_document"]
