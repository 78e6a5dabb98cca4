"""Running the app under uvicorn, with one or many worker processes.

uvicorn starts each worker from an import string and passes it nothing, so a worker
builds its own app with :func:`app_from_env` from the ``ServeConfig`` that
:func:`serve` put in the environment (``DRSEARCH_SERVE_CONFIG``). Each worker opens the
index itself: the file is memory-mapped read-only, so its pages are shared by all
workers through the page cache, not copied. uvicorn's supervisor replaces a worker
that dies; the counters of the run live in a per-run directory that outlives workers.
"""

from __future__ import annotations

import copy
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI

from ..index import BlockList, Engine
from .app import create_app, served_identity
from .exposition import blocklist_enabled
from .health import write_verify_state
from .protocol import PROTOCOL, set_identity
from .settings import ServeConfig, VerifyLevel

APP_FACTORY = "drsearch.server.runner:app_from_env"
LogLevel = Literal["critical", "error", "warning", "info", "debug", "trace"]
logger = logging.getLogger("drsearch.server")


def app_from_config(config: ServeConfig) -> FastAPI:
    """Open the engine ``config`` names (with its blocklist and time limit) and build the app.

    Raises BlocklistError or CorpusFileError when a file cannot be used.
    """
    blocklist = BlockList.from_file(config.blocked_docids) if config.blocked_docids else None
    engine = Engine.open(config.database, blocklist, time_limit_s=config.settings.time_limit_s)
    app = create_app(engine, config.settings, blocklist_origin=config.blocklist_origin,
                     release_blocklist_sha256=config.release_blocklist_sha256)
    set_identity(served_identity(engine))
    origin = app.state.blocklist_origin
    if blocklist_enabled(engine):
        what = (f"blocklist {engine.blocklist.source} ({len(engine.blocklist)} docids, "
                f"{engine.blocked_matched} in this corpus; {origin})")
    else:
        what = f"NO blocklist: every document is served ({origin})"
    log = logger.warning if origin in ("release-override", "release-none", "none") else logger.info
    log("worker %d serving %s (identity %s); %s", os.getpid(), config.database,
        engine.meta["content_identity"], what)
    return app


def app_from_env() -> FastAPI:
    """The uvicorn app factory of ``drsearch serve`` workers (config from the environment)."""
    return app_from_config(ServeConfig.from_env())


def log_config(level: LogLevel) -> dict[str, Any]:
    """uvicorn's logging configuration plus the ``drsearch`` logger on the same handler."""
    from uvicorn.config import LOGGING_CONFIG

    config = copy.deepcopy(LOGGING_CONFIG)
    config["loggers"]["drsearch"] = {"handlers": ["default"], "propagate": False,
                                     "level": "DEBUG" if level == "trace" else level.upper()}
    return config


class _Stopped(Exception):
    """SIGINT/SIGTERM reached us after uvicorn shut down (it re-raises the signal it caught)."""


def _stop(signum: int, frame: object) -> None:
    raise _Stopped(signum)


def _start_deep_check(config: ServeConfig, run_dir: Path) -> subprocess.Popen[bytes]:
    """The server's one background deep verification (a child process at nice 19)."""
    write_verify_state(run_dir, "pending")
    return subprocess.Popen([sys.executable, "-m", "drsearch.server.deepcheck", str(config.database),
                             str(run_dir)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def serve(config: ServeConfig, *, host: str = "127.0.0.1", port: int = 8000, workers: int = 1,
          log_level: LogLevel = "info", access_log: bool = False, verified: VerifyLevel = "none") -> None:
    """Serve until SIGINT/SIGTERM, then return normally after a graceful shutdown. Blocks.

    Call from the main thread. Creates the run's counter directory when
    ``config.settings.metrics_dir`` is None and removes it on exit. Access logs are off
    by default (a line per request costs more than a small search). ``verified``: the
    checks already run on the database; after ``fast`` one deep verification runs in the
    background (its state on /health: pending, ok, failed), after ``deep`` /health reports
    ``ok`` at once, after ``none`` ``off``. Connections are served by
    :class:`~drsearch.server.protocol.LimitedHttpToolsProtocol` (the settings' idle and
    header timeouts, head size and connection limits).
    """
    import uvicorn

    own_dir: Path | None = None
    if config.settings.metrics_dir is None:
        own_dir = Path(tempfile.mkdtemp(prefix="drsearch-serve-"))
        settings = config.settings.model_copy(update={"metrics_dir": own_dir})
        config = config.model_copy(update={"settings": settings})
    os.environ.update(config.to_env())
    run_dir = config.settings.metrics_dir
    assert run_dir is not None
    deep_check: subprocess.Popen[bytes] | None = None
    if verified == "fast":
        deep_check = _start_deep_check(config, run_dir)
        # Reaped as soon as it ends (uvicorn's loop never waits on it): no zombie child
        # for the whole life of the server.
        threading.Thread(target=deep_check.wait, name="drsearch-deep-check", daemon=True).start()
    elif verified == "deep":
        write_verify_state(run_dir, "ok", "verified before serving")
    # A single-process uvicorn re-raises the signal that stopped it once it has shut down;
    # with the default SIGTERM action that would kill us before the clean-up below.
    previous = {sig: signal.signal(sig, _stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        uvicorn.run(APP_FACTORY, factory=True, host=host, port=port, workers=workers,
                    log_level=log_level, log_config=log_config(log_level), access_log=access_log,
                    server_header=False, timeout_graceful_shutdown=10, http=PROTOCOL,
                    # uvicorn annotates int but schedules it with call_later: seconds as float
                    timeout_keep_alive=config.settings.idle_timeout_s)  # type: ignore[arg-type]
    except _Stopped:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if deep_check is not None and deep_check.poll() is None:
            deep_check.terminate()
            try:
                deep_check.wait(5)
            except subprocess.TimeoutExpired:
                deep_check.kill()
                deep_check.wait()
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)


__all__ = ["APP_FACTORY", "LogLevel", "app_from_config", "app_from_env", "log_config", "serve"]
