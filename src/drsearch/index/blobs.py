"""Reading posting-list BLOBs without allocating: a per-thread arena and incremental blob I/O.

Fetching a query's posting lists as Python ``bytes`` costs far more than the copy itself:
each multi-megabyte allocation is fresh memory (page faults), then freed. Reading with
SQLite's incremental blob API straight into a reused buffer avoids both (measured 5x faster
per query at DR-256 scale). Views handed out are valid until the arena's next ``reset()``,
that is, for the rest of the current query on the current thread.
"""

from __future__ import annotations

import apsw
import numpy as np
import numpy.typing as npt

from .errors import IncompatibleIndexError
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


__all__ = ["Arena", "open_blob", "read_blob"]
