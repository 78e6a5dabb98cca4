"""Reading posting-list BLOBs without allocating: a per-thread arena, and the file's own pages.

Fetching a query's posting lists as Python ``bytes`` costs far more than the copy itself:
each multi-megabyte allocation is fresh memory (page faults), then freed. Reading with
SQLite's incremental blob API straight into a reused buffer avoids both (measured 5x faster
per query at DR-256 scale). Views handed out are valid until the arena's next ``reset()``,
that is, for the rest of the current query on the current thread.

With the C kernel built, a query's long lists are read by :class:`MappedFile` instead: the
frozen file mapped read-only and the BLOBs copied from its pages by ``_kernels.read_blobs``,
all of a query's lists in one call without the GIL (the blob API through apsw takes three
calls per list, each releasing and retaking the GIL: with two threads serving, a hand-off
each; docs/ENGINE.md, "Threads"). The same bytes either way (tests read every list both ways).
"""

from __future__ import annotations

import contextlib
import mmap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import numpy.typing as npt

from ..contract.errors import IncompatibleIndexError
from . import native as kernel
from .memory import hugepage_zeros

U8 = npt.NDArray[np.uint8]

_ALIGN = 8


class Arena:
    """A reusable byte buffer handing out 8-byte-aligned slices, reset once per query."""

    def __init__(self, capacity: int = 8 << 20, max_capacity: int = 64 << 20) -> None:
        self.max_capacity = max_capacity
        self._buf: U8 = hugepage_zeros(capacity)
        self._offset = 0

    def reset(self) -> None:
        self._offset = 0

    def take(self, nbytes: int) -> U8:
        """A writable slice of ``nbytes`` bytes (fresh memory beyond ``max_capacity``)."""
        start = -(-self._offset // _ALIGN) * _ALIGN
        if start + nbytes > len(self._buf):
            if nbytes > self.max_capacity // 2:
                return np.empty(nbytes, dtype=np.uint8)  # a huge list: not worth keeping
            # Grow: earlier views keep the old buffer alive until the query ends.
            size = min(self.max_capacity, max(2 * len(self._buf), 2 * nbytes))
            self._buf = hugepage_zeros(size)
            start = 0
        self._offset = start + nbytes
        return self._buf[start : start + nbytes]


def open_blob(conn: apsw.Connection, table: str, column: str, rowid: int, nbytes: int) -> apsw.Blob:
    """One BLOB, opened read-only, checked to be exactly ``nbytes`` bytes long.

    Raises IncompatibleIndexError."""
    try:
        blob = conn.blob_open("main", table, column, rowid, False)
    except apsw.Error as e:
        raise IncompatibleIndexError(f"{table}.{column} row {rowid} unreadable: {e}") from e
    if blob.length() != nbytes:
        n = blob.length()
        blob.close()
        raise IncompatibleIndexError(f"{table}.{column} row {rowid}: {n} bytes, expected {nbytes}")
    return blob


def read_blob(conn: apsw.Connection, table: str, column: str, rowid: int, nbytes: int,
              arena: Arena) -> U8:
    """Read one BLOB of exactly ``nbytes`` bytes into the arena. Raises IncompatibleIndexError."""
    with open_blob(conn, table, column, rowid, nbytes) as blob:
        buf = arena.take(nbytes)
        blob.readinto(buf.data)
    return buf


class MappedFile:
    """A frozen SQLite file mapped read-only (once, shared by every thread), and readers of its
    tables' columns straight from its pages (``column``). The file must not change while it is
    open, as an index opened immutable does not."""

    def __init__(self, path: Path, conn: apsw.Connection) -> None:
        """``conn``: an open connection to the same file (the C kernel must be available:
        :func:`drsearch.index.native.available`). Raises IncompatibleIndexError when the file's
        header is not what the readers need."""
        with open(path, "rb") as fh:
            head = fh.read(100)
            try:
                self._map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except (OSError, ValueError) as e:  # an empty file cannot be mapped
                raise IncompatibleIndexError(f"cannot map {path.name}: {e}") from e
        page_size = int.from_bytes(head[16:18], "big")
        self.page_size = 65536 if page_size == 1 else page_size
        self.usable = self.page_size - head[20]
        # Text is read as UTF-8 (header offset 56: 1 = UTF-8, the encoding drsearch builds with).
        self.utf8 = int.from_bytes(head[56:60], "big") == 1
        self.name = path.name
        self._conn = conn
        # Whole pages only: bytes past the last (a padded file, which `drsearch validate`
        # reports) are never part of a page; a page past the end is "out of range".
        self._pages = memoryview(self._map)[: len(self._map) // self.page_size * self.page_size]

    @property
    def pages(self) -> memoryview:
        """The file's whole pages, read-only (released by :meth:`close`)."""
        return self._pages

    def column(self, table: str, column: str) -> MappedColumn:
        """A reader of ``table.column`` (a rowid table). Raises IncompatibleIndexError when the
        table or column is missing."""
        root, columns = self._table(table)
        if column not in columns:
            raise IncompatibleIndexError(f"{self.name}: table {table} cannot be read by pages")
        return MappedColumn(self, root, columns.index(column), f"{table}.{column}")

    def span_texts(self) -> SpanTexts:
        """A reader of schema version 4's chunk texts (``chunks`` rows whose ``text`` is NULL are
        byte spans of their document's ``doc_texts.text``: chunktext.py), for a kernel with
        :func:`~drsearch.index.native.span_texts`. Raises IncompatibleIndexError when a table
        or column is missing."""
        root, columns = self._table("chunks")
        doc_root, doc_columns = self._table("doc_texts")
        try:
            text, doc, start, end, zstart = (columns.index(c) for c in
                                             ("text", "doc", "start_byte", "end_byte", "zstart"))
            packed = kernel.span_column(text, doc, start, end, zstart, doc_root, doc_columns.index("text"))
        except ValueError as e:  # (list.index's too: a column missing)
            raise IncompatibleIndexError(f"{self.name}: chunk texts cannot be read by pages ({e})") from e
        return SpanTexts(self, root, packed, "chunks.text")

    def rows(self, table: str, columns: Sequence[str], kinds: str) -> MappedRows:
        """A reader of ``table`` (a WITHOUT ROWID table keyed by its first column, a TEXT)
        returning ``columns`` (later columns; ``kinds``: 'i' INTEGER, 'r' REAL, one letter
        each). Raises IncompatibleIndexError when the table or a column is missing."""
        root, names = self._table(table)
        if not set(columns) <= set(names[1:]) or len(kinds) != len(columns):
            raise IncompatibleIndexError(f"{self.name}: table {table} cannot be read by pages")
        return MappedRows(self, root, [names.index(c) for c in columns], kinds, table)

    def _table(self, table: str) -> tuple[int, list[str]]:
        """``table``'s root page and column names. Raises IncompatibleIndexError when it is not
        a table of the file."""
        root = self._conn.execute("SELECT rootpage FROM sqlite_schema WHERE type = 'table' AND "
                                  "name = ?", (table,)).get
        if not isinstance(root, int):
            raise IncompatibleIndexError(f"{self.name}: table {table} cannot be read by pages")
        return root, [r[1] for r in self._conn.execute(f"PRAGMA table_info({table})")]

    def close(self) -> None:
        """Unmap (what the readers returned is a copy: nothing refers to the mapping but
        :attr:`pages`, which a closed engine no longer reads). Safe twice."""
        if not self._map.closed:
            # BufferError: a read still in flight in another thread; unmapped when freed then
            with contextlib.suppress(BufferError):
                self._pages.release()
                self._map.close()


class MappedColumn:
    """One column of a rowid table of a :class:`MappedFile`, read from the file's pages."""

    def __init__(self, file: MappedFile, root: int, column: int, name: str) -> None:
        self.file = file
        self.root = root
        self.column = column
        self.table = name
        self.page_size = file.page_size
        self.usable = file.usable

    def _call(self, fn: Callable[..., Any], *args: Any) -> Any:
        """Kernel function ``fn`` (of :mod:`drsearch.index.native`) on this column (the file's
        pages, geometry, table and column, then ``args``): its ValueError as
        IncompatibleIndexError naming the table (a UnicodeDecodeError, bytes that are not
        UTF-8, as it is)."""
        f = self.file
        try:
            return fn(f._pages, f.page_size, f.usable, self.root, self.column, *args)
        except UnicodeDecodeError:
            raise
        except ValueError as e:
            raise IncompatibleIndexError(f"{self.table} {e}") from e

    def _check_utf8(self) -> None:
        if not self.file.utf8:
            raise IncompatibleIndexError(f"{self.file.name}: text encoding is not UTF-8")

    def read_into(self, rowids: Sequence[int], outs: Sequence[Any]) -> None:
        """Copy the BLOB of each row ``rowids[i]`` into ``outs[i]`` (writable, exactly the
        BLOB's length). Raises IncompatibleIndexError naming the row (missing, another
        length, or a damaged page)."""
        self._call(kernel.read_blobs, rowids, outs)

    def pieces(self, rowid: int, nbytes: int | None = None) -> bytes:
        """Where the BLOB of row ``rowid`` lies in the file: ``_kernels.blob_pieces``' table.
        Raises IncompatibleIndexError naming the row (missing, not a BLOB, a damaged page, or
        not ``nbytes`` long when given)."""
        table: bytes = self._call(kernel.blob_pieces, rowid)
        got = int.from_bytes(table[:8], "little", signed=True)
        if nbytes is not None and got != nbytes:
            raise IncompatibleIndexError(f"{self.table} row {rowid}: {got} bytes, expected {nbytes} bytes")
        return table

    def read_texts(self, rowids: Sequence[int]) -> list[str]:
        """The TEXT of each row ``rowids[i]``. Raises IncompatibleIndexError naming the row
        (missing, not TEXT, a damaged page), or for a file whose text is not UTF-8, and
        UnicodeDecodeError for bytes that are not UTF-8."""
        self._check_utf8()
        texts: list[str] = self._call(kernel.read_texts, rowids)
        return texts

    def text_geometry(self) -> tuple[Any, ...]:
        """(the file's pages, page size, usable bytes, root page, column): how the kernel finds
        this TEXT column's values (the ``texts`` argument of the ranking kernels). Raises
        IncompatibleIndexError for a file whose text encoding is not UTF-8."""
        self._check_utf8()
        f = self.file
        return f._pages, f.page_size, f.usable, self.root, self.column

    def read_texts_snippets(self, rowids: Sequence[int], stems: Sequence[str], weights: Sequence[float],
                            width: int, deadline: float) -> tuple[list[str], list[str | None]] | None:
        """:meth:`read_texts` and the C snippets of those texts in one call
        (``_kernels.texts_snippets``: copied, decoded and searched without the GIL), for
        :meth:`SnippetMaker.of_rows <drsearch.index.snippet.SnippetMaker.of_rows>`. None when
        ``deadline`` passed. The errors of read_texts."""
        self._check_utf8()
        got: tuple[list[str], list[str | None]] | None = self._call(
            kernel.texts_snippets, rowids, stems, weights, width, deadline)
        return got


class SpanTexts(MappedColumn):
    """Schema version 4's chunk texts read from the file's pages: a :class:`MappedColumn` whose
    column argument names the chunks' spans (``native.span_column``), so the kernel's text
    readers that take it (``texts_snippets``, the ranking's and ``search_hits``' texts) cut each
    text from its document. :meth:`read_texts` goes through ``texts_snippets`` (with no snippet
    to make): the kernel's ``read_texts`` reads TEXT columns only."""

    def read_texts(self, rowids: Sequence[int]) -> list[str]:
        got = self.read_texts_snippets(rowids, [], [], 1, 0.0)
        assert got is not None  # (no deadline)
        return got[0]


class MappedRows:
    """Rows of a WITHOUT ROWID table of a :class:`MappedFile` found by their TEXT key, from the
    file's pages (``_kernels.find_rows``: a b-tree descent per key, in one call)."""

    def __init__(self, file: MappedFile, root: int, columns: list[int], kinds: str, name: str) -> None:
        self.file = file
        self.root = root
        self.columns = columns
        self.kinds = kinds
        self.table = name

    def find(self, keys: Sequence[str]) -> list[tuple[Any, ...] | None] | None:
        """Each key's row (the columns asked for) or None when it is not there; None instead
        of the list when a key's b-tree path holds a cell too long for its page (ask SQLite).
        Raises IncompatibleIndexError naming the key (a damaged page), and for a file whose
        text is not UTF-8."""
        f = self.file
        if not f.utf8:
            raise IncompatibleIndexError(f"{f.name}: text encoding is not UTF-8")
        try:
            rows: list[tuple[Any, ...] | None] | None = kernel.find_rows(
                f._pages, f.page_size, f.usable, self.root, keys, self.columns, self.kinds)
        except ValueError as e:
            raise IncompatibleIndexError(f"{self.table} {e}") from e
        return rows


__all__ = ["Arena", "MappedColumn", "MappedFile", "MappedRows", "SpanTexts", "open_blob", "read_blob"]
