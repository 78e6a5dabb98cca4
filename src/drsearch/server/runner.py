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
import errno
import fcntl
import logging
import logging.config
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

from ..contract import BlocklistError, Retriever
from ..dense import RerankConfig, open_retriever
from ..index import BlockList, policy_for
from .app import create_app, served_identity
from .exposition import blocklist_enabled
from .health import write_verify_state
from .protocol import PROTOCOL, set_identity
from .settings import ServeConfig, VerifyLevel

APP_FACTORY = "drsearch.server.runner:app_from_env"
LogLevel = Literal["critical", "error", "warning", "info", "debug", "trace"]
logger = logging.getLogger("drsearch.server")


def app_from_config(config: ServeConfig, engine: Retriever | None = None) -> FastAPI:
    """Open the engine ``config`` names (with its blocklist and time limit) and build the app.

    ``engine``: one already opened from ``config`` (and checked) by this process, served
    instead of opening the file again (:func:`serve` with one worker); the app owns it.
    Raises BlocklistError or CorpusFileError when a file cannot be used.
    """
    if engine is None:
        engine = _open_from_config(config)
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


def _open_from_config(config: ServeConfig) -> Retriever:
    blocklist = BlockList.from_file(config.blocked_docids) if config.blocked_docids else None
    expected = config.blocklist_sha256
    if blocklist is not None and expected is not None and blocklist.sha256 != expected:
        raise BlocklistError(f"{config.blocked_docids}: changed since drsearch serve read it (SHA-256 "
                             f"{blocklist.sha256[:12]}…, was {expected[:12]}…): every worker "
                             "must hide the same documents; restart drsearch serve")
    # the parent decided the blocklist by the release rule; the worker reopens it the same way
    # +rerank: the parent probed the endpoint before starting any worker
    rerank = None if config.rerank is None else RerankConfig(**config.rerank)
    embedder = None
    if config.embed_model is not None:
        from ..dense.models import query_embedder_for

        embedder = query_embedder_for(config.database, config.vectors, config.embed_model)
    return open_retriever(config.database, blocklist, config.retriever, vectors=config.vectors,
                          embedder=embedder, rerank=rerank, probe=False,
                          release_blocklist=policy_for(config.blocklist_origin),
                          time_limit_s=config.settings.time_limit_s)


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


RUN_DIR_PREFIX = "drsearch-serve-"
"""The per-run counter directories ``serve`` makes in the temporary directory."""
OWNER_LOCK = "owner.lock"
"""The file in a run directory that its server holds locked (``flock``) for as long as it runs."""


