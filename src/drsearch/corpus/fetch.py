"""The ``fetch`` stage: a URL list → a crawl directory (drsearch.corpus.crawl), politely.

``fetch_urls(url_file, crawl)`` fetches every URL of the list with an async httpx client:

- at most ``concurrency`` requests at once overall and ``per_host`` per host;
- a timeout per request, redirects followed up to ``max_redirects``, bodies larger than
  ``max_bytes`` refused (``too_large``: by Content-Length, or while streaming);
- 408, 429 and 5xx answers and network errors retried up to ``retries`` times with
  exponential backoff (jittered), waiting at least the server's ``Retry-After`` (seconds or
  an HTTP date; capped at ``max_retry_after_s``): drsearch.contract.retry's one loop;
- robots.txt fetched once per origin and checked for each URL's own path (robots.py);
- a descriptive User-Agent.

Resumable: a record is appended (and fsynced) as soon as a URL is done and its body renamed
into place first; a rerun skips every URL that already has a final record and retries only
transient failures (timeouts, network errors, 408/429/5xx, robots.txt unavailable). Ctrl-C or a
crash loses at most the URLs in flight.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from .. import __version__
from ..contract import InvalidInputError
from ..contract.dirlock import lock_dir
from ..contract.retry import (
    RETRY_STATUSES,
    GaveUp,
    RetryPolicy,
    TryAgain,
    parse_retry_after,
    retry_async,
    transient_answer,
)
from ..index import canonicalize_url
from .crawl import (
    FETCH_SUMMARY,
    RECORDS,
    FetchRecord,
    RecordWriter,
    RobotsDecision,
    read_records,
    write_json_atomic,
)
from .robots import RobotsCache
from .urllist import UrlList, host_of, read_url_list

USER_AGENT = f"drsearch-corpus/{__version__} (offline research corpus builder; honours robots.txt)"
TRANSIENT_ERRORS = frozenset({"timeout", "connect_error", "network_error", "robots_unavailable",
                              *(f"http_{s}" for s in RETRY_STATUSES)})


@dataclass(frozen=True)
class FetchSettings:
    """Politeness and limits of a fetch run (see the module docstring)."""

    concurrency: int = 16
    per_host: int = 2
    timeout_s: float = 20.0
    retries: int = 3
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    max_retry_after_s: float = 60.0
    max_redirects: int = 5
    max_bytes: int = 10 * 1024 * 1024
    user_agent: str = USER_AGENT
    obey_robots: bool = True

    @property
    def retry(self) -> RetryPolicy:
        """These settings as the shared retry policy (jitter spreads a crawl's retries)."""
        return RetryPolicy(max_attempts=self.retries + 1, backoff_s=self.backoff_s,
                           backoff_max_s=self.max_backoff_s, retry_after_max_s=self.max_retry_after_s,
                           jitter=0.25, timeout_s=self.timeout_s)


@dataclass(frozen=True)
class _Result:
    status: int | None
    content_type: str | None
    final_url: str | None
    body: bytes | None
    error: str | None
    attempts: int


class _TooLarge(Exception):
    pass


def backoff_seconds(attempt: int, settings: FetchSettings, retry_after: str | None) -> float:
    """The wait before retry ``attempt`` (0-based): exponential with jitter, at least the
    server's ``Retry-After`` (seconds or an HTTP date; capped)."""
    return settings.retry.wait_s(attempt + 1, parse_retry_after(retry_after))


async def _read_limited(resp: httpx.Response, limit: int) -> bytes:
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _TooLarge
    chunks, size = [], 0
    async for chunk in resp.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise _TooLarge
        chunks.append(chunk)
    return b"".join(chunks)


async def _attempt(client: httpx.AsyncClient, url: str, settings: FetchSettings, attempt: int) -> _Result:
    """One GET: a final result, or TryAgain (429/5xx, timeouts, network errors)."""
    status: int | None = None
    try:
        async with client.stream("GET", url) as resp:
            status, ctype, final = resp.status_code, resp.headers.get("content-type"), str(resp.url)
            again = transient_answer(status, resp.headers)
            if again is not None:
                again.reason = f"http_{status}"  # the record's error code
                raise again
            if not 200 <= status < 300:
                return _Result(status, ctype, final, None, f"http_{status}", attempt)
            body = await _read_limited(resp, settings.max_bytes)
            return _Result(status, ctype, final, body, None, attempt)
    except _TooLarge:
        return _Result(status, None, None, None, "too_large", attempt)
    except httpx.TooManyRedirects:
        return _Result(None, None, None, None, "too_many_redirects", attempt)
    except (httpx.InvalidURL, httpx.UnsupportedProtocol):
        return _Result(None, None, None, None, "invalid_url", attempt)
    except httpx.TimeoutException:
        raise TryAgain("timeout") from None
    except httpx.ConnectError:
        raise TryAgain("connect_error") from None
    except httpx.HTTPError:
        raise TryAgain("network_error") from None


async def fetch_one(client: httpx.AsyncClient, url: str, settings: FetchSettings) -> _Result:
    """GET one URL with retries (``settings.retry``); never raises for HTTP or network trouble."""
    try:
        return await retry_async(lambda attempt: _attempt(client, url, settings, attempt), settings.retry)
    except GaveUp as e:
        return _Result(e.last.status, None, None, None, e.last.reason, e.attempts)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class _Run:
    """One fetch run: a worker pool over a queue, per-host semaphores, one record writer."""

    def __init__(self, client: httpx.AsyncClient, writer: RecordWriter, settings: FetchSettings,
                 progress: Callable[[FetchRecord], None] | None) -> None:
        self.client, self.writer, self.settings, self.progress = client, writer, settings, progress
        self.robots = RobotsCache(client, settings.user_agent)
        self.hosts: dict[str, asyncio.Semaphore] = {}
        self.outcomes: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()

    async def one(self, url: str) -> FetchRecord:
        canonical = canonicalize_url(url)
        blocked = await self.robots.decision(url) if self.settings.obey_robots else None
        if blocked:
            return FetchRecord(url, canonical, None, None, None, None, _now(), "disallowed", blocked, None, 0)
        sem = self.hosts.setdefault(host_of(url), asyncio.Semaphore(self.settings.per_host))
        async with sem:
            r = await fetch_one(self.client, url, self.settings)
        robots: RobotsDecision = "allowed" if self.settings.obey_robots else "not_checked"
        body = None
        if r.body is not None:
            body = await asyncio.to_thread(self.writer.store_body, canonical, r.body)
        return FetchRecord(url, canonical, r.final_url, r.status, r.content_type,
                           None if r.body is None else len(r.body), _now(), robots, r.error, body, r.attempts)

    async def worker(self, queue: asyncio.Queue[str]) -> None:
        while True:
            try:
                url = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            rec = await self.one(url)
            self.writer.append(rec)
            self.outcomes[rec.outcome] += 1
            if rec.error:
                self.reasons[rec.error] += 1
            if self.progress:
                self.progress(rec)


def _client(settings: FetchSettings, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
    n = settings.concurrency
    limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
    return httpx.AsyncClient(transport=transport, timeout=httpx.Timeout(settings.timeout_s), limits=limits,
                             follow_redirects=True, max_redirects=settings.max_redirects,
                             headers={"User-Agent": settings.user_agent})


async def fetch_list(urls: list[str], crawl: Path, settings: FetchSettings,
                     transport: httpx.AsyncBaseTransport | None = None,
                     progress: Callable[[FetchRecord], None] | None = None) -> dict[str, Any]:
    """Fetch ``urls`` into ``crawl`` (all of them: resuming is ``fetch_urls``'s job); returns counts."""
    queue: asyncio.Queue[str] = asyncio.Queue()
    for url in urls:
        queue.put_nowait(url)
    async with _client(settings, transport) as client:
        with RecordWriter(crawl) as writer:
            run = _Run(client, writer, settings, progress)
            workers = max(1, min(settings.concurrency, len(urls)))
            await asyncio.gather(*(run.worker(queue) for _ in range(workers)))
    # "attempted": a URL asked for, whatever came of it ("ok" counts the pages actually fetched)
    return {"attempted": sum(run.outcomes.values()), "ok": run.outcomes["ok"],
            "failed": run.outcomes["failed"], "disallowed": run.outcomes["disallowed"],
            "by_reason": dict(sorted(run.reasons.items())),
            "robots_fetches": run.robots.fetches}


def pending_urls(urls: list[str], crawl: Path) -> tuple[list[str], int]:
    """The URLs that still need fetching (no record, or only a transient failure) and how many
    are already done."""
    if not (crawl / RECORDS).exists():
        return urls, 0
    done = {r.canonical_url for r in read_records(crawl).records if r.error not in TRANSIENT_ERRORS}
    todo = [u for u in urls if canonicalize_url(u) not in done]
    return todo, len(urls) - len(todo)


def fetch_urls(
    url_file: str | os.PathLike[str],
    crawl: str | os.PathLike[str],
    settings: FetchSettings | None = None,
    *,
    transport: httpx.AsyncBaseTransport | None = None,
    progress: Callable[[FetchRecord], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Fetch the URLs listed in ``url_file`` into crawl directory ``crawl`` (created if needed).

    Returns the run summary (also written to ``crawl/fetch_summary.json``): list counts
    (``malformed_url_lines`` with ``problems`` naming each line, duplicates), URLs already
    done, and this run's outcomes. Raises InvalidInputError when the list cannot be read or
    ``crawl`` cannot be created, DirectoryBusyError (exit 2) while another process fetches
    into it. ``on_start`` gets the number of URLs to fetch.
    """
    settings = settings or FetchSettings()
    root = Path(crawl)
    listed = read_url_list(url_file)
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InvalidInputError(f"cannot create crawl directory {root}: {e.strerror}") from e
    with lock_dir(root, "crawl directory"):  # two fetches into one crawl would interleave its records
        return _fetch_locked(listed, root, settings, transport, progress, on_start, url_file)


def _fetch_locked(listed: UrlList, root: Path, settings: FetchSettings,
                  transport: httpx.AsyncBaseTransport | None, progress: Callable[[FetchRecord], None] | None,
                  on_start: Callable[[int], None] | None, url_file: str | os.PathLike[str]) -> dict[str, Any]:
    todo, done = pending_urls(listed.urls, root)
    if on_start:
        on_start(len(todo))
    summary: dict[str, Any] = {
        "url_list": Path(url_file).name, "urls": len(listed.urls), "malformed_url_lines": listed.malformed,
        "duplicate_url_lines": listed.duplicates, "already_fetched": done, "problems": listed.problems,
        "user_agent": settings.user_agent, "completed": False,
    }
    try:
        summary["run"] = asyncio.run(fetch_list(todo, root, settings, transport, progress))
        summary["completed"] = True
    finally:
        write_json_atomic(root / FETCH_SUMMARY, summary)
    return summary


__all__ = [
    "RETRY_STATUSES",
    "TRANSIENT_ERRORS",
    "USER_AGENT",
    "FetchSettings",
    "backoff_seconds",
    "fetch_list",
    "fetch_one",
    "fetch_urls",
    "pending_urls",
]
