"""The request path of ``POST /search``, ``/open`` and ``/retrieve`` without the framework.

FastAPI keeps describing and routing the API (the OpenAPI document, 404/405, every other
endpoint), but an engine call per request is a fraction of a millisecond, and the layers a
request crosses in FastAPI and Starlette (their error middlewares, the router's matching,
the dependency solver, a Request object, a Response object) cost a large share of that
(docs/SERVER.md, "Speed"). A POST to the exact path of one of the three is therefore
answered here: its body function gets the raw ASGI ``scope`` and ``receive`` and returns the
response body, sent as the same two ASGI messages with the same headers as the FastAPI
route's ``Response(body, media_type="application/json")``; a DrsearchError becomes the same
error response through the app's one error mapping. Anything else (another method or path,
a lifespan or websocket scope) goes to FastAPI as before. The counting middleware wraps both
paths, so counters, ``x-drsearch-worker`` and ``x-drsearch-identity`` are the same.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from fastapi import FastAPI
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from ..contract import DrsearchError
from .errors import JSON

BodyFunction = Callable[[Scope, Receive], Awaitable[bytes]]
_CONTENT_TYPE = (b"content-type", JSON.encode("latin-1"))


class FastRoutes:
    """An ASGI app answering ``POST`` to each path of ``routes`` with its body function's bytes
    (200, ``application/json``); a DrsearchError it raises is answered by ``on_error``'s
    response. Other exceptions propagate (to the counting middleware's last resort)."""

    def __init__(self, routes: Mapping[str, BodyFunction],
                 on_error: Callable[[DrsearchError], Response]) -> None:
        self.routes = dict(routes)
        self.on_error = on_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body_of = self.routes[scope["path"]]
        try:
            body = await body_of(scope, receive)
        except DrsearchError as exc:
            await self.on_error(exc)(scope, receive, send)
            return
        # Starlette's Response(body, media_type=JSON) headers, in its order
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-length", b"%d" % len(body)), _CONTENT_TYPE]})
        await send({"type": "http.response.body", "body": body})


class DrsearchApp(FastAPI):
    """FastAPI, with ``fast`` (set by ``create_app``: the counted :class:`FastRoutes`) answering
    an HTTP ``POST`` to one of ``fast_paths`` before the framework's middleware and router."""

    fast: ASGIApp | None = None
    fast_paths: frozenset[str] = frozenset({"/search", "/open", "/retrieve"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (self.fast is not None and scope["type"] == "http" and scope["method"] == "POST"
                and scope["path"] in self.fast_paths):
            scope["app"] = self  # as Starlette sets it for its own routes
            await self.fast(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


__all__ = ["BodyFunction", "DrsearchApp", "FastRoutes"]
