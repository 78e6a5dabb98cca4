"""``create_app(engine, settings)``: the HTTP API over one engine (contract: docs/DESIGN.md).

Thin by design: each handler reads and validates its body, calls the engine once and
returns bytes serialised once (no response-model re-validation on the request path).
Engine calls run in one thread per app, one at a time (on a CPU-bound search the fastest
schedule; capacity scales with ``--workers``), so that the event loop stays free: /health
and the connection timeouts keep working while a long search runs. Each request has one
deadline, ``time_limit_s`` from the moment its handler starts, that covers reading
the body, parsing, postings, ranking, snippets and encoding. Errors of every kind reach
the client through the one mapping in :mod:`drsearch.server.errors`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Receive, Scope

from .. import __version__
from ..contract import (
    CorruptIndexError,
    DocumentNotFoundError,
    DrsearchError,
    InvalidRequestError,
    QueryTimeoutError,
    Retriever,
    fleet_identity,
)
from ..index import gil_poll_ns
from .batch import check_batch_work, run_batch
from .encoding import canonical_bytes, document_json, search_json
from .errors import JSON, error_response, from_http_exception
from .exposition import PROMETHEUS_CONTENT_TYPE, blocklist_enabled, health_body, metrics_text, stats_body
from .fastpath import DrsearchApp, FastRoutes
from .health import HealthState
from .metrics import MetricsStore
from .middleware import ServerMiddleware
from .requests import (
    body_schema,
    parse_open_body,
    parse_retrieve_body,
    parse_search_body,
    receive_body,
    request_models,
)
from .schemas import (
    ERRORS,
    ErrorResponse,
    HealthResponse,
    OpenResponse,
    RetrieveResponse,
    SearchResponse,
    StatsResponse,
)
from .settings import BlocklistOrigin, ServerSettings

DESCRIPTION = """A frozen BM25 search index over a fixed crawl, for deep-research agents.

