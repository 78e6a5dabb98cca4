"""``drsearch kg serve`` as a real subprocess on 127.0.0.1 (the tests' SPARQL endpoint)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ....helpers import DATA, REPO

KG = DATA / "kg/kg.ttl"
DOCS = DATA / "kg/docs.jsonl"
CLI = [sys.executable, "-c", "from drsearch.tools.cli import entry; entry()"]
"""The drsearch command line in a subprocess (this tree's sources)."""


@contextmanager
def kg_serve(data: Path = KG, port: int = 0) -> Iterator[str]:
    """Start ``drsearch kg serve --data DATA --port PORT`` (0: a free one); yields its endpoint URL."""
    with kg_serve_process(data, "--port", str(port)) as (url, _):
        yield url


@contextmanager
def kg_serve_process(data: Path = KG, *options: str) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Start ``drsearch kg serve --data DATA --port 0 OPTIONS`` (a later ``--port`` wins); yields its
    endpoint URL and process."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([*CLI, "kg", "serve", "--data", str(data), "--port", "0", *options],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if not line.startswith("http://127.0.0.1:"):
            proc.kill()
            raise AssertionError(f"kg serve did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}")
        yield line, proc
    finally:
        proc.terminate()
        proc.wait(10)
