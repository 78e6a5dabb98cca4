"""The support corpus over HTTP for V2: ``drsearch serve`` as a child process, and the
searcher V2's episodes use (docs/GENERATE.md, "The DrBencher-style generator").

V2 searches exactly as ``drsearch run --search URL`` does: an :class:`HttpSearcher` (the
agents layer's client, which fixes the server's ``x-drsearch-identity`` on its first answer and
refuses any later answer under another one) behind the pipeline's replay cache. Before the
first episode the served corpus is checked against the support corpus of this output
directory (corpus identity and blocklist SHA-256): a server of another corpus or with a
blocklist is refused by name, never searched. A replay asks no server: the cache answers,
keyed by the support corpus's identity.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

from ....agents import EngineSearcher, HttpSearcher, SearcherError
from ....index import CorpusInfo, Engine, InvalidInputError, ToolResponse
from ..errors import GenerateError

SERVE_START_S = 60.0
"""How long a started ``drsearch serve`` may take to answer ``/health``."""

_CLI = ("-c", "from drsearch.tools.cli import entry; entry()")
"""The user's ``drsearch`` command in this interpreter (run as a process, not imported: the
benchmark layer does not import the tools layer)."""


def support_corpus(database: Path) -> CorpusInfo:
    """The identity of the support corpus as an in-process engine reports it (no blocklist)."""
    with Engine.open(database) as engine:
        return EngineSearcher(engine).corpus()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def drsearch_serve(database: Path) -> Iterator[str]:
    """``drsearch serve --database DATABASE --host 127.0.0.1 --port P --workers 1`` (a free
    port) for the ``with`` block: yields its base URL once ``/health`` answers 200, and stops
    it (its whole process group) on exit. GenerateError, with the tail of its log, when it
    exits or does not answer within :data:`SERVE_START_S`."""
    port = _free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, *_CLI, "serve", "--database", str(database),
                                 "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + SERVE_START_S
            while True:
                if proc.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    tail = log.read().decode("utf-8", "replace").strip().splitlines()[-3:]
                    state = f"exited {proc.returncode}" if proc.returncode is not None else \
                        f"no /health answer in {SERVE_START_S:g} s"
                    raise GenerateError(f"drsearch serve of {database} on {base}: {state}: "
                                        f"{' | '.join(tail) or '(no output)'}")
                try:
                    if httpx.get(base + "/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.1)
            yield base
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def probe_search_server(search_url: str) -> None:
    """``GET /health`` of ``search_url`` once (a run's probe, before anything is written):
    InvalidInputError (exit 2) when it does not answer as a drsearch server."""
    http = HttpSearcher(httpx.Client(base_url=search_url.rstrip("/"), timeout=10.0), attempts=1)
    try:
        http.corpus()
    except SearcherError as e:
        raise InvalidInputError(f"v2.search_url {search_url}: the search server is not usable "
                                f"({e.message})") from None
    finally:
        http.close()


@contextmanager
def served_searcher(search_url: str, support: CorpusInfo) -> Iterator[HttpSearcher]:
    """An :class:`HttpSearcher` of ``search_url`` once its ``/health`` names the support
    corpus: InvalidInputError (exit 2) naming both identities otherwise, GenerateError when
    the server does not answer."""
    http = HttpSearcher.connect(search_url)
    try:
        try:
            served = http.corpus()
        except SearcherError as e:
            raise GenerateError(f"v2: the search server {search_url} does not answer ({e.message})") from None
        if served.fleet_identity != support.fleet_identity:
            raise InvalidInputError(
                f"v2: {search_url} serves corpus {served.identity} with blocklist {served.blocklist_sha256}, "
                f"not this run's support corpus {support.identity} without a blocklist: serve "
                "GEN_DIR/support.sqlite3 (drsearch serve --database GEN_DIR/support.sqlite3)")
        yield http
    finally:
        http.close()


class RecordedCorpus:
    """The searcher of a replay: the support corpus's identity, no backend (the replay
    cache answers every call; it never calls these)."""

    def __init__(self, corpus: CorpusInfo) -> None:
        self._corpus = corpus

    def corpus(self) -> CorpusInfo:
        return self._corpus

    def search(self, query: str, k: int) -> ToolResponse:
        raise GenerateError("v2: a replay searched live (the replay cache should have answered)")

    def open(self, *, docid: str | None, url: str | None, offset: int, length: int | None) -> ToolResponse:
        raise GenerateError("v2: a replay opened live (the replay cache should have answered)")


__all__ = ["SERVE_START_S", "RecordedCorpus", "drsearch_serve", "probe_search_server", "served_searcher",
           "support_corpus"]
