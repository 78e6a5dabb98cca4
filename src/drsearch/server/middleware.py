"""The outermost layer of the app: per-endpoint timing and counting, and the last resort.

A plain ASGI middleware (no ``BaseHTTPMiddleware``: that costs a task and a stream per
request). For every HTTP request it records status and latency in the metrics store,
tags the response with the worker's pid (``x-drsearch-worker``: lets tests and the
load script see which worker answered) and with the served corpus and blocklist
(``x-drsearch-identity``: a client or a load balancer's health check behind which
replicas may differ refuses an answer from the wrong one), counts a client that went away before its answer
(e.g. mid-body) as a client disconnect (499, DEBUG log), and turns any other exception that escaped the
routes into a JSON 500 ``internal_error`` without a traceback in the body. The log
gets one line (the traceback only at DEBUG level).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping
from typing import Any

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..contract import IDENTITY_HEADER
from .errors import JSON, InternalServerError, error_body
from .metrics import CLIENT_GONE, ENDPOINTS, MetricsStore

logger = logging.getLogger("drsearch.server")
WORKER_HEADER = b"x-drsearch-worker"
_OTHER = ENDPOINTS.index("other")


class ServerMiddleware:
    """Wraps an ASGI app: counts/times each request by ``endpoints[path]``; catches bugs."""

    def __init__(self, app: ASGIApp, metrics: MetricsStore, endpoints: Mapping[str, str],
                 identity: str) -> None:
        self.app = app
        self.metrics = metrics
        self.endpoints = {path: ENDPOINTS.index(name) for path, name in endpoints.items()}
        self._tags = [(WORKER_HEADER, str(metrics.pid).encode()),
                      (IDENTITY_HEADER.encode(), identity.encode("ascii"))]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 0

        async def send_tagged(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), *self._tags]
            await send(message)

        try:
            await self.app(scope, receive, send_tagged)
        except ClientDisconnect:
            # The client went away mid-body: nothing to answer, and not the server's fault.
            logger.debug("client disconnected during %s %s", scope.get("method"), scope.get("path"))
            status = status or CLIENT_GONE
        except Exception as exc:
            logger.error("internal error on %s %s: %s: %s", scope.get("method"), scope.get("path"),
                         exc.__class__.__name__, exc, exc_info=logger.isEnabledFor(logging.DEBUG))
            if status == 0:
                with contextlib.suppress(Exception):  # the client may be gone too
                    await self._internal_error(send_tagged, exc)
            status = status or 500
        finally:
            endpoint = self.endpoints.get(scope.get("path", ""), _OTHER)
            self.metrics.observe(endpoint, status or CLIENT_GONE, time.perf_counter() - start)

    @staticmethod
    async def _internal_error(send: Send, exc: Exception) -> None:
        err = InternalServerError(f"internal error ({exc.__class__.__name__}); see the server log")
        body = error_body(err.error_type, err.message)
        headers: list[tuple[bytes, bytes]] = [
            (b"content-type", JSON.encode()), (b"content-length", str(len(body)).encode())]
        start: dict[str, Any] = {"type": "http.response.start", "status": err.http_status,
                                 "headers": headers}
        await send(start)
        await send({"type": "http.response.body", "body": body})


__all__ = ["WORKER_HEADER", "ServerMiddleware"]
