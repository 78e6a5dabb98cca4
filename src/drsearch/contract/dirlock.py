"""One writer per output directory: the exclusive lock every writing command takes.

Two processes writing one run, stage directory, pool or release interleave their files
(two ``drsearch run`` on one ``--out`` both ran every episode, and the cache then matched
neither). So each writer holds :func:`lock_dir` on its directory for as long as it writes:
``flock(2)`` on ``DIR/.drsearch.lock``. The kernel drops the lock with the last open file
description, i.e. when the process ends however it ends (``kill -9`` included), so there is
never a stale lock to clear by hand. A second writer gets a one-line refusal naming the
holder's pid (:class:`~drsearch.contract.errors.DirectoryBusyError`, exit 2), read from the
kernel's own table of locks (``/proc/locks``) rather than from the file.

The file is empty and written once: an output directory stays byte-identical from run to run
(its lock file included), and a refused writer changes nothing in it, not even a time stamp.
It appears already locked: it is made under a private name, locked, then linked into place,
so whoever sees :data:`LOCK_NAME` unlocked knows its holder is gone (what
:mod:`drsearch.index.leftovers` relies on). It is left in place when the lock is released:
unlinking it would let a process that had just opened the old file and a process creating a
new one both "hold" the lock. Listings of a directory's contents (release inventories, "is it
empty?") skip it: :data:`LOCK_NAME`, :func:`entries`.

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


def holder_pid(path: str | os.PathLike[str]) -> int | None:
    """The pid holding the flock on the lock file ``path`` (from ``/proc/locks``), or None
    (not held, not Linux, or a holder outside this process's pid namespace)."""
    try:
        st = os.stat(path)
        table = Path("/proc/locks").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    where = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table.splitlines():
        fields = line.split()  # "1: FLOCK ADVISORY WRITE 4242 fe:00:2147796 0 EOF"
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[5] == where and fields[4].isdigit():
            pid = int(fields[4])
            return pid if pid > 0 else None
    return None


def _open_locked(lock: Path) -> int | None:
    """An fd holding the flock on ``lock``; the file is created already locked (made under a
    private name, locked, then linked into place). None when another process holds it."""
    for _ in range(100):  # a creator racing us wins: open what it linked
        with contextlib.suppress(FileNotFoundError):
            fd = os.open(lock, os.O_RDONLY | os.O_CLOEXEC)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return None
            except BaseException:
                os.close(fd)
                raise
            return fd
        private = lock.with_name(f"{lock.name}.{os.getpid()}.{threading.get_ident()}")
        fd = os.open(private, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.link(private, lock)
            return fd
        except FileExistsError:
            os.close(fd)
        except BaseException:
            os.close(fd)
            raise
        finally:
            private.unlink(missing_ok=True)
    raise OSError(f"{lock}: could not be created")


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
            opened = _open_locked(key / LOCK_NAME)
        except OSError as e:  # unwritable, or a filesystem without flock: refuse, never write unguarded
            raise InvalidInputError(f"{directory}: cannot lock the {what} ({e.strerror or e})") from None
        if opened is None:
            pid = holder_pid(key / LOCK_NAME)
            raise DirectoryBusyError(f"{directory}: another drsearch process (pid "
                                     f"{'unknown' if pid is None else pid}) is writing this {what}; wait "
                                     "for it to end, or stop it, then rerun")
        _held[key] = (opened, 1)
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


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` names a live process on this machine (one we may not signal counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


__all__ = ["LOCK_NAME", "DirLock", "entries", "holder_pid", "is_locked", "lock_dir", "pid_alive"]
