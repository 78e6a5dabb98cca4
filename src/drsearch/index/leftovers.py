"""What a killed build leaves beside its output, and the rule for clearing it.

A build writes ``.NAME.sqlite3.tmp-PID`` beside ``--out`` and stages its input in a scratch
directory ``drsearch-build-*/`` there (tens of MB); both go when the build ends, except when
the process is killed (``kill -9``, the OOM killer, a lost machine). The next build into the
same directory removes only what is provably a dead build's:

- a temporary output whose PID is not a live process (a live PID, even one reused by another
  program, is left alone: wrongly keeping a file is cheap, deleting a live build's is not);
- a scratch directory whose lock file (:mod:`drsearch.contract.dirlock`: it appears already
  locked, is held by its build for its whole life and dropped by the kernel at death) is not
  held. A scratch directory without a lock file (made before builds locked them, or by a
  build starting this very moment) is left alone.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from ..contract.dirlock import LOCK_NAME, is_locked, pid_alive

SCRATCH_PREFIX = "drsearch-build-"


def _dead_holder(scratch: Path) -> bool:
    return (scratch / LOCK_NAME).is_file() and not is_locked(scratch)


def dead_leftovers(out: Path) -> list[Path]:
    """The temporary output files of ``out`` and scratch directories beside it that dead
    builds left (see the module doc), in name order."""
    found: list[Path] = []
    tmp_name = re.compile(rf"\.{re.escape(out.name)}\.tmp-(\d+)")
    try:
        siblings = sorted(out.parent.iterdir())
    except OSError:
        return found
    for path in siblings:
        if path.is_symlink():  # a link is never a build's own file
            continue
        m = tmp_name.fullmatch(path.name)
        dead_tmp = m is not None and path.is_file() and not pid_alive(int(m.group(1)))
        dead_scratch = path.name.startswith(SCRATCH_PREFIX) and path.is_dir() and _dead_holder(path)
        if dead_tmp or dead_scratch:
            found.append(path)
    return found


def remove_dead_leftovers(out: Path) -> list[Path]:
    """Remove :func:`dead_leftovers` of ``out``; returns what was removed (a path that
    cannot be removed is skipped: it is litter, not a reason to fail the build)."""
    removed = []
    for path in dead_leftovers(out):
        try:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:
            continue
        removed.append(path)
    return removed


__all__ = ["SCRATCH_PREFIX", "dead_leftovers", "remove_dead_leftovers"]
