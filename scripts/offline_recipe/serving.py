"""A real ``drsearch serve`` on 127.0.0.1 for as long as a ``with`` block runs."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx


class ServeError(RuntimeError):
    """``drsearch serve`` did not come up."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def drsearch_serve(database: Path, log: Path, *args: str) -> Iterator[str]:
    """A real ``drsearch serve`` (1 worker) on 127.0.0.1 over ``database``, extra ``args`` appended;
    yields its base URL once /health answers, and stops it (its whole session) on exit.
    ServeError (with the log's tail) if it exits or does not answer within 60 s."""
    exe = shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))
    port = free_port()
    proc = subprocess.Popen([exe, "serve", "--database", str(database), *args, "--host", "127.0.0.1",
                             "--port", str(port), "--workers", "1"],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ServeError(f"drsearch serve did not start: {log.read_text()[-800:]}")
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield base
    finally:
        # Only a live server is signalled: killpg on an exited one raises ProcessLookupError,
        # which would hide the ServeError above; one that ignores SIGTERM is killed.
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
