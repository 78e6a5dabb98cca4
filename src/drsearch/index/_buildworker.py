"""The build's tokenizing worker process (``BuildSettings(threads=2)``); see build.py.

Run as ``python -m drsearch.index._buildworker FD TMPDIR SPILL PRECHUNKED SETTINGS_JSON CONTROL``
by the build only: FD is the write end of the pipe the build reads; PRECHUNKED 0, 1 or
``passages`` (a passage file's staged input); CONTROL the read end of the
pipe that wakes a streamed build's worker when more documents are staged (-1: not streamed).
"""

from __future__ import annotations

import sys
from multiprocessing.connection import Connection
from pathlib import Path

from .build import tokenize_worker
from .settings import BuildSettings


def main(argv: list[str]) -> int:
    fd, tmpdir, spill, prechunked, settings, control = argv
    out = Connection(int(fd), readable=False)
    try:
        tokenize_worker(Path(tmpdir), BuildSettings.model_validate_json(settings), prechunked != "0",
                        Path(spill), out, None if int(control) < 0 else int(control),
                        passages=prechunked == "passages")
    finally:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
