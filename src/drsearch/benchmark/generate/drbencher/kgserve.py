"""``drsearch kg serve``: the SPARQL 1.1 protocol over :class:`~.kgstore.KGStore`, with bounded cost.

``GET /sparql?query=...`` and ``POST /sparql`` (form ``query=...`` or an
``application/sparql-query`` body). SELECT/ASK answer ``application/sparql-results+json``
(or XML, CSV, TSV by ``Accept``), CONSTRUCT/DESCRIBE ``text/turtle`` (or
``application/n-triples``). Every error is the project's one JSON error body
(``{"error": {"message", "type"}}``) with a 4xx/5xx status, never a dropped connection.

What one client can cost the server is bounded, with ``drsearch serve``'s own limits:

- connections are served by uvicorn with the server layer's
  :class:`~drsearch.server.protocol.LimitedHttpToolsProtocol` (idle and header timeouts,
  head size, connections per process) and bodies are read by its ``read_body``
  (``max_body_bytes``: a larger declared body is 413 before a byte is read);
- ``SERVICE`` (federation, which would make the server fetch any URL) is 400
  ``federation_refused`` before any work (:mod:`.kgquery`);
- each query runs in a worker process (:mod:`.kgworkers`) under the request's time limit
  (``time_limit_s``, from the request's start: 503 ``query_timeout``), killed at the
  deadline or when its client goes away; at most ``query_workers`` run at once;
- an answer larger than ``max_result_bytes`` is 422 ``result_too_large``, stopped when the
  serializer reaches the cap.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from ....contract import DrsearchError
from ....contract.listen import tcp_listener
from ....server.protocol import limited_protocol
from ....server.requests import read_body
from ....server.settings import ServerSettings
from .kgquery import uses_federation
from .kgstore import FEDERATION_REFUSED, KGAnswer, kg_error, read_kg
from .kgworkers import WorkerPool

ENDPOINT = "/sparql"
DEFAULT_TIME_LIMIT_S = 30.0
"""A query's default time limit: under the generator client's 60 s timeout, so that a query
that runs too long is the server's 503, not the client's timeout."""
_FORMS = ("application/x-www-form-urlencoded", "application/sparql-query")


class KGServeSettings(BaseModel):
    """Limits of ``drsearch kg serve``. Immutable; invalid values raise on creation.

    - ``http``: the connection and request limits shared with ``drsearch serve``
      (``ServerSettings``: ``time_limit_s`` is a query's time limit here, and
      ``max_body_bytes``, ``idle_timeout_s``, ``header_timeout_s``, ``max_header_bytes``,
      ``max_connections`` apply as they do there; the search fields are unused).
    - ``max_result_bytes``: the largest answer body (422 ``result_too_large`` beyond).
    - ``query_workers``: worker processes, each with its own copy of the graph: the most
      queries that run at once (others wait for one, within their time limit).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    http: ServerSettings = ServerSettings(time_limit_s=DEFAULT_TIME_LIMIT_S)
    max_result_bytes: int = Field(default=16 << 20, ge=1024, le=1 << 31)
    query_workers: int = Field(default=2, ge=1, le=64)


class KGApp:
    """The ASGI app of the endpoint over a started :class:`WorkerPool`."""

    def __init__(self, pool: WorkerPool, settings: KGServeSettings) -> None:
        self.pool, self.settings = pool, settings

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        deadline = time.monotonic() + self.settings.http.time_limit_s
        request = Request(scope, receive)
        try:
            answer = await self._answer(request, deadline, receive)
        except ClientDisconnect:
            return
        except DrsearchError as e:  # 408/413 of read_body
            answer = kg_error(e.http_status, e.error_type, e.message)
        if answer is None:  # the client went away: nobody to answer
            return
        headers = {"allow": "GET, POST"} if answer.status == 405 else None
        response = Response(answer.body, answer.status, headers, media_type=answer.content_type)
        await response(scope, receive, send)

    async def _answer(self, request: Request, deadline: float, receive: Any) -> KGAnswer | None:
        if request.url.path != ENDPOINT:
            return kg_error(404, "no_such_endpoint", f"no such path {request.url.path}; use {ENDPOINT}")
        if request.method == "GET":
            query = parse_qs(request.url.query).get("query", [""])[0]
        elif request.method == "POST":
            ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype not in _FORMS:
                return kg_error(415, "unsupported_media_type",
                                f"content type {ctype!r}: use {' or '.join(_FORMS)}")
            body = (await read_body(request, self.settings.http.max_body_bytes, deadline)).decode(
                "utf-8", errors="replace")
            query = body if ctype == "application/sparql-query" else parse_qs(body).get("query", [""])[0]
        else:
            return kg_error(405, "method_not_allowed", f"{request.method} {ENDPOINT}: use GET or POST")
        if not query:
            return kg_error(400, "missing_query", "missing query")
        if uses_federation(query):
            return kg_error(400, "federation_refused", FEDERATION_REFUSED)
        return await self.pool.answer(query, request.headers.get("accept"), deadline,
                                      self.settings.http.time_limit_s, _disconnected(receive))


async def _disconnected(receive: Any) -> None:
    """Returns when the client has gone away (after the request's body, only that can arrive)."""
    while (await receive())["type"] != "http.disconnect":
        pass


class _Stopped(Exception):
    """SIGINT/SIGTERM after uvicorn shut down (it re-raises the signal it caught)."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (0: a free one). OSError when it cannot bind."""
    return tcp_listener(host, port)


def serve_kg(path: Path, settings: KGServeSettings, host: str, port: int,
             on_listening: Callable[[str], None]) -> None:
    """Serve the Turtle file ``path`` until SIGINT/SIGTERM. Starts the query workers (KGDataError
    when the file does not parse, before binding), binds (OSError), calls ``on_listening`` with
    the endpoint URL, serves, and kills the workers on the way out. Call from the main thread."""
    import uvicorn

    pool = WorkerPool(path, read_kg(path), settings.query_workers, settings.max_result_bytes)
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        pool.start()
        sock = listen(host, port)
        name = f"[{host}]" if ":" in host else host
        on_listening(f"http://{name}:{sock.getsockname()[1]}{ENDPOINT}")
        config = uvicorn.Config(KGApp(pool, settings), http=limited_protocol(settings.http),
                                lifespan="off", log_level="warning", access_log=False, server_header=False,
                                timeout_graceful_shutdown=5,
                                # uvicorn annotates int but schedules it with call_later: seconds as float
                                timeout_keep_alive=settings.http.idle_timeout_s)  # type: ignore[arg-type]
        asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
    except _Stopped:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        pool.close()


__all__ = ["DEFAULT_TIME_LIMIT_S", "ENDPOINT", "KGApp", "KGServeSettings", "listen", "serve_kg"]
