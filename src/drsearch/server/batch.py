"""A ``POST /retrieve`` batch under one deadline and two caps (docs/SERVER.md, "/retrieve").

- **Work**: ``len(queries) × topk`` results at most ``max_batch_results``; a batch over it is
  refused (422 ``invalid_request`` naming the cap) before any query runs.
- **Bytes**: the answer at most ``max_response_bytes``. Its size is known only as the queries
  are answered, so each query's part is encoded on its thread as soon as it is ranked (the
  hits are dropped then) and counted; once the parts exceed the cap no further query starts
  and the batch is answered 422 ``response_too_large`` naming the cap. The worker holds at most
  the cap plus one query's part per thread, and the cap once more while the body is joined.
- **Time**: one deadline, the request's (``time_limit_s`` from its handler's start), for every
  query of the batch; a query that would start after it does not start, and a batch that
  ends after it is 503 ``query_timeout``.

The first failing query in batch order decides the error (its index named, as /search would
answer it). Queries start in batch order (each of the pool's threads takes the next one until
none is left), and a failure stops only the queries not yet started, all after it in batch
order, so the failures before it in batch order are still met.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from concurrent.futures import Executor

from ..contract import (
    CorruptIndexError,
    DrsearchError,
    InvalidRequestError,
    QueryTimeoutError,
    Retriever,
    RetrieveRequest,
)
from .encoding import RETRIEVE_CLOSE, RETRIEVE_OPEN, retrieve_part
from .errors import ResponseTooLargeError


class _Skipped(Exception):
    """A query that did not start because an earlier one failed (never reaches a client)."""


class _Budget:
    """The bytes encoded so far by a batch's threads, against the response cap."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.stopped = False  # a query failed: queries not yet started do not start
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        """Count ``n`` more bytes; False once the total is over the limit."""
        with self._lock:
            self.used += n
            return self.used <= self.limit


def _threads(pool: Executor) -> int:
    """The threads of ``pool`` (a ThreadPoolExecutor's ``_max_workers``; 1 for another executor)."""
    return int(getattr(pool, "_max_workers", 1))


def check_batch_work(request: RetrieveRequest, max_results: int) -> None:
    """Refuse a batch of more than ``max_results`` results (InvalidRequestError, 422)."""
    work = len(request.queries) * request.topk
    if work > max_results:
        raise InvalidRequestError(
            f"the batch asks for {work} results ({len(request.queries)} queries × topk {request.topk}); "
            f"the limit is {max_results} per request: send fewer queries or a smaller topk")


def _too_large(limit: int) -> ResponseTooLargeError:
    return ResponseTooLargeError(f"the answer would exceed the limit of {limit} bytes per response: "
                                 "send fewer queries or a smaller topk")


async def run_batch(engine: Retriever, request: RetrieveRequest, *, deadline: float, max_terms: int,
                    max_bytes: int, pool: Executor) -> bytes:
    """The /retrieve body of ``request`` (module docstring: the bounds). Raises the first
    failing query's DrsearchError (``queries.N: …``), ResponseTooLargeError past
    ``max_bytes``, QueryTimeoutError past ``deadline`` (``time.monotonic()`` seconds)."""
    budget = _Budget(max_bytes - len(RETRIEVE_OPEN) - len(RETRIEVE_CLOSE) - (len(request.queries) - 1))

    def one(query: str) -> bytes:
        if budget.stopped:
            raise _Skipped
        try:
            if time.monotonic() > deadline:
                raise QueryTimeoutError("the batch ran past its time limit")
            result = engine.search(query, request.topk, deadline=deadline, max_terms=max_terms)
            part = retrieve_part(result, request.return_scores, engine.passages)
            if not budget.take(len(part)):
                raise _too_large(max_bytes)
            return part
        except BaseException:
            budget.stopped = True
            raise

    # Each of the pool's threads takes the next query in batch order until none is left (or a
    # query failed): one hand-off between the event loop and a thread per thread, not per query
    # (a hand-off and the wake-up of the loop cost about a tenth of a k=3 search).
    n = len(request.queries)
    parts: list[bytes | BaseException | None] = [None] * n
    order = itertools.count()  # next() of a count is atomic under the GIL

    def worker() -> None:
        for i in order:
            if i >= n:
                return
            try:
                parts[i] = one(request.queries[i])
            except _Skipped:
                return
            except BaseException as e:  # re-raised below, in batch order
                parts[i] = e
                return

    loop = asyncio.get_running_loop()
    workers = [loop.run_in_executor(pool, worker) for _ in range(min(n, _threads(pool)))]
    try:
        await asyncio.gather(*workers)
    finally:
        budget.stopped = True  # a cancelled request: the queries not started never start
    bodies = []
    for i, part in enumerate(parts):
        if isinstance(part, bytes):
            bodies.append(part)
            continue
        if part is None:  # not started: an earlier query failed (met below) or, never, a bug
            continue
        if isinstance(part, ResponseTooLargeError | CorruptIndexError) or not isinstance(part, DrsearchError):
            raise part
        raise type(part)(f"queries.{i}: {part.message}") from None
    if time.monotonic() > deadline:
        raise QueryTimeoutError("the batch ran past its time limit")
    return RETRIEVE_OPEN + b",".join(bodies) + RETRIEVE_CLOSE


__all__ = ["check_batch_work", "run_batch"]
