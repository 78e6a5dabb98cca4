"""One writer per output directory: the exclusive lock every writing command takes.

Two processes writing one run, stage directory, pool or release interleave their files
(two ``drsearch run`` on one ``--out`` both ran every episode, and the cache then matched
neither). So each writer holds :func:`lock_dir` on its directory for as long as it writes:
``flock(2)`` on ``DIR/.drsearch.lock``. The kernel drops the lock with the last open file
description, i.e. when the process ends however it ends (``kill -9`` included), so there is
never a stale lock to clear by hand. The file holds the holder's pid, for the one-line
refusal a second writer gets (:class:`~drsearch.index.errors.DirectoryBusyError`, exit 2).

The file is left in place when the lock is released: unlinking it would let a process that
had just opened the old file and a process creating a new one both "hold" the lock. Listings
of a directory's contents (release inventories, "is it empty?") skip it: :data:`LOCK_NAME`,
:func:`entries`.

Within one process the lock is re-entrant (a counted handle per directory): a command that
locks a release and then calls a library function that locks it again must not refuse
itself. It therefore guards against other processes only, not against threads.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from pathlib import Path

from .errors import DirectoryBusyError, InvalidInputError

LOCK_NAME = ".drsearch.lock"

_held: dict[Path, tuple[int, int]] = {}  # resolved dir -> (fd, holders in this process)
_held_lock = threading.Lock()


class DirLock:
    """A held lock on one directory; :meth:`release` (or the ``with`` block's end) lets go."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._released = False

    def release(self) -> None:
        """Drop this hold (the flock itself goes with the last one in the process); idempotent."""
        if self._released:
            return
        self._released = True
        with _held_lock:
            fd, count = _held[self.directory]
            if count > 1:
                _held[self.directory] = (fd, count - 1)
                return
            del _held[self.directory]
        os.close(fd)  # releases the flock

    def __enter__(self) -> DirLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(fd: int) -> str:
    """The pid the holder wrote, as text ("unknown" while it has not written it yet)."""
    with contextlib.suppress(OSError, ValueError):
        return str(int(os.pread(fd, 32, 0).decode("ascii").strip()))
    return "unknown"


def lock_dir(path: str | os.PathLike[str], what: str = "output directory") -> DirLock:
    """Make ``path`` (with its parents) if needed and lock it for this process.

    Raises DirectoryBusyError (exit 2) naming the holder's pid when another live process
    holds it, InvalidInputError when ``path`` cannot be a directory or the lock file cannot
    be made there. ``what`` names the directory in the message ("run directory", …).
    """
    directory = Path(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InvalidInputError(f"{directory}: cannot make the {what} ({e.strerror or e})") from None
    key = directory.resolve()
    with _held_lock:
        if key in _held:
            fd, count = _held[key]
            _held[key] = (fd, count + 1)
            return DirLock(key)
        try:
            fd = os.open(key / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            raise InvalidInputError(f"{directory}: cannot lock the {what} ({e.strerror or e})") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _holder(fd)
            os.close(fd)
            raise DirectoryBusyError(f"{directory}: another drsearch process (pid {pid}) is writing this "
                                     f"{what}; wait for it to end, or stop it, then rerun") from None
        except OSError as e:  # a filesystem without flock: refuse rather than write unguarded
            os.close(fd)
            raise InvalidInputError(f"{directory}: cannot lock the {what} ({e.strerror or e})") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        _held[key] = (fd, 1)
    return DirLock(key)


def is_locked(path: str | os.PathLike[str]) -> bool:
    """Whether some live process holds :func:`lock_dir` on ``path`` (this one included).

    False when there is no lock file: a directory nobody ever locked is nobody's."""
    lock = Path(path) / LOCK_NAME
    with _held_lock:
        if Path(path).resolve() in _held:
            return True
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # a probe's shared lock goes with it
    return False


def entries(path: str | os.PathLike[str]) -> list[Path]:
    """The directory's entries, less its lock file (for "is it empty?" checks)."""
    return [p for p in Path(path).iterdir() if p.name != LOCK_NAME]


__all__ = ["LOCK_NAME", "DirLock", "entries", "is_locked", "lock_dir"]
