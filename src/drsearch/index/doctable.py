"""Every document's (docid, url, title) in one compact in-memory table.

Ranked results need three short strings per hit. Reading them from SQLite costs a b-tree
descent and a row decode per hit, which adds up at k = 100 when the caches are cold. This
table holds the three fields of every document as one UTF-8 buffer with offsets (at DR-256
scale 4.1 MB of text and 0.7 MB of offsets) and decodes only the hits asked for.

The build stores the table in the ``arrays`` table (``doc_field_offsets``, ``doc_fields``).
With the C kernel built, the engine leaves ``doc_fields`` where it lies, in the file's
pages (:class:`PagedFields`: the BLOB's pieces, one per overflow page, found once at
opening), and reads a hit's fields from there: at 4x DR-256 scale that is 16.7 MB less
private memory in every serving process, the mapped pages being the page cache all
processes share. Without the kernel, opening loads the BLOB with one sequential read. An
index without the two arrays (built before they existed) gets the table from the
``documents`` rows on first search instead — the same content, slower to load: a scattered
read of every row, which on a cold page cache made the benchmark's fresh-process first query
1,038 ms at commit 049c6c3 (benchmarks/HISTORY.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

_SPAN = np.arange(4, dtype=np.int64)
# Up to this many rows, offsets are read one by one (a search's usual k = 10); beyond, with
# one numpy gather (per-call overhead then pays for itself).
_FEW = 16


class PagedFields:
    """A BLOB left in a mapped file's pages, sliced like ``bytes``: ``pieces`` is
    ``_kernels.blob_pieces``' table (little-endian int64s: the length, the first piece's
    bytes, every later piece's bytes but the last's, then each piece's offset in ``file``)."""

    __slots__ = ("_file", "_first", "_len", "_offsets", "_per", "pieces")

    def __init__(self, file: memoryview, pieces: bytes) -> None:
        """Raises ValueError when the table is malformed or a piece lies outside ``file``."""
        table = np.frombuffer(pieces, dtype="<i8")
        if len(table) < 3:
            raise ValueError("malformed document field pieces")
        length, first, per = (int(x) for x in table[:3])
        offs = table[3:]
        if length == 0:
            ok = len(offs) == 0
        else:
            ok = 0 < first <= min(per, length) and len(offs) == 1 + -(-(length - first) // per)
        if ok and len(offs):
            lens = np.full(len(offs), per, dtype=np.int64)
            lens[0] = first
            lens[-1] = length - first - per * (len(offs) - 2) if len(offs) > 1 else first
            ok = int(offs.min()) >= 0 and int((offs + lens).max()) <= len(file)
        if not ok:
            raise ValueError("malformed document field pieces")
        self._file = file
        self.pieces = pieces
        self._len, self._first, self._per = length, first, per
        self._offsets = offs.tolist()

    def __len__(self) -> int:
        return self._len

    def __getitem__(self, span: slice) -> bytes:
        a, b, _ = span.indices(self._len)
        out: list[bytes] = []
        first, per = self._first, self._per
        while a < b:
            i, skip = (0, a) if a < first else (1 + (a - first) // per, (a - first) % per)
            m = min((first if i == 0 else per) - skip, b - a)
            start = self._offsets[i] + skip
            out.append(bytes(self._file[start : start + m]))
            a += m
        return b"".join(out)

    @property
    def file(self) -> memoryview:
        return self._file


def field_arrays(rows: Iterable[tuple[int, str, str, str]],
                 max_id: int) -> tuple[npt.NDArray[np.int64], bytearray]:
    """:meth:`DocTable.from_rows`'s (offsets, data), the data as the buffer it was appended to
    (a build stores it as it is: ``bytes`` of it would be a second copy). Raises ValueError
    when the rowids do not ascend within 1..max_id."""
    data = bytearray()
    offsets = np.zeros(3 * (max_id + 1) + 1, dtype=np.int64)
    last = 0
    for doc_id, docid, url, title in rows:
        if not last < doc_id <= max_id:
            raise ValueError(f"document rowids must ascend within 1..{max_id}; got {doc_id}")
        offsets[3 * last + 3 : 3 * doc_id + 1] = len(data)  # rows skipped in between: empty
        for j, field in enumerate((docid, url, title)):
            data += field.encode("utf-8")
            offsets[3 * doc_id + j + 1] = len(data)
        last = doc_id
    offsets[3 * last + 3 :] = len(data)
    return offsets, data


class DocTable:
    """(docid, url, title) by document rowid; a rowid without a row has an empty docid."""

    __slots__ = ("_data", "_offs", "_offsets", "_present")

    def __init__(self, data: bytes | PagedFields, offsets: npt.NDArray[np.int64]) -> None:
        """From :meth:`arrays` output: field ``f`` of rowid ``d`` is
        ``data[offsets[3d + f] : offsets[3d + f + 1]]``. Raises ValueError if malformed."""
        if len(offsets) < 4 or (len(offsets) - 1) % 3 or offsets[0] != 0 \
                or offsets[-1] != len(data) or bool(np.any(np.diff(offsets) < 0)):
            raise ValueError("malformed document field table")
        self._data = data
        self._offsets: npt.NDArray[np.int64] = np.ascontiguousarray(offsets, dtype=np.int64)
        self._present: npt.NDArray[np.bool_] = offsets[1::3] > offsets[0:-1:3]
        # The offsets as Python ints one by one: for a few rows, a loop over a memoryview
        # costs less than numpy's per-call overhead.
        self._offs = self._offsets.data.cast("B").cast("q")

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, str, str, str]], max_id: int) -> DocTable:
        """From (rowid, docid, url, title) rows in ascending rowid order, rowids in 1..max_id.

        The fields' bytes are appended to one buffer as they come, not kept as an object
        each: a list of 6,000,000 ``bytes`` (a 2,000,000-passage build) peaked at 1 GB, the
        buffer at twice the data (its one copy into ``bytes``)."""
        offsets, data = field_arrays(rows, max_id)
        return cls(bytes(data), offsets)

    def arrays(self) -> tuple[bytes, bytes]:
        """(little-endian int64 offsets, UTF-8 data): what the build stores."""
        data = self._data
        return self._offsets.astype("<i8").tobytes(), data if isinstance(data, bytes) else data[:]

    def fields(self) -> tuple[npt.NDArray[np.int64], bytes | memoryview, bytes | None]:
        """(offsets, UTF-8 data, None) as held, field ``f`` of rowid ``d`` being
        ``data[offsets[3d + f] : offsets[3d + f + 1]]``; for fields left in the file's pages,
        (offsets, the whole file, the pieces' table). The C kernel's ``make_hits`` reads
        either."""
        data = self._data
        if isinstance(data, PagedFields):
            return self._offsets, data.file, data.pieces
        return self._offsets, data, None

    def __len__(self) -> int:
        return int(self._present.sum())

    def get(self, doc_ids: Sequence[int]) -> list[tuple[str, str, str]]:
        """The (docid, url, title) of each rowid, in order. Raises KeyError for an unknown one."""
        data, n = self._data, len(self._present)
        if len(doc_ids) > _FEW:
            idx = np.asarray(doc_ids, dtype=np.int64)
            if not (idx.min() > 0 and idx.max() < n and self._present[idx].all()):
                raise KeyError(next(d for d in doc_ids if not (0 < d < n and self._present[d])))
            bounds = self._offsets[(3 * idx)[:, None] + _SPAN].tolist()
        else:
            offs = self._offs
            bounds = []
            for d in doc_ids:
                i = 3 * d
                if not 0 < d < n or offs[i + 1] <= offs[i]:
                    raise KeyError(d)
                bounds.append((offs[i], offs[i + 1], offs[i + 2], offs[i + 3]))
        return [(data[a:b].decode("utf-8"), data[b:c].decode("utf-8"), data[c:e].decode("utf-8"))
                for a, b, c, e in bounds]


__all__ = ["DocTable", "PagedFields", "field_arrays"]
