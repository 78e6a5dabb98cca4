"""Every document's (docid, url, title) in one compact in-memory table.

Ranked results need three short strings per hit. Reading them from SQLite costs a b-tree
descent and a row decode per hit; at k = 100, right after other work has evicted the caches,
that was a fifth of the query. This table holds the three fields of every document as one
UTF-8 buffer with offsets (about 4 MB and 30 ms to load at DR-256 scale, once per process,
on the first search), and decodes only the hits asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt


class DocTable:
    """(docid, url, title) by document rowid, for rowids 1..n (gaps allowed)."""

    __slots__ = ("_data", "_offsets", "_present")

    def __init__(self, rows: Iterable[tuple[int, str, str, str]], max_id: int) -> None:
        parts: list[bytes] = []
        offsets = np.zeros(3 * (max_id + 1) + 1, dtype=np.int64)
        present = np.zeros(max_id + 1, dtype=np.bool_)
        pos = 0
        last = 0
        for doc_id, docid, url, title in rows:
            if not last < doc_id <= max_id:
                raise ValueError(f"document rowids must ascend within 1..{max_id}; got {doc_id}")
            offsets[3 * last + 3 : 3 * doc_id + 1] = pos  # rows skipped in between: empty
            for j, field in enumerate((docid, url, title)):
                b = field.encode("utf-8")
                parts.append(b)
                pos += len(b)
                offsets[3 * doc_id + j + 1] = pos
            present[doc_id] = True
            last = doc_id
        offsets[3 * last + 3 :] = pos
        self._data = b"".join(parts)
        self._offsets: npt.NDArray[np.int64] = offsets
        self._present = present

    def __len__(self) -> int:
        return int(self._present.sum())

    def get(self, doc_ids: Sequence[int]) -> list[tuple[str, str, str]]:
        """The (docid, url, title) of each rowid, in order. Raises KeyError for an unknown one."""
        idx = np.asarray(doc_ids, dtype=np.int64)
        if len(idx) and not (idx.min() > 0 and idx.max() < len(self._present)
                             and self._present[idx].all()):
            raise KeyError(next(d for d in doc_ids
                                if not (0 < d < len(self._present) and self._present[d])))
        bounds = self._offsets[(3 * idx)[:, None] + _SPAN].tolist()
        data = self._data
        return [(data[a:b].decode("utf-8"), data[b:c].decode("utf-8"), data[c:e].decode("utf-8"))
                for a, b, c, e in bounds]


_SPAN = np.arange(4, dtype=np.int64)


__all__ = ["DocTable"]
