"""Chunk text stored once (schema version 4): each chunk as a byte span of its document's text.

A chunk cut from a document (800-word windows, ``chunking.py``) is ``" ".join(words[s:e])``
of the document's words, and the document's text is already in the file (``doc_texts``,
zlib). So a version-4 file stores no chunk text for such a chunk: ``chunks`` holds the UTF-8
byte offsets ``[start_byte, end_byte)`` of its first word's start and its last word's end in
the document's text, and the text is that slice with every run of whitespace made one space
(:func:`chunk_text`), the very string the build indexed. At DR-256 scale that drops 1.2 GB of
uncompressed chunk text beside the 233 MB of compressed document text it repeated.

A pre-chunked build's chunks are not cut from the document text: they keep their own
``chunks.text`` (``start_byte``/``end_byte`` -1).

One view, ``chunk_texts(id, text)``, gives every chunk's text (FTS5's external content, and
what the engine reads); it calls the SQL function :data:`SQL_FUNCTION`, which
:func:`register` installs on a connection. A connection without it (the plain ``sqlite3``
shell) still ranks with FTS5's ``bm25()``, which reads FTS5's own tables only, but cannot
read the view (``no such function``).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Sequence
from functools import cache
from typing import Any

import apsw

SQL_FUNCTION = "drsearch_chunk_text"
VIEW = "chunk_texts"


def chunk_text(packed: bytes, start: int, end: int) -> str:
    """The text of the chunk at UTF-8 bytes ``[start, end)`` of the zlib-compressed document
    text ``packed``: the slice's words joined by single spaces (``str.split()``'s words).
    Only the first ``end`` bytes are inflated. Raises ValueError for a span outside the text,
    bytes that are not zlib, or a slice that is not UTF-8 (a damaged file)."""
    if not 0 <= start <= end:
        raise ValueError(f"chunk span [{start}, {end}) is not a span")
    try:
        raw = zlib.decompressobj().decompress(packed, end) if end else b""
    except zlib.error as e:
        raise ValueError(f"document text is not zlib data ({e})") from None
    if len(raw) < end:
        raise ValueError(f"chunk span [{start}, {end}) ends past its document's {len(raw)} bytes")
    return " ".join(raw[start:end].decode("utf-8").split())


def _sql_chunk_text(*args: Any) -> str:
    packed, start, end = args
    if not isinstance(packed, bytes) or not isinstance(start, int) or not isinstance(end, int):
        raise ValueError("drsearch_chunk_text(document text BLOB, start byte, end byte)")
    return chunk_text(packed, start, end)


def register(conn: apsw.Connection) -> None:
    """Install :data:`SQL_FUNCTION` on ``conn`` (needed to read the ``chunk_texts`` view, and
    so FTS5's content, of a version-4 file). Deterministic: SQLite may factor it."""
    conn.create_scalar_function(SQL_FUNCTION, _sql_chunk_text, 3, deterministic=True)


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


__all__ = ["SQL_FUNCTION", "VIEW", "byte_spans", "chunk_text", "register"]
