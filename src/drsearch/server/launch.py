"""``drsearch serve`` as a child process: start it, wait until it answers, stop it.

The one helper every caller that needs a real server for a while uses (the construction
recipe's driver, the DrBencher-style generator's V2 stage, the benchmark scripts, the tests)::

    with ServeProcess(database, "--blocked-docids", "blocked.txt") as server:
        httpx.get(server.url + "/search", ...)

Contract:

- The server runs as ``drsearch serve --database DATABASE ARGS... --host H --port P
  --workers W`` in its own session (so one signal reaches it and all its workers), on a
  free loopback port unless ``port`` is given; when a free port is taken by someone else
  before the server binds it, another one is tried (at most :data:`PORT_ATTEMPTS` in all).
- :meth:`ServeProcess.start` returns once ``/health`` answers 200 and, with more than one
  worker, ``/stats`` counts every worker live (a request sent earlier could reach a socket
  no worker serves yet). :class:`ServeError`, with the tail of the server's log, when the
  process exits first or ``start_timeout_s`` passes (the server is then stopped).
- :meth:`ServeProcess.stop` signals only a live server (``killpg`` on an exited group
  raises, which would hide the error that stopped it), SIGTERM first and SIGKILL when it
  has not exited ``stop_timeout_s`` later.
- A server still running when this interpreter exits is stopped then (``atexit``).
- Everything the server writes to its temporary directory (the per-run counter directory
  ``drsearch-serve-*`` that ``drsearch serve`` removes itself on a graceful stop) lives in
  a directory of this helper's (the child's ``TMPDIR``), removed once the server is gone:
  also after a SIGKILL, which no process can clean up after itself.

Only the standard library: no HTTP client dependency (httpx is the ``agents`` extra's).
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from ..contract import DrsearchError
from ..contract.retry import GaveUp, RetryPolicy, TryAgain, retry

DRSEARCH: tuple[str, ...] = (sys.executable, "-c", "from drsearch.tools.cli import entry; entry()")
"""The ``drsearch`` command of this interpreter (run as a process, never imported: the layers
below ``tools`` do not import it). Unlike a ``drsearch`` found on PATH, it is the install, or
the ``PYTHONPATH`` tree, that the caller itself runs."""

PORT_ATTEMPTS = 3
"""Starts tried on fresh free ports when the chosen one was taken before the server bound it."""

_RUNNING: weakref.WeakSet[ServeProcess] = weakref.WeakSet()
"""Started and not yet stopped: stopped when this interpreter exits (a caller that never
reached its ``stop()``, say a test that failed in between), so no server outlives it."""

_BUSY = ("cannot bind (address already in use)", "address already in use")
_LOG_TAIL_CHARS = 800


class ServeError(DrsearchError):
    """A ``drsearch serve`` child did not come up: it exited at start, or did not answer
    within its start time-out. The message names the database, the address and the tail of
    the server's log (why it exited)."""

    exit_code = 1
    error_type = "serve_error"


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free on ``host`` a moment ago (the OS's choice for port 0)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


READY_POLL_S = 0.1
"""How often a starting server is asked whether it is ready."""

# No proxy for loopback: urllib would otherwise honour http_proxy from the environment.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _get(url: str, timeout: float) -> tuple[int, bytes]:
    try:
        with _OPENER.open(url, timeout=timeout) as r:
            return int(r.status), bytes(r.read())
    except urllib.error.HTTPError as e:
        return int(e.code), b""


class ServeProcess:
    """One ``drsearch serve`` child process (module docstring: the contract).

    ``args`` are extra ``drsearch serve`` flags; ``--database``, ``--host``, ``--port`` and
    ``--workers`` come from the parameters and win over the same flags in ``args``. ``log``:
    the file the server's stdout and stderr go to (truncated at start; kept), else one in the
    helper's temporary directory (removed with it). ``program``: the command that is
    ``drsearch`` (:data:`DRSEARCH`). ``env``: variables added to this process's environment (a
    ``TMPDIR`` there replaces the helper's own: what the server leaves in it is the caller's).
    A context manager: ``with`` starts it (unless started already) and stops it.
    """

    def __init__(self, database: Path | str, *args: str, host: str = "127.0.0.1", port: int | None = None,
                 workers: int = 1, log: Path | None = None, start_timeout_s: float = 60.0,
                 stop_timeout_s: float = 20.0, program: Sequence[str] = DRSEARCH,
                 env: Mapping[str, str] | None = None) -> None:
        if workers < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self.database = Path(database)
        self.args = tuple(args)
        self.host = host
        self.workers = workers
        self.start_timeout_s = start_timeout_s
        self.stop_timeout_s = stop_timeout_s
        self.program = tuple(program)
        self._fixed_port = port
        self._port: int | None = port
        self._log_path = log
        self._env = dict(env or {})
        self._tmp: Path | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    # -- what a caller reads --------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("the server has not been started")
        return self._port

    @property
    def url(self) -> str:
        """``http://HOST:PORT`` (no trailing slash)."""
        return f"http://{self.host}:{self.port}"

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            raise RuntimeError("the server has not been started")
        return self._proc

    @property
    def pid(self) -> int:
        """The server's process id, also its process group's and session's."""
        return self.proc.pid

    @property
    def tmp_dir(self) -> Path:
        """The server's ``TMPDIR`` while it runs (gone once it is stopped)."""
        if self._tmp is None:
            raise RuntimeError("the server is not running")
        return self._tmp

    @property
    def log_path(self) -> Path:
        if self._log_path is not None:
            return self._log_path
        return self.tmp_dir / "serve.log"

    def log_tail(self, chars: int = _LOG_TAIL_CHARS) -> str:
        """The end of the server's log on one line ('(no output)' when empty or gone)."""
        try:
            text = self.log_path.read_bytes()[-chars:].decode("utf-8", "replace")
        except (OSError, RuntimeError):
            text = ""
        return " | ".join(line.strip() for line in text.splitlines() if line.strip()) or "(no output)"

    # -- starting ---------------------------------------------------------------------------

    def start(self) -> ServeProcess:
        """Start the server and wait until it answers; returns ``self``. ServeError otherwise
        (the server stopped and its temporary directory removed)."""
        if self._proc is not None:
            raise RuntimeError("a ServeProcess starts once; make another one")
        self._tmp = Path(tempfile.mkdtemp(prefix="drsearch-launch-"))
        try:
            for attempt in range(1, PORT_ATTEMPTS + 1):
                self._port = self._fixed_port if self._fixed_port is not None else free_port(self.host)
                self._spawn()
                failure = self._wait_ready()
                if failure is None:
                    _RUNNING.add(self)
                    return self
                self._halt()
                tail = self.log_tail()
                port_taken = any(b in tail.lower() for b in _BUSY)
                if not (port_taken and self._fixed_port is None and attempt < PORT_ATTEMPTS):
                    raise ServeError(f"drsearch serve of {self.database} on {self.url}: {failure}: {tail}")
                self._proc = None
            raise AssertionError("unreachable")  # pragma: no cover
        except BaseException:  # ServeError, or an interrupt while waiting: no server is left behind
            self._abort()
            raise

    def _spawn(self) -> None:
        assert self._tmp is not None
        cmd = [*self.program, "serve", "--database", str(self.database), *self.args, "--host", self.host,
               "--port", str(self.port), "--workers", str(self.workers)]
        env = {**os.environ, "TMPDIR": str(self._tmp), **self._env}
        with self.log_path.open("wb") as out:  # the child holds its own descriptor
            self._proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                          env=env, start_new_session=True)

    def _wait_ready(self) -> str | None:
        """None once the server is ready, else why not (it exited, or the deadline passed)."""
        proc = self.proc
        healthy = False

        def attempt(_: int) -> str | None:
            nonlocal healthy
            if proc.poll() is not None:
                return f"exited {proc.returncode} before answering"
            last = "no answer"
            try:
                if not healthy:
                    status, _body = _get(self.url + "/health", 1.0)
                    healthy = status == 200
                    last = f"/health {status}"
                if healthy:
                    if self.workers == 1:
                        return None
                    status, body = _get(self.url + "/stats", 1.0)
                    live = _live_workers(body) if status == 200 else None
                    last = f"/stats {status}, {live} of {self.workers} workers live"
                    if live is not None and live >= self.workers:
                        return None
            except (OSError, ValueError) as e:  # not listening yet, reset, a half-written answer
                last = f"{e.__class__.__name__}: {e}"
            raise TryAgain(last)

        # a steady poll (backoff capped at its start) until the start time is spent
        poll = RetryPolicy(max_attempts=None, backoff_s=READY_POLL_S, backoff_max_s=READY_POLL_S,
                           deadline_s=self.start_timeout_s)
        try:
            return retry(attempt, poll)
        except GaveUp as e:
            return f"not ready within {self.start_timeout_s:g} s (last: {e.last.reason})"

    # -- stopping ---------------------------------------------------------------------------

    def stop(self) -> int | None:
        """Stop the server (SIGTERM, SIGKILL after ``stop_timeout_s``) if it is running, and
        remove its temporary directory. Returns its exit status (None if never started)."""
        try:
            if self._proc is None:
                return None
            self._halt()
            return self._proc.returncode
        finally:
            self._cleanup()

    def kill(self) -> int | None:
        """SIGKILL the server and all its workers now (a crash, for tests and fleet drills),
        and remove its temporary directory."""
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)  # not yet reaped: the group still exists
            self._proc.wait()
        return self.stop()

    def _halt(self) -> None:
        proc = self.proc
        # Only a live server is signalled: killpg on an exited one raises ProcessLookupError,
        # which would hide the error that stopped it. One that ignores SIGTERM is killed.
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(self.stop_timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def _abort(self) -> None:
        if self._proc is not None:
            self._halt()
        self._cleanup()

    def _cleanup(self) -> None:
        _RUNNING.discard(self)
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def __enter__(self) -> ServeProcess:
        return self if self._proc is not None else self.start()  # also ``with ServeProcess(...).start()``

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __repr__(self) -> str:
        if self._proc is None:
            state = "not started"
        else:
            code = self._proc.poll()
            state = f"pid {self._proc.pid}, " + ("running" if code is None else f"exited {code}")
        return f"ServeProcess({self.database}, {self.host}:{self._port}, {state})"


@atexit.register
def _stop_all() -> None:
    for server in list(_RUNNING):
        server.stop()


def _live_workers(body: bytes) -> int | None:
    data: Any = json.loads(body)
    live = data.get("server", {}).get("workers", {}).get("live") if isinstance(data, dict) else None
    return live if isinstance(live, int) else None


__all__ = ["DRSEARCH", "PORT_ATTEMPTS", "ServeError", "ServeProcess", "free_port"]
