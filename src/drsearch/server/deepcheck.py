"""The background deep verification of ``drsearch serve`` (one per server, low priority).

``drsearch serve --verify fast`` (the default) starts the server after the fast checks and
runs this module once, in a child process of the server (not of any worker) at the lowest
CPU priority (nice 19), so that its CPU time (about 13 CPU-seconds per GB of index file: ~37
at DR-256 scale, docs/SERVER.md) is taken almost only from time the workers leave idle::

    python -m drsearch.server.deepcheck DATABASE RUN_DIR

It records ``pending`` at once (serve also does, before starting it), then ``ok`` or
``failed`` with the first problem in ``RUN_DIR/verify.json``, which every worker's
/health reports (see :mod:`drsearch.server.health`). Exit status 0 when the file passed,
1 when it failed.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

from ..contract import DrsearchError
from .health import write_verify_state
from .verify import verify_corpus


def public_message(message: str, database: Path) -> str:
    """``message`` with every spelling of ``database``'s path cut to its file name: /health
    shows it to any client, and where the server keeps its file is no client's business (as
    ``/stats``'s ``file.path``). The longest spelling first, so none leaves a tail behind."""
    spellings = {str(database), os.path.abspath(database), str(database.resolve())}
    for spelling in sorted(spellings, key=len, reverse=True):
        message = message.replace(spelling, database.name)
    return message


def run(database: Path, run_dir: Path) -> bool:
    """Deep-verify ``database``; record the outcome in ``run_dir``. True when it passed."""
    write_verify_state(run_dir, "pending")
    try:
        verify_corpus(database, "deep")
    except DrsearchError as e:
        write_verify_state(run_dir, "failed", public_message(e.message, database))
        return False
    except Exception as e:  # an unreadable file can raise anything: still a failed check
        write_verify_state(run_dir, "failed", public_message(f"{e.__class__.__name__}: {e}", database))
        return False
    write_verify_state(run_dir, "ok")
    return True


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m drsearch.server.deepcheck DATABASE RUN_DIR", file=sys.stderr)
        return 2
    lower_priority()
    return 0 if run(Path(args[0]), Path(args[1])) else 1


def lower_priority() -> None:
    """Run this process at nice 19: beside a busy worker (nice 0) it gets about 1.5% of a core
    (CFS weights 15 against 1024). Not ``SCHED_IDLE``: on a server whose cores are never idle
    that would never finish, and /health would say ``pending`` for as long as it runs. Where
    lowering is not permitted, the process keeps the priority it has."""
    with contextlib.suppress(OSError):
        os.nice(19)


if __name__ == "__main__":
    sys.exit(main())