def _own_run_dir() -> tuple[Path, int]:
    """A fresh run directory and the descriptor of its locked owner file (held until exit).

    The lock is taken on a file under another name and renamed into place, so an
    ``owner.lock`` is never seen unlocked while its server lives. The kernel drops it when the
    process ends, however: after a SIGKILL the next ``serve`` finds it free (:func:`sweep_run_dirs`).
    """
    run_dir = Path(tempfile.mkdtemp(prefix=RUN_DIR_PREFIX))
    fd = os.open(run_dir / (OWNER_LOCK + ".new"), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(run_dir / (OWNER_LOCK + ".new"), run_dir / OWNER_LOCK)
    return run_dir, fd


def sweep_run_dirs(parent: Path) -> list[Path]:
    """Remove the run directories in ``parent`` whose server is gone without removing its own
    (killed by SIGKILL, or the machine's OOM killer): those whose ``owner.lock`` nobody holds.
    A directory without one (being created, or made by an older drsearch) or of another user is
    left alone. Returns the directories removed."""
    removed = []
    for run_dir in sorted(parent.glob(RUN_DIR_PREFIX + "*")):
        try:
            if run_dir.stat().st_uid != os.getuid():
                continue
            fd = os.open(run_dir / OWNER_LOCK, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:  # gone meanwhile, no lock file, not ours
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                    continue  # its server is alive
                raise
            shutil.rmtree(run_dir, ignore_errors=True)
            removed.append(run_dir)
        finally:
            os.close(fd)
    return removed


def _start_deep_check(config: ServeConfig, run_dir: Path) -> subprocess.Popen[bytes]:
    """The server's one background deep verification (a child process at nice 19)."""
    write_verify_state(run_dir, "pending")
    return subprocess.Popen([sys.executable, "-m", "drsearch.server.deepcheck", str(config.database),
                             str(run_dir)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def serve(config: ServeConfig, *, host: str = "127.0.0.1", port: int = 8000, workers: int = 1,
          log_level: LogLevel = "info", access_log: bool = False, verified: VerifyLevel = "none",
          engine: Retriever | None = None) -> None:
    """Serve until SIGINT/SIGTERM, then return normally after a graceful shutdown. Blocks.

    Call from the main thread. Creates the run's counter directory when
    ``config.settings.metrics_dir`` is None (``$TMPDIR/drsearch-serve-*``, its ``owner.lock``
    held while it runs) and removes it on exit; first removes those of killed servers
    (:func:`sweep_run_dirs`). Access logs are off
    by default (a line per request costs more than a small search). ``verified``: the
    checks already run on the database; after ``fast`` one deep verification runs in the
    background (its state on /health: pending, ok, failed), after ``deep`` /health reports
    ``ok`` at once, after ``none`` ``off``. Connections are served by
    :class:`~drsearch.server.protocol.LimitedHttpToolsProtocol` (the settings' idle and
    header timeouts, head size and connection limits). ``engine``: the retriever this process
    already opened from ``config`` and checked (``open_verified``); with one worker, uvicorn
    serves in this process, so it serves on that engine rather than open the file a second time
    (each open of a 2M-passage file reads and checks its per-chunk tables). Closed on return.
    ValueError with more than one worker (each worker is a process of its own).
    """
    import uvicorn

    if engine is not None and workers != 1:
        engine.close()
        raise ValueError(f"an engine opened here serves one in-process worker, not {workers}")

    own_dir: Path | None = None
    owner_fd: int | None = None
    if config.settings.metrics_dir is None:
        own_dir, owner_fd = _own_run_dir()
        swept = sweep_run_dirs(own_dir.parent)
        if swept:  # before uvicorn configures logging: a line of its own, as the CLI's
            print(f"drsearch: removed {len(swept)} run directories of servers that were killed: "
                  f"{' '.join(map(str, swept))}", file=sys.stderr, flush=True)
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
        # uvicorn imports APP_FACTORY in this very process when workers == 1: with an engine
        # here, hand it the app built on it instead, its log line under uvicorn's logging
        # configuration as a worker's (uvicorn applies it again, the same)
        app: str | FastAPI = APP_FACTORY
        if engine is not None:
            logging.config.dictConfig(log_config(log_level))
            app = app_from_config(config, engine)
        uvicorn.run(app, factory=engine is None, host=host, port=port, workers=workers,
                    log_level=log_level, log_config=log_config(log_level), access_log=access_log,
                    server_header=False, timeout_graceful_shutdown=10, http=PROTOCOL,
                    # uvicorn annotates int but schedules it with call_later: seconds as float
                    timeout_keep_alive=config.settings.idle_timeout_s)  # type: ignore[arg-type]
    except _Stopped:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if engine is not None:
            engine.close()
        if deep_check is not None and deep_check.poll() is None:
            deep_check.terminate()
            try:
                deep_check.wait(5)
            except subprocess.TimeoutExpired:
                deep_check.kill()
                deep_check.wait()
        if own_dir is not None:
            shutil.rmtree(own_dir, ignore_errors=True)
        if owner_fd is not None:
            os.close(owner_fd)


__all__ = ["APP_FACTORY", "OWNER_LOCK", "RUN_DIR_PREFIX", "LogLevel", "app_from_config", "app_from_env",
           "log_config", "serve", "sweep_run_dirs"]