Queries are free text: quotes, `NEAR(`, `col:`, `*` and `-` are plain words, never syntax.
`POST /retrieve` is Search-R1's retrieval contract over the same engine and blocklist.
Every response carries `x-drsearch-identity: <corpus identity>:<blocklist SHA-256>`.
Errors are `{"error": {"type", "message"}}`: 422 malformed request (also: a query of more
distinct terms than the server's cap, which the schema cannot express; a `/retrieve` batch
over the server's result cap, `len(queries) × topk`, or whose answer would pass its byte cap,
`response_too_large`), 404 unknown (or
blocked: the two are indistinguishable) document, 408 body not received in time, 413 body
too large, 503 request past its time limit, 500 `corrupt_index` (damaged index file).
"""

ENDPOINT_PATHS = {"/search": "search", "/open": "open", "/retrieve": "retrieve", "/health": "health",
                  "/stats": "stats", "/metrics": "metrics", "/openapi.json": "openapi", "/docs": "docs"}
logger = logging.getLogger("drsearch.server")
T = TypeVar("T")


class _Api:
    """The handlers of one app, closed over its engine, settings, counters and health."""

    def __init__(self, engine: Retriever, settings: ServerSettings, metrics: MetricsStore,
                 health: HealthState, blocklist: dict[str, Any]) -> None:
        self.engine = engine
        self.settings = settings
        self.metrics = metrics
        self.health_state = health
        self.models = request_models(settings)  # the OpenAPI schema of the contract
        self.limits = settings.limits()
        self.static_health = health_body(engine, **blocklist)
        # One thread runs the engine calls of this worker, one at a time as before, while
        # the event loop stays free: /health answers at once even during a long search, and
        # a request's time limit is checked by the engine itself (its deadline).
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="drsearch-engine")
        # The queries of a /retrieve batch run in parallel on their own threads (the ranking
        # kernel releases the GIL; each thread has its own SQLite connection and arena).
        self._batch_pool = ThreadPoolExecutor(max_workers=settings.batch_threads,
                                              thread_name_prefix="drsearch-batch")

    async def _run(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn)

    async def search_body(self, scope: Scope, receive: Receive) -> bytes:
        deadline = time.monotonic() + self.settings.time_limit_s
        body = await receive_body(scope, receive, self.settings.max_body_bytes, deadline)
        req = parse_search_body(body, self.limits)

        def answer() -> bytes:
            result = self.engine.search(req.query, req.k, deadline=deadline,
                                        max_terms=self.settings.max_query_terms)
            data = search_json(result)
            if time.monotonic() > deadline:
                raise QueryTimeoutError("query ran past its time limit")
            return data

        return await self._run(answer)

    async def open_body(self, scope: Scope, receive: Receive) -> bytes:
        deadline = time.monotonic() + self.settings.time_limit_s
        req = parse_open_body(await receive_body(scope, receive, self.settings.max_body_bytes, deadline),
                              self.limits)

        def answer() -> bytes:
            try:
                doc = self.engine.open_document(docid=req.docid, url=req.url)
            except DocumentNotFoundError:
                # For an operator only (never on an endpoint, where it would tell blocked
                # from missing); the check runs only with DEBUG logging on.
                if logger.isEnabledFor(logging.DEBUG) and req.docid in self.engine.blocklist:
                    logger.debug("open of a blocked docid (answered as missing)")
                raise
            return document_json(doc, req.offset, req.length)

        return await self._run(answer)

    async def retrieve_body(self, scope: Scope, receive: Receive) -> bytes:
        """Search-R1's ``POST /retrieve``: every query of the batch as one /search, under the
        request's one deadline, a cap on its results and one on its answer's bytes
        (:mod:`drsearch.server.batch`)."""
        deadline = time.monotonic() + self.settings.time_limit_s
        body = await receive_body(scope, receive, self.settings.max_body_bytes, deadline)
        req = parse_retrieve_body(body, self.limits, self.settings.max_batch_queries)
        check_batch_work(req, self.settings.max_batch_results)
        return await run_batch(self.engine, req, deadline=deadline, max_terms=self.settings.max_query_terms,
                               max_bytes=self.settings.max_response_bytes, pool=self._batch_pool)

    # The FastAPI routes of the three: they describe the API (OpenAPI) and answer what reaches
    # the router; a POST to their exact path is answered by the fast routes (FastRoutes).
    async def search(self, request: Request) -> Response:
        return Response(await self.search_body(request.scope, request.receive), media_type=JSON)

    async def open(self, request: Request) -> Response:
        return Response(await self.open_body(request.scope, request.receive), media_type=JSON)

    async def retrieve(self, request: Request) -> Response:
        return Response(await self.retrieve_body(request.scope, request.receive), media_type=JSON)

    async def health(self) -> Response:
        body = {**self.static_health, **self.health_state.body()}
        return Response(canonical_bytes(body), media_type=JSON)

    async def stats(self) -> Response:
        return Response(canonical_bytes(stats_body(self.engine, self.metrics.snapshot())),
                        media_type=JSON)

    async def prometheus(self) -> Response:
        text = metrics_text(self.engine, self.metrics.snapshot())
        return Response(text.encode("utf-8"), media_type=PROMETHEUS_CONTENT_TYPE)


async def _http_error(request: Request, exc: Exception) -> Response:
    if isinstance(exc, HTTPException):
        return error_response(*from_http_exception(exc))
    raise exc  # pragma: no cover - registered for HTTPException only


async def _validation_error(request: Request, exc: Exception) -> Response:
    # Routes take no FastAPI-validated parameters; kept so that one added later still
    # answers in our error shape rather than FastAPI's.
    return error_response(InvalidRequestError(str(exc)))


def served_identity(engine: Retriever) -> str:
    """The ``x-drsearch-identity`` value of every response of an app over ``engine``."""
    meta = engine.meta
    return fleet_identity(meta["content_identity"], engine.blocklist.sha256, meta.get("retriever"))


def create_app(engine: Retriever, settings: ServerSettings | None = None, *,
               blocklist_origin: BlocklistOrigin | None = None,
               release_blocklist_sha256: str | None = None) -> DrsearchApp:
    """The FastAPI app serving ``engine`` under ``settings`` (defaults if None).

    The engine is used as given (its blocklist and time limit were fixed when it was
    opened; ``drsearch serve`` opens it with ``settings.time_limit_s``). Counters go
    to ``settings.metrics_dir`` (shared by the workers of one run) or stay in memory.
    The app never closes the engine; ``app.state`` exposes ``engine``, ``settings``,
    ``metrics`` and ``blocklist_origin``. ``blocklist_origin`` and
    ``release_blocklist_sha256`` (see ``ServeConfig``) are reported in ``/health``.
    """
    settings = settings or ServerSettings()
    # No polling for the GIL in a server process (the kernel's default for threads of one
    # process, docs/ENGINE.md "Threads"): here the event loop holds the GIL between the engine's
    # calls, and the cores are shared with the other workers, whose work a poller would take.
    gil_poll_ns(0)
    metrics = MetricsStore(settings.metrics_dir)
    if blocklist_origin is None:
        blocklist_origin = "file" if blocklist_enabled(engine) else "none"
    health = HealthState(settings.metrics_dir)
    api = _Api(engine, settings, metrics, health, {"origin": blocklist_origin,
                                                   "release_sha256": release_blocklist_sha256})
    app = DrsearchApp(title="drsearch", version=__version__, description=DESCRIPTION,
                  openapi_url="/openapi.json", docs_url="/docs", redoc_url=None,
                  redirect_slashes=False)  # /search/ is not /search: 404, not a 307 to re-POST
    app.state.engine, app.state.settings, app.state.metrics = engine, settings, metrics
    app.state.blocklist_origin = blocklist_origin
    app.state.health = health

    def answer_error(exc: DrsearchError) -> Response:
        if isinstance(exc, CorruptIndexError):
            health.mark_corrupt(exc.message)
        return error_response(exc)

    async def drsearch_error(request: Request, exc: Exception) -> Response:
        if not isinstance(exc, DrsearchError):
            raise exc  # pragma: no cover - registered for DrsearchError only
        return answer_error(exc)

    def error(status: int, description: str) -> dict[int | str, dict[str, Any]]:
        return {status: {"model": ErrorResponse, "description": description}}

    app.add_api_route(
        "/search", api.search, methods=["POST"], summary="Search: the k best documents",
        openapi_extra={"requestBody": body_schema(api.models.search)},
        responses={200: {"model": SearchResponse}, **ERRORS,
                   **error(503, "the request ran past its time limit")})
    app.add_api_route(
        "/open", api.open, methods=["POST"], summary="Open a document by docid or URL",
        openapi_extra={"requestBody": body_schema(api.models.open)},
        responses={200: {"model": OpenResponse}, **ERRORS,
                   **error(404, "unknown or blocked document (same body for both)")})
    app.add_api_route(
        "/retrieve", api.retrieve, methods=["POST"],
        summary="Search-R1's batch retrieval: the topk best documents of each query",
        openapi_extra={"requestBody": body_schema(api.models.retrieve)},
        responses={200: {"model": RetrieveResponse}, **ERRORS,
                   **error(503, "the batch ran past its time limit")})
    app.add_api_route("/health", api.health, methods=["GET"], summary="Liveness and identity",
                      responses={200: {"model": HealthResponse}})
    app.add_api_route("/stats", api.stats, methods=["GET"], summary="Engine stats and counters",
                      responses={200: {"model": StatsResponse}})
    app.add_api_route(
        "/metrics", api.prometheus, methods=["GET"], summary="Counters, Prometheus text format",
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}})
    app.add_exception_handler(DrsearchError, drsearch_error)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_middleware(ServerMiddleware, metrics=metrics, endpoints=ENDPOINT_PATHS,
                       identity=served_identity(engine))
    fast = FastRoutes({"/search": api.search_body, "/open": api.open_body, "/retrieve": api.retrieve_body},
                      answer_error)
    app.fast = ServerMiddleware(fast, metrics=metrics, endpoints=ENDPOINT_PATHS,
                                identity=served_identity(engine))
    return app


__all__ = ["ENDPOINT_PATHS", "create_app", "served_identity"]
