"""Scratch memory the kernel may back with transparent huge pages.

A query reads and writes its score buffers and its posting-list buffer all over. Right after
other work has evicted the caches (an agent's model call, another engine in a benchmark),
every 4 KiB page touched costs a TLB miss; 2 MiB pages remove most of them. A hint only:
where transparent huge pages are off, this is plain zeroed memory.
"""

from __future__ import annotations

import contextlib
import mmap

import numpy as np
import numpy.typing as npt

HUGE_PAGE = 2 << 20


def hugepage_zeros(nbytes: int) -> npt.NDArray[np.uint8]:
    """``nbytes`` zeroed bytes starting on a 2 MiB boundary, advised for huge pages.

    The length is rounded up to whole huge pages internally so that every page of the
    result can be one; the returned view keeps the mapping alive.
    """
    size = -(-max(nbytes, 1) // HUGE_PAGE) * HUGE_PAGE
    # Private: shared anonymous memory is shmem, which transparent huge pages skip.
    flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
    region = mmap.mmap(-1, size + HUGE_PAGE, **({"flags": flags} if flags else {}))
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    if advice is not None:
        with contextlib.suppress(OSError):
            region.madvise(advice)
    raw = np.frombuffer(region, dtype=np.uint8)
    start = -raw.ctypes.data % HUGE_PAGE
    return raw[start : start + nbytes]


__all__ = ["HUGE_PAGE", "hugepage_zeros"]
