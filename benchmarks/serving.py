"""What the benchmark scripts that talk to a real `drsearch serve` share: the sample index, and
starting a server (the server layer's `drsearch.server.ServeProcess`: its own session, so one
signal stops it and its workers; `.stop()` stops it).

Scripts run as `python benchmarks/NAME.py`, so this directory is on sys.path and `import serving`
finds this module.
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from drsearch.server import ServeError, ServeProcess

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DOCS = REPO / "data" / "sample" / "docs.jsonl"
CACHE = REPO / "benchmarks" / ".cache"


def ensure_sample_db() -> Path:
    """The sample corpus's index, built once into benchmarks/.cache."""
    path = CACHE / "sample.sqlite3"
    if not path.exists():
        from drsearch.index import build, read_jsonl

        CACHE.mkdir(parents=True, exist_ok=True)
        build(read_jsonl(SAMPLE_DOCS), path)
    return path


def get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


def start_server(database: Path, *args: str, workers: int = 1, log: Path | None = None,
                 timeout: float = 60.0, env: dict[str, str] | None = None) -> ServeProcess:
    """`drsearch serve --log-level warning ARGS` on a free 127.0.0.1 port, returned once all
    `workers` are live (a request that reached the socket before the second worker is up would
    be counted against the server); a script's one-line exit when it does not come up. ``env``:
    variables added to the server's environment (``PYTHONPATH``: serve another tree's code)."""
    try:
        return ServeProcess(database, "--log-level", "warning", *args, workers=workers, log=log,
                            start_timeout_s=timeout, stop_timeout_s=15.0, env=env).start()
    except ServeError as e:
        raise SystemExit(e.message) from None
