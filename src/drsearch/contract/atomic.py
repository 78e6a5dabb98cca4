"""Files that appear whole or not at all: the one atomic-write helper every layer uses.

A reader (or a rerun after a crash or Ctrl-C) sees either the old file or the complete new
one: the data goes to a temporary name beside the target, is fsynced, renamed into place,
and the directory entry is fsynced too. If writing raises, the temporary file is removed and
the target is left as it was.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform or filesystem allows it
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextmanager
def atomic_output(path: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary file that becomes ``path`` when the ``with`` block ends without error."""
    target = Path(path)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
        _fsync_dir(target.parent)
    finally:
        tmp.unlink(missing_ok=True)


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace ``path`` by ``data`` with :func:`atomic_output`."""
    with atomic_output(path) as fh:
        fh.write(data)


def write_json_atomic(path: str | os.PathLike[str], value: Any) -> None:
    """``value`` as JSON for people to read (sorted keys, 2-space indent, UTF-8 as is, final
    newline), with :func:`atomic_output`."""
    write_bytes_atomic(path, (json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)
                              + "\n").encode("utf-8"))


__all__ = ["atomic_output", "write_bytes_atomic", "write_json_atomic"]
