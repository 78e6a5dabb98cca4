"""``create_app(engine, settings)``: the HTTP API over one engine (contract: docs/DESIGN.md).

Thin by design: each handler reads and validates its body, calls the engine once and
returns bytes serialised once (no response-model re-validation on the request path).
The engine runs inline on the event loop: a worker answers one engine call at a time,
which on a CPU-bound search is also the fastest schedule; capacity scales with
``--workers``. Errors of every kind reach the client through the one mapping in
:mod:`drsearch.server.errors`.
"""

from __future__ import annotations

import threading
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.background import BackgroundTask
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from .. import __version__
from ..index import DocumentNotFoundError, DrsearchError, Engine, InvalidRequestError
from .encoding import canonical_json, document_json, search_json
from .errors import JSON, error_response, from_http_exception
from .exposition import PROMETHEUS_CONTENT_TYPE, blocklist_enabled, health_body, metrics_text, stats_body
from .metrics import MetricsStore
from .middleware import ServerMiddleware
from .requests import OpenRequest, body_schema, parse_body, read_body, request_models
from .schemas import ERRORS, ErrorResponse, HealthResponse, OpenResponse, SearchResponse, StatsResponse
from .settings import BlocklistOrigin, ServerSettings

DESCRIPTION = """A frozen BM25 search index over a fixed crawl, for deep-research agents.

Queries are free text: quotes, `NEAR(`, `col:`, `*` and `-` are plain words, never syntax.
Errors are `{"error": {"type", "message"}}`: 422 malformed request, 404 unknown (or
blocked: the two are indistinguishable) document, 413 body too large, 503 query timeout.
"""

ENDPOINT_PATHS = {"/search": "search", "/open": "open", "/health": "health", "/stats": "stats",
                  "/metrics": "metrics", "/openapi.json": "openapi", "/docs": "docs"}


class _Api:
    """The handlers of one app, closed over its engine, settings and counters."""

    def __init__(self, engine: Engine, settings: ServerSettings, metrics: MetricsStore,
                 blocklist: dict[str, Any]) -> None:
        self.engine = engine
        self.settings = settings
        self.metrics = metrics
        self.models = request_models(settings)
        self.health_bytes = canonical_json(health_body(engine, **blocklist))
        self._unblocked: Engine | None = None
        self._unblocked_lock = threading.Lock()  # background tasks run in a thread pool

    async def search(self, request: Request) -> Response:
        req = parse_body(self.models.search, await read_body(request, self.settings.max_body_bytes))
        result = self.engine.search(req.query, req.k)
        return Response(search_json(result), media_type=JSON)

    async def open(self, request: Request) -> Response:
        req = parse_body(self.models.open, await read_body(request, self.settings.max_body_bytes))
        try:
            doc = self.engine.open_document(docid=req.docid, url=req.url)
        except DocumentNotFoundError as exc:
            return error_response(exc, background=self._note_not_found(req))
        return Response(document_json(doc, req.offset, req.length), media_type=JSON)

    async def health(self) -> Response:
        return Response(self.health_bytes, media_type=JSON)

    async def stats(self) -> Response:
        return Response(canonical_json(stats_body(self.engine, self.metrics.snapshot())),
                        media_type=JSON)

    async def prometheus(self) -> Response:
        text = metrics_text(self.engine, self.metrics.snapshot())
        return Response(text.encode("utf-8"), media_type=PROMETHEUS_CONTENT_TYPE)

    # -- blocked-open accounting ----------------------------------------------------------
    def _note_not_found(self, req: OpenRequest) -> BackgroundTask | None:
        """Count an open of a blocklisted document without making its 404 any slower.

        A docid is checked against the blocklist at once (a set lookup). A URL must be
        resolved to its docid, which only an engine without the blocklist can do: that
        runs after the response has been sent, so timing tells blocked from unknown no
        more than the body does.
        """
        if req.docid is not None:
            if req.docid in self.engine.blocklist:
                self.metrics.count_blocked_open()
            return None
        if req.url is None or not len(self.engine.blocklist):
            return None
        return BackgroundTask(self._count_if_blocked_url, req.url)

    def _count_if_blocked_url(self, url: str) -> None:
        with self._unblocked_lock:
            if self._unblocked is None:
                self._unblocked = Engine.open(self.engine.path, None,
                                              time_limit_s=self.engine.time_limit_s)
        try:
            docid = self._unblocked.open_document(url=url).docid
        except DrsearchError:
            return
        if docid in self.engine.blocklist:
            self.metrics.count_blocked_open()


