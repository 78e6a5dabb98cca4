"""What the benchmark scripts that talk to a real `drsearch serve` share: the sample index, a free
loopback port, starting a server in its own session (so one killpg stops it and its workers), and
stopping it.

Scripts run as `python benchmarks/NAME.py`, so this directory is on sys.path and `import serving`
finds this module.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str, timeout: float = 5.0) -> Any:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return json.loads(r.read())


@dataclass(frozen=True)
class Served:
    proc: subprocess.Popen[bytes]
    port: int

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def start_server(database: Path, *args: str, workers: int = 1, log: Path | None = None,
                 timeout: float = 60.0) -> Served:
    """`drsearch serve` on 127.0.0.1, returned once all `workers` answer /stats.

    Waiting for every worker, not just the first, matters to a load test: a request that reaches
    the socket before the second worker is up would be counted against the server.
    """
    exe = Path(sys.executable).with_name("drsearch")
    port = free_port()
    cmd = [str(exe), "serve", "--database", str(database), "--host", "127.0.0.1", "--port", str(port),
           "--workers", str(workers), "--log-level", "warning", *args]
    out = log.open("wb") if log is not None else subprocess.DEVNULL
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    served = Served(proc, port)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text()[-500:] if log is not None else ""
            raise SystemExit(f"drsearch serve exited with {proc.returncode}: {tail}")
        try:
            if get_json(served.base + "/stats", 1.0)["server"]["workers"]["live"] >= workers:
                return served
        except OSError:
            pass
        time.sleep(0.2)
    stop_server(proc)
    raise SystemExit(f"drsearch serve not up within {timeout:.0f} s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's session (the server and its workers), SIGKILL after 15 s."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
