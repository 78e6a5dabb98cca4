"""The build's postings in bounded memory: sorted runs on disk, merged term by term.

The build sees postings chunk by chunk, but writes them term by term. Holding every
(term, chunk, tf) triple until the end costs memory in proportion to the corpus (1.86 GB
peak at 4x DR-256 when whole partitions were loaded). Instead each batch of chunks becomes
one *run*: its triples sorted by (term, chunk), written to its own file. Runs are created in
chunk order and cover disjoint, ascending chunk ranges, so a term's postings are the
concatenation of its postings in run 1, run 2, ...: merging needs no comparison of chunk ids,
only of terms. :meth:`SortedRuns.windows` reads every run through a fixed-size block and
yields *windows*: all postings of a range of consecutive term ids, sorted by (term, chunk).
More than :data:`FAN_IN` runs are first merged, :data:`FAN_IN` consecutive runs at a time,
into longer runs (a classic multi-level external merge), so the merge holds at most
``FAN_IN`` blocks whatever the number of runs.

Windows depend on block sizes; their concatenation does not: the same postings in the same
order for any block size, run size or fan-in, which is what makes the file the same bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

PAIR = np.dtype([("term", "<u4"), ("chunk", "<u4"), ("tf", "<u2")])
FAN_IN = 16  # runs read at once by one merge

Pairs = npt.NDArray[np.void]


def sorted_pairs(term_ids: npt.NDArray[np.uint32], chunk_ids: npt.NDArray[np.uint32],
                 tfs: npt.NDArray[np.uint32]) -> Pairs:
    """A batch's (term, chunk, tf) triples, one per distinct (term, chunk), sorted by
    (term, chunk); tf saturates at 65535 (it is stored as uint16)."""
    key = (term_ids.astype(np.uint64) << np.uint64(32)) | chunk_ids.astype(np.uint64)
    order = np.argsort(key, kind="stable")
    pairs = np.empty(len(key), dtype=PAIR)
    pairs["term"] = term_ids[order]
    pairs["chunk"] = chunk_ids[order]
    pairs["tf"] = np.minimum(tfs[order], 65535)
    return pairs


def token_pairs(term_ids: npt.NDArray[np.uint32], chunk_lens: npt.NDArray[np.int64],
                first_chunk: int) -> Pairs:
    """A batch's (term, chunk, tf) triples from its tokens, as :func:`sorted_pairs` gives
    them from counted terms: ``term_ids`` holds every token's term id, chunk by chunk
    (``chunk_lens`` tokens each, the first chunk numbered ``first_chunk``).

    One sort of (term << 32 | chunk) keys then run lengths, instead of counting each chunk's
    terms in Python first: equal keys are equal values, so any sort gives the same result.
    """
    key = term_ids.astype(np.uint64)
    key <<= np.uint64(32)
    key |= np.repeat(np.arange(first_chunk, first_chunk + len(chunk_lens), dtype=np.uint64), chunk_lens)
    key.sort()
    starts = np.flatnonzero(key[1:] != key[:-1]) + 1
    starts = np.concatenate((np.zeros(1 if len(key) else 0, dtype=np.int64), starts))
    counts = np.diff(np.append(starts, len(key)))
    first = key[starts]
    pairs = np.empty(len(starts), dtype=PAIR)
    pairs["term"] = first >> np.uint64(32)
    pairs["chunk"] = first & np.uint64(0xFFFFFFFF)
    pairs["tf"] = np.minimum(counts, 65535)
    return pairs


class _Reader:
    """One run read block by block; ``buf`` holds the triples read and not yet taken."""

    def __init__(self, path: Path, block: int) -> None:
        self.fh: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed by close()
        self.block = block
        self.buf: Pairs = np.empty(0, dtype=PAIR)
        self.eof = False

    def read_more(self) -> None:
        data = self.fh.read(self.block * PAIR.itemsize)
        if len(data) < self.block * PAIR.itemsize:
            self.eof = True
        if data:
            more = np.frombuffer(data, dtype=PAIR)
            self.buf = np.concatenate((self.buf, more)) if len(self.buf) else more

    def close(self) -> None:
        self.fh.close()


class SortedRuns:
    """Runs of (term, chunk, tf) triples spilled to files under ``directory``.

    ``block`` is how many triples each run is read by during a merge.
    """

    def __init__(self, directory: Path, block: int) -> None:
        if block < 1:
            raise ValueError("block must be >= 1")
        self.directory = directory
        self.block = block
        self.paths: list[Path] = []
        self.written = 0  # runs written, merged ones included (what a test checks spilling by)
        self.pairs = 0

    def add(self, pairs: Pairs) -> None:
        """Spill one run: triples sorted by (term, chunk), chunks after every earlier run's."""
        if not len(pairs):
            return
        path = self.directory / f"run-{self.written:06d}.bin"
        self.written += 1
        self.pairs += len(pairs)
        with open(path, "wb") as fh:
            fh.write(pairs.tobytes())
        self.paths.append(path)

    def windows(self) -> Iterator[Pairs]:
        """Every triple, by (term, chunk), in windows that each hold all postings of their
        terms. Consumes the runs (their files are deleted)."""
        while len(self.paths) > FAN_IN:
            groups = [self.paths[i : i + FAN_IN] for i in range(0, len(self.paths), FAN_IN)]
            self.paths = []
            for group in groups:
                path = self.directory / f"run-{self.written:06d}.bin"
                self.written += 1
                with open(path, "wb") as fh:
                    for window in self._merge(group):
                        fh.write(window.tobytes())
                self.paths.append(path)
        paths, self.paths = self.paths, []
        yield from self._merge(paths)

    def _merge(self, paths: list[Path]) -> Iterator[Pairs]:
        readers = [_Reader(p, self.block) for p in paths]
        try:
            for r in readers:
                r.read_more()
            while True:
                for r in readers:  # an emptied buffer of an unfinished run: read on
                    while not len(r.buf) and not r.eof:
                        r.read_more()
                live = [r for r in readers if not r.eof]
                if not live and not any(len(r.buf) for r in readers):
                    return
                # Terms below the smallest last term of an unfinished run's buffer are complete
                # in every run: their postings can all be taken now.
                bound = min(int(r.buf["term"][-1]) for r in live) if live else None
                parts = []
                for r in readers:
                    cut = len(r.buf) if bound is None else int(np.searchsorted(r.buf["term"], bound))
                    if cut:
                        parts.append(r.buf[:cut])
                        r.buf = r.buf[cut:]
                if not parts:  # one term fills a run's whole buffer: read further into it
                    for r in live:
                        if int(r.buf["term"][-1]) == bound:
                            r.read_more()
                    continue
                window = np.concatenate(parts) if len(parts) > 1 else parts[0]
                # Parts are in run order, so chunks ascend within each term: a stable sort by
                # term alone gives (term, chunk) order.
                yield window[np.argsort(window["term"], kind="stable")]
        finally:
            for r in readers:
                r.close()
            for p in paths:
                p.unlink(missing_ok=True)


__all__ = ["FAN_IN", "PAIR", "SortedRuns", "sorted_pairs", "token_pairs"]
