"""Chunk text stored once (schema version 4): each chunk as a byte span of its document's text.

A chunk cut from a document (800-word windows, ``chunking.py``) is ``" ".join(words[s:e])``
of the document's words, and the document's text is already in the file (``doc_texts``). So a
version-4 file stores no chunk text for such a chunk: ``chunks`` holds the UTF-8 byte offsets
``[start_byte, end_byte)`` of its first word's start and its last word's end in the document's
text, and the text is that slice with every run of whitespace made one space
(:func:`chunk_text`), the very string the build indexed. At DR-256 scale that drops 1.2 GB of
uncompressed chunk text beside the 233 MB of compressed document text it repeated.

A version-4 document text is stored joined (:func:`pack_joined`): its words joined by single
spaces, then the whitespace that was not one space (so the text comes back exactly), in
drsearch's LZ block codec (drlz, :mod:`.lzcodec`) with a block starting where each chunk starts.
The chunk's byte span is then one in the joined words, and the bytes decoded from its block
are its text as it is: a search's hit decodes and is done, with no whitespace to collapse. No
block refers to bytes before its start, and ``chunks.zstart`` is the offset of the chunk's block
in the BLOB, so a chunk is cut by decoding its own bytes only, never its document from the
start. drlz decodes about ten times faster than zlib inflates, which a search's complete hits
need (docs/ENGINE.md). Version 2's document texts are zlib streams; a BLOB's first byte says
which it is (:func:`unpack_text` reads every kind). Files built by earlier version-4 code (drlz
of the text as it is, :func:`pack_text` with ``lz``; zlib with a full flush at each chunk start,
raw deflate from ``zstart``) are read too: their spans are in the text as it is, and
:func:`chunk_text` collapses their whitespace.

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
from bisect import bisect_right
from collections.abc import Sequence
from functools import cache
from typing import Any

import apsw

from . import lzcodec
from . import native as kernel

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


# A run of whitespace that is not one ' ': two or more whitespace characters, or one other than
# ' '. \s is str.isspace()'s class (Py_UNICODE_ISSPACE), as str.split() splits on.
_ODD_GAP = re.compile(r"\s\s+|[^\S ]")


def _put_varint(out: bytearray, n: int) -> None:
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return


def _get_varint(data: bytes, at: int, end: int) -> tuple[int, int]:
    n = shift = 0
    while at < end and shift < 64:
        b = data[at]
        at += 1
        n |= (b & 0x7F) << shift
        if not b & 0x80:
            return n, at
        shift += 7
    raise ValueError("joined text: its whitespace record is damaged")


def pack_joined(text: str,
                spans: Sequence[tuple[int, int]] = ()) -> tuple[bytes, list[int], list[tuple[int, int]]]:
    """``text`` as a version-4 ``doc_texts`` BLOB: its words joined by single spaces (``J``,
    ``" ".join(text.split())`` in UTF-8) and then the whitespace that was not one space (``E``),
    in drlz (:data:`lzcodec.MAGIC_JOINED` first) with a block at each chunk start. ``spans``:
    each chunk's UTF-8 byte span in ``text`` (:func:`byte_spans`; ascending). Returns the BLOB,
    each span's ``zstart`` and each span in ``J``'s bytes, so that a chunk's text is the
    ``end - start`` bytes decoded from its ``zstart`` as they are (:func:`chunk_text`): no
    whitespace is left to collapse when a hit reads it. The kernel joins the text where it is
    built (``native.lz_join``), else :func:`join_reference` (the same bytes). Raises ValueError
    for a span that is not word boundaries of the text."""
    if kernel.available():
        data, out = kernel.lz_join(text.encode("utf-8"), spans)
    else:
        data, out = join_reference(text, spans)
    blob, zstarts = lzcodec.pack(data, [a for a, _ in out], lzcodec.MAGIC_JOINED)
    return blob, zstarts, out


def join_reference(text: str, spans: Sequence[tuple[int, int]] = ()) -> tuple[bytes, list[tuple[int, int]]]:
    """``native.lz_join`` in Python: ``J + E + len(E)`` (4 bytes, little-endian) and the spans in
    ``J``. ``E``: the leading whitespace (a varint length, its bytes), the trailing whitespace
    (the same), then, for each run between two words that is not one ' ', the distance in ``J``
    from the end of the run before it (or ``J``'s start) to the ' ' it replaces, its length
    (varints) and its bytes. Deterministic."""
    raw = text.encode("utf-8")
    n = len(raw)
    lead = len(text) - len(text.lstrip())
    trail = len(text) - len(text.rstrip()) if lead < len(text) else 0
    ascii_ = text.isascii()
    lead_b = lead if ascii_ else len(text[:lead].encode("utf-8"))
    body_end = n - (trail if ascii_ else len(text[len(text) - trail:].encode("utf-8")))
    pieces: list[bytes] = []
    ends: list[int] = []  # each odd run's end in raw
    shift: list[int] = [0]  # bytes the runs up to each end took beyond their one ' '
    runs = bytearray()
    at, jlen, prev = lead_b, 0, 0
    char_at = lead  # (text[char_at] is raw[at]: runs are found in the str, cut in its bytes)
    for m in _ODD_GAP.finditer(text, lead, len(text) - trail):
        ca, cb = m.span()
        if ascii_:
            a, b = ca, cb
        else:
            a = at + len(text[char_at:ca].encode("utf-8"))
            b = a + len(text[ca:cb].encode("utf-8"))
        pieces.append(raw[at:a])
        jlen += a - at
        _put_varint(runs, jlen - prev)
        _put_varint(runs, b - a)
        runs += raw[a:b]
        prev = jlen + 1
        jlen += 1
        at, char_at = b, cb
        ends.append(b)
        shift.append(shift[-1] + b - a - 1)
    pieces.append(raw[at:body_end])
    extra = bytearray()
    _put_varint(extra, lead_b)
    extra += raw[:lead_b]
    _put_varint(extra, n - body_end)
    extra += raw[body_end:]
    extra += runs
    out: list[tuple[int, int]] = []
    for a, b in spans:
        if not lead_b <= a <= b <= body_end:
            raise ValueError(f"chunk span [{a}, {b}) is not within the text's words")
        out.append((a - lead_b - shift[bisect_right(ends, a)], b - lead_b - shift[bisect_right(ends, b)]))
    return b" ".join(pieces) + extra + len(extra).to_bytes(4, "little"), out


def _unjoin(data: bytes) -> bytes:
    """The text of a joined stream's bytes (:func:`pack_joined`'s ``J + E + len(E)``)."""
    if len(data) < 4 or int.from_bytes(data[-4:], "little") > len(data) - 4:
        raise ValueError("joined text: its whitespace record is damaged")
    end = len(data) - 4
    at = j_end = end - int.from_bytes(data[-4:], "little")
    lead, at = _get_varint(data, at, end)
    head, at = data[at:at + lead], at + lead
    trail, at = _get_varint(data, at, end)
    tail, at = data[at:at + trail], at + trail
    if at > end:
        raise ValueError("joined text: its whitespace record is damaged")
    out = [head]
    prev = 0
    while at < end:
        gap, at = _get_varint(data, at, end)
        size, at = _get_varint(data, at, end)
        j = prev + gap
        if j >= j_end or data[j] != 0x20 or not size or at + size > end:
            raise ValueError("joined text: its whitespace record is damaged")
        out += (data[prev:j], data[at:at + size])
        at += size
        prev = j + 1
    out += (data[prev:j_end], tail)
    return b"".join(out)


def unpack_text(packed: bytes) -> str:
    """The document text of a ``doc_texts`` BLOB (joined drlz, drlz or zlib: the BLOB's first
    byte says). Raises ValueError (zlib.error is one) for a BLOB that is none, or not UTF-8."""
    if packed[:1] == bytes([lzcodec.MAGIC_JOINED]):
        raw = _unjoin(lzcodec.unpack(packed))
    else:
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
        if packed[0] == lzcodec.MAGIC_JOINED:  # (already the words joined by single spaces)
            return raw.decode("utf-8")
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


__all__ = ["SQL_FUNCTION", "VIEW", "ZLIB_HEADER_BYTES", "byte_spans", "chunk_text", "join_reference",
           "pack_joined", "pack_text", "register", "unpack_text"]
