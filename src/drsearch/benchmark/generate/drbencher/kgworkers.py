"""Query worker processes of ``drsearch kg serve``: a time limit that really stops the work.

pyoxigraph has no way to interrupt a running query (no timeout, no cancellation), and a
thread cannot be stopped, so each query runs in a worker process that holds its own copy
of the store: the endpoint kills it (SIGKILL) when the query's deadline passes or its
client goes away, and starts a replacement from the same bytes. A killed query therefore
costs no CPU after its deadline; a worker also dies with its parent (``PR_SET_PDEATHSIG``
on Linux, and end of input otherwise).

Wire format on the worker's stdin/stdout: frames of an 8-byte big-endian length and that
many bytes. The parent sends the Turtle bytes, the worker answers ``{"ready": N}`` (N
triples) or ``{"error": MESSAGE}`` (a file that does not parse); then, per query, the
parent sends ``{"query", "accept"}`` and the worker answers a header frame
``{"status", "content_type", "error_type"}`` and a body frame.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable
from pathlib import Path
from typing import IO, Any

from ..errors import GenerateError
from .errors import KGDataError
from .kgstore import KGAnswer, KGStore, kg_error

logger = logging.getLogger("drsearch.kg")
START_TIMEOUT_S = 300.0
"""How long a worker may take to load the graph (a large Turtle file parses at ~1 M triples/s)."""


class _WorkerGone(Exception):
    """The worker's pipe closed (it was killed or it died) or its deadline passed."""


def _frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(8, "big") + payload


def _read_exact(fd: int, n: int, deadline: float | None) -> bytes:
    """``n`` bytes of ``fd``; _WorkerGone at its end or past ``deadline`` (None: no deadline)."""
    parts: list[bytes] = []
    while n > 0:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise _WorkerGone("deadline")
        chunk = os.read(fd, min(n, 1 << 20))
        if not chunk:
            raise _WorkerGone("end of output")
        parts.append(chunk)
        n -= len(chunk)
    return b"".join(parts)


def _read_frame(fd: int, deadline: float | None) -> bytes:
    return _read_exact(fd, int.from_bytes(_read_exact(fd, 8, deadline), "big"), deadline)


