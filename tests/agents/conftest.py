"""Agents fixtures: a real `drsearch serve` over the sample corpus, and the sample questions."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from ..helpers import DATA

QUESTIONS = DATA / "sample/questions.jsonl"
BLOCKED = DATA / "sample/blocked_docids.txt"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def search_server(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of `drsearch serve` (1 worker) with the sample blocklist (its 3 leak artifacts) applied."""
    exe = shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))
    port = _free_port()
    log = tmp_path_factory.mktemp("serve") / "serve.log"
    proc = subprocess.Popen([exe, "serve", "--database", str(sample_index), "--blocked-docids", str(BLOCKED),
                             "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                            stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"drsearch serve did not start: {log.read_text()[-800:]}")
            try:
                if httpx.get(base + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield base
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
