"""The HTTP server: a thin FastAPI app over one frozen index (contract: docs/DESIGN.md).

Public API (pinned by tests/server/test_public_api.py)::

    create_app(engine, settings)      -> FastAPI app (GET /health /stats /metrics, POST /search /open)
    ServerSettings(...)               typed, frozen limits and defaults
    ServeConfig(database, blocked_docids, settings)   what a uvicorn worker needs
    serve(config, host=, port=, workers=, log_level=)  run uvicorn (blocks)
    app_from_env()                    the workers' app factory (config from the environment)
    verify_corpus(path, level)        pre-flight checks: none | fast | deep
    open_verified(path, level)        the same, and the checked engine left open (serve's one open)
    ServeProcess(database, *args)     `drsearch serve` as a child process: start, wait for /health, stop
    ServeError                        it did not come up (exited at start, or no answer in time)
    free_port()                       a free loopback port

Needs the ``server`` extra (fastapi, uvicorn, orjson).
"""

from .app import create_app
from .errors import (
    InternalServerError,
    MalformedBodyError,
    MethodNotAllowedError,
    NoSuchEndpointError,
    PayloadTooLargeError,
)
from .launch import ServeError, ServeProcess, free_port
from .metrics import ENDPOINTS, MetricsStore, Snapshot
from .runner import APP_FACTORY, app_from_config, app_from_env, serve
from .settings import CONFIG_ENV, ServeConfig, ServerSettings, VerifyLevel
from .verify import CorpusReport, open_verified, verify_corpus

__all__ = [
    "APP_FACTORY",
    "CONFIG_ENV",
    "ENDPOINTS",
    "CorpusReport",
    "InternalServerError",
    "MalformedBodyError",
    "MethodNotAllowedError",
    "MetricsStore",
    "NoSuchEndpointError",
    "PayloadTooLargeError",
    "ServeConfig",
    "ServeError",
    "ServeProcess",
    "ServerSettings",
    "Snapshot",
    "VerifyLevel",
    "app_from_config",
    "app_from_env",
    "create_app",
    "free_port",
    "open_verified",
    "serve",
    "verify_corpus",
]