class QueryWorker:
    """One worker process holding the store; used by one query at a time."""

    def __init__(self, path: Path, data: bytes, max_result_bytes: int) -> None:
        """Start it and hand it ``data`` (it loads the graph meanwhile: :meth:`wait_ready`).
        GenerateError when it cannot start."""
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", __name__, str(path), str(max_result_bytes)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True)
        except OSError as e:
            raise GenerateError(f"kg serve: a query worker did not start ({e})") from None
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._stdin: IO[bytes] = self._proc.stdin
        self._fd = self._proc.stdout.fileno()
        try:
            self._stdin.write(_frame(data))
            self._stdin.flush()
        except OSError as e:
            self.kill()
            raise GenerateError(f"kg serve: a query worker did not start ({e})") from None

    def wait_ready(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Return once it has loaded the graph. KGDataError (naming the file) when the Turtle
        does not parse; GenerateError when it died or did not load it within ``timeout_s``."""
        try:
            hello = json.loads(_read_frame(self._fd, time.monotonic() + timeout_s))
        except (OSError, ValueError, _WorkerGone) as e:
            self.kill()
            raise GenerateError(f"kg serve: a query worker did not load the graph ({e})") from None
        if "error" in hello:
            self.kill()
            raise KGDataError(hello["error"])

    @property
    def pid(self) -> int:
        return self._proc.pid

    def ask(self, query: str, accept: str | None, deadline: float) -> KGAnswer | None:
        """The worker's answer to ``query``, or None when the deadline passed first or the
        worker is gone (killed by :meth:`kill` from another thread, or died): the worker is
        then dead and must be replaced. Blocks; call it from a thread."""
        try:
            self._stdin.write(_frame(json.dumps({"query": query, "accept": accept}).encode()))
            self._stdin.flush()
            head = json.loads(_read_frame(self._fd, deadline))
            body = _read_frame(self._fd, deadline)
        except (OSError, ValueError, _WorkerGone):
            self.kill()
            return None
        return KGAnswer(head["status"], head["content_type"], body, head["error_type"])

    def kill(self) -> None:
        """Stop the worker at once (SIGKILL) and reap it; safe to call twice or from another thread."""
        if self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self._proc.kill()
        self._proc.wait()
        for pipe in (self._proc.stdin, self._proc.stdout):
            with contextlib.suppress(OSError):
                if pipe is not None:
                    pipe.close()


class WorkerPool:
    """``size`` query workers over one graph; each query borrows one for its duration."""

    def __init__(self, path: Path, data: bytes, size: int, max_result_bytes: int) -> None:
        self.path, self._data, self.size, self.max_result_bytes = path, data, size, max_result_bytes
        self._started: list[QueryWorker] = []
        self._idle: asyncio.Queue[QueryWorker] | None = None
        self._all: set[QueryWorker] = set()
        self._replacing: set[asyncio.Task[None]] = set()

    def start(self) -> None:
        """Start every worker (blocks until each has loaded the graph). KGDataError when the
        graph does not parse."""
        workers = [self._launch() for _ in range(self.size)]  # they load the graph in parallel
        for worker in workers:
            worker.wait_ready()
        self._started.extend(workers)

    def _launch(self) -> QueryWorker:
        worker = QueryWorker(self.path, self._data, self.max_result_bytes)
        self._all.add(worker)
        return worker

    def _spawn(self) -> QueryWorker:
        worker = self._launch()
        try:
            worker.wait_ready()
        except BaseException:
            self._all.discard(worker)
            raise
        return worker

    def pids(self) -> list[int]:
        """The process ids of the live workers."""
        return sorted(w.pid for w in self._all)

    def _queue(self) -> asyncio.Queue[QueryWorker]:
        if self._idle is None:  # created in the server's event loop, on first use
            self._idle = asyncio.Queue()
            for worker in self._started:
                self._idle.put_nowait(worker)
            self._started.clear()
        return self._idle

    async def answer(self, query: str, accept: str | None, deadline: float, time_limit_s: float,
                     disconnected: Awaitable[None]) -> KGAnswer | None:
        """The answer to ``query`` from a free worker, by ``deadline`` (``time.monotonic()``):
        503 ``query_timeout`` past it (the worker is killed and replaced); None when the client
        went away first (``disconnected`` completed: the worker is killed too)."""
        queue = self._queue()
        gone: asyncio.Future[None] = asyncio.ensure_future(disconnected)
        try:
            getting: asyncio.Future[QueryWorker] = asyncio.ensure_future(queue.get())
            waiting: set[asyncio.Future[Any]] = {getting, gone}
            done, _ = await asyncio.wait(waiting, timeout=max(0.0, deadline - time.monotonic()),
                                         return_when=asyncio.FIRST_COMPLETED)
            if getting not in done:
                if not getting.cancel():  # got one just now: give it back
                    queue.put_nowait(getting.result())
                return None if gone in done else _timeout(time_limit_s, waiting=True)
            worker = getting.result()
            asking = asyncio.get_running_loop().run_in_executor(None, worker.ask, query, accept, deadline)
            waiting = {asking, gone}
            try:
                await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            finally:  # the client left, or the server is shutting down: stop the work now
                if not asking.done():
                    worker.kill()
            got = await asking
            if got is None:
                self._all.discard(worker)
                replacing = asyncio.get_running_loop().create_task(self._replace())
                self._replacing.add(replacing)  # a reference, so that the task is not collected
                replacing.add_done_callback(self._replacing.discard)
                return None if gone.done() else _timeout(time_limit_s, waiting=False)
            queue.put_nowait(worker)
            return got
        finally:
            gone.cancel()

    async def _replace(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                worker = await loop.run_in_executor(None, self._spawn)
            except (GenerateError, KGDataError) as e:  # e.g. out of memory: try again, never give up the slot
                logger.error("kg serve: a query worker did not start (%s); retrying in 1 s", e)
                await asyncio.sleep(1.0)
                continue
            self._queue().put_nowait(worker)
            return

    def close(self) -> None:
        """Kill every worker."""
        for worker in list(self._all):
            worker.kill()
        self._all.clear()


def _timeout(time_limit_s: float, *, waiting: bool) -> KGAnswer:
    where = "waiting for a free query worker" if waiting else "the query was stopped"
    return kg_error(503, "query_timeout", f"query time limit of {time_limit_s:g} s exceeded ({where}; "
                                          "--time-limit)")


# -- the worker process ---------------------------------------------------------------------------

def _die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (prctl PR_SET_PDEATHSIG)."""
    if sys.platform != "linux":
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG = 1


def _worker_main(argv: list[str]) -> int:
    _die_with_parent()
    path, max_result_bytes = Path(argv[0]), int(argv[1])
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    never = None

    def send(payload: bytes) -> None:
        out.write(_frame(payload))
        out.flush()

    try:
        data = _read_frame(inp.fileno(), never)
        store = KGStore(path, data)
    except _WorkerGone:
        return 0
    except KGDataError as e:
        send(json.dumps({"error": e.message}).encode())
        return 2
    send(json.dumps({"ready": len(store)}).encode())
    while True:
        try:
            request: dict[str, Any] = json.loads(_read_frame(inp.fileno(), never))
        except _WorkerGone:  # the parent closed our input: done
            return 0
        got = store.respond(request["query"], request.get("accept"), max_result_bytes)
        send(json.dumps({"status": got.status, "content_type": got.content_type,
                         "error_type": got.error_type}).encode())
        send(got.body)


if __name__ == "__main__":
    sys.exit(_worker_main(sys.argv[1:]))


__all__ = ["START_TIMEOUT_S", "QueryWorker", "WorkerPool"]
