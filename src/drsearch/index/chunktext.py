"""Chunk text stored once (schema version 4): each chunk as a byte span of its document's text.

A chunk cut from a document (800-word windows, ``chunking.py``) is ``" ".join(words[s:e])``
of the document's words, and the document's text is already in the file (``doc_texts``). So a
version-4 file stores no chunk text for such a chunk: ``chunks`` holds the UTF-8 byte offsets
``[start_byte, end_byte)`` of its first word's start and its last word's end in the document's
text, and the text is that slice with every run of whitespace made one space
(:func:`chunk_text`), the very string the build indexed. At DR-256 scale that drops 1.2 GB of
uncompressed chunk text beside the 233 MB of compressed document text it repeated.

A version-4 document text is written in drsearch's LZ block codec (drlz, :mod:`.lzcodec`) with a
block starting where each chunk starts (:func:`pack_text`): no block refers to bytes before its
start, and ``chunks.zstart`` is the offset of the chunk's block in the BLOB, so a chunk is cut by
decoding its own bytes only, never its document from the start. drlz decodes about ten times
faster than zlib inflates, which a search's complete hits need (docs/ENGINE.md). Version 2's
document texts are zlib streams; a BLOB says which it is (:func:`unpack_text` reads both). Files
built by an earlier version 4 (zlib with a full flush at each chunk start, raw deflate from
``zstart``) are read too (:func:`chunk_text`).

A pre-chunked build's chunks are not cut from the document text: they keep their own
``chunks.text`` (``start_byte``, ``end_byte`` and ``zstart`` -1).

One view, ``chunk_texts(id, text)``, gives every chunk's text (FTS5's external content, and
what the engine reads without the C kernel); it calls the SQL function :data:`SQL_FUNCTION`,
which :func:`register` installs on a connection. A connection without it (the plain
``sqlite3`` shell) still ranks with FTS5's ``bm25()``, which reads FTS5's own tables only,
but cannot read the view (``no such function``).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from functools import cache
from typing import Any

import apsw

from . import lzcodec

SQL_FUNCTION = "drsearch_chunk_text"
VIEW = "chunk_texts"


# zlib's header (no preset dictionary): the raw deflate stream starts after it
ZLIB_HEADER_BYTES = 2


def pack_text(text: str, starts: Sequence[int] = (), lz: bool = False) -> tuple[bytes, list[int]]:
    """``text`` as ``doc_texts`` stores it, UTF-8 compressed, and the BLOB offset where decoding
    starts at each UTF-8 byte offset of ``starts`` (ascending: :func:`chunk_text`'s ``zstart``).
    ``lz`` (version 4): drlz with a block at each start (:func:`lzcodec.pack`). Else zlib level 6
    (version 2), with a full flush at each start; without ``starts``, ``zlib.compress(text,
    6)``'s bytes."""
    raw = text.encode("utf-8")
    if lz:
        return lzcodec.pack(raw, starts)
    if not starts:
        return zlib.compress(raw, 6), []
    c = zlib.compressobj(6)
    out: list[bytes] = []
    size, at, zstarts = 0, 0, []
    for start in starts:
        if start > at:  # (a flush before any byte would add an empty block)
            for part in (c.compress(raw[at:start]), c.flush(zlib.Z_FULL_FLUSH)):
                out.append(part)
                size += len(part)
            at = start
        zstarts.append(size if start else ZLIB_HEADER_BYTES)
    out += [c.compress(raw[at:]), c.flush()]
    return b"".join(out), zstarts


def unpack_text(packed: bytes) -> str:
    """The document text of a ``doc_texts`` BLOB (drlz or zlib: the BLOB's first byte says).
    Raises ValueError (zlib.error is one) for a BLOB that is neither, or not UTF-8."""
    raw = lzcodec.unpack(packed) if lzcodec.is_lz(packed) else zlib.decompress(packed)
    return raw.decode("utf-8")


def chunk_text(packed: bytes, zstart: int, start: int, end: int) -> str:
    """The text of the chunk at UTF-8 bytes ``[start, end)`` of the document text ``packed``
    (:func:`pack_text`'s: drlz whose block at ``zstart`` starts at byte ``start``, or raw deflate
    restarting there): the slice's words joined by single spaces (``str.split()``'s words). Only
    ``end - start`` bytes are decoded. Raises ValueError for a span outside the text, bytes
    that are not drlz or deflate data, or a slice that is not UTF-8 (a damaged file)."""
    if not 0 <= start <= end or not 0 <= zstart <= len(packed):
        raise ValueError(f"chunk span [{start}, {end}) at {zstart} is not a span")
    want = end - start
    if lzcodec.is_lz(packed):
        raw = lzcodec.span(packed, zstart, want)
        return " ".join(raw.decode("utf-8").split())
    try:
        raw = zlib.decompressobj(-15).decompress(memoryview(packed)[zstart:], want) if want else b""
    except zlib.error as e:
        raise ValueError(f"document text is not zlib data ({e})") from None
    if len(raw) < want:
        raise ValueError(f"chunk span [{start}, {end}) ends past its document's text")
    return " ".join(raw.decode("utf-8").split())


def _sql_chunk_text(*args: Any) -> str:
    packed, zstart, start, end = args
    if not isinstance(packed, bytes) or not all(isinstance(v, int) for v in (zstart, start, end)):
        raise ValueError("drsearch_chunk_text(document text BLOB, zstart, start byte, end byte)")
    return chunk_text(packed, zstart, start, end)


def register(conn: apsw.Connection) -> None:
    """Install :data:`SQL_FUNCTION` on ``conn`` (needed to read the ``chunk_texts`` view, and
    so FTS5's content, of a version-4 file). Deterministic: SQLite may factor it."""
    conn.create_scalar_function(SQL_FUNCTION, _sql_chunk_text, 4, deterministic=True)


@cache
def _words(n: int) -> re.Pattern[str]:
    # n words from a position: \s and \S are str.isspace()'s classes (Py_UNICODE_ISSPACE), as
    # str.split() uses; possessive, so the engine never backtracks.
    return re.compile(rf"(?:\s*+\S++){{{n}}}")


_SPACE = re.compile(r"\s*+")


def byte_spans(text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """For each word span ``(s, e)`` of ``text`` (``s < e``; spans ascending in both ends, as
    chunking makes them), the UTF-8 byte offsets of word ``s``'s start and word ``e - 1``'s
    end: ``chunk_text(zlib(text), *result[i])`` is ``" ".join(text.split()[s:e])``. Raises
    ValueError for a span not within the text's words."""
    marks = sorted({k for s, e in spans for k in (s, e)})
    after: dict[int, int] = {}  # words consumed -> the offset just past the last of them
    pos = done = 0
    for k in marks:
        if k > done:
            m = _words(k - done).match(text, pos)
            if m is None:
                raise ValueError(f"word span ends at word {k}, past the text's words")
            pos, done = m.end(), k
        after[k] = pos
    chars = [(_SPACE.match(text, after[s]).end(), after[e]) for s, e in spans]  # type: ignore[union-attr]
    if text.isascii():
        return chars
    out: list[tuple[int, int]] = []
    for a, b in chars:  # (a chunk's slice, encoded: the prefix once per chunk)
        start = len(text[:a].encode("utf-8"))
        out.append((start, start + len(text[a:b].encode("utf-8"))))
    return out


__all__ = ["SQL_FUNCTION", "VIEW", "ZLIB_HEADER_BYTES", "byte_spans", "chunk_text", "pack_text", "register",
           "unpack_text"]