async def _drsearch_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, DrsearchError):
        return error_response(exc)
    raise exc  # pragma: no cover - registered for DrsearchError only


async def _http_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException):
        return error_response(from_http_exception(exc))
    raise exc  # pragma: no cover - registered for HTTPException only


async def _validation_error(request: Request, exc: Exception) -> Response:
    # Routes take no FastAPI-validated parameters; kept so that one added later still
    # answers in our error shape rather than FastAPI's.
    return error_response(InvalidRequestError(str(exc)))


def create_app(engine: Engine, settings: ServerSettings | None = None, *,
               blocklist_origin: BlocklistOrigin | None = None,
               release_blocklist_sha256: str | None = None) -> FastAPI:
    """The FastAPI app serving ``engine`` under ``settings`` (defaults if None).

    The engine is used as given (its blocklist and time limit were fixed when it was
    opened; ``drsearch serve`` opens it with ``settings.request_timeout_s``). Counters go
    to ``settings.metrics_dir`` (shared by the workers of one run) or stay in memory.
    The app never closes the engine; ``app.state`` exposes ``engine``, ``settings``,
    ``metrics`` and ``blocklist_origin``. ``blocklist_origin`` and
    ``release_blocklist_sha256`` (see ``ServeConfig``) are reported in ``/health``.
    """
    settings = settings or ServerSettings()
    metrics = MetricsStore(settings.metrics_dir)
    if blocklist_origin is None:
        blocklist_origin = "file" if blocklist_enabled(engine) else "none"
    api = _Api(engine, settings, metrics, {"origin": blocklist_origin,
                                           "release_sha256": release_blocklist_sha256})
    app = FastAPI(title="drsearch", version=__version__, description=DESCRIPTION,
                  openapi_url="/openapi.json", docs_url="/docs", redoc_url=None,
                  redirect_slashes=False)  # /search/ is not /search: 404, not a 307 to re-POST
    app.state.engine, app.state.settings, app.state.metrics = engine, settings, metrics
    app.state.blocklist_origin = blocklist_origin

    def error(status: int, description: str) -> dict[int | str, dict[str, Any]]:
        return {status: {"model": ErrorResponse, "description": description}}

    app.add_api_route(
        "/search", api.search, methods=["POST"], summary="Search: the k best documents",
        openapi_extra={"requestBody": body_schema(api.models.search)},
        responses={200: {"model": SearchResponse}, **ERRORS,
                   **error(503, "the query ran past the time limit")})
    app.add_api_route(
        "/open", api.open, methods=["POST"], summary="Open a document by docid or URL",
        openapi_extra={"requestBody": body_schema(api.models.open)},
        responses={200: {"model": OpenResponse}, **ERRORS,
                   **error(404, "unknown or blocked document (same body for both)")})
    app.add_api_route("/health", api.health, methods=["GET"], summary="Liveness and identity",
                      responses={200: {"model": HealthResponse}})
    app.add_api_route("/stats", api.stats, methods=["GET"], summary="Engine stats and counters",
                      responses={200: {"model": StatsResponse}})
    app.add_api_route(
        "/metrics", api.prometheus, methods=["GET"], summary="Counters, Prometheus text format",
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
    app.add_exception_handler(DrsearchError, _drsearch_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_middleware(ServerMiddleware, metrics=metrics, endpoints=ENDPOINT_PATHS)
    return app


__all__ = ["ENDPOINT_PATHS", "create_app"]
