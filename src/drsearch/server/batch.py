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
answer it). Queries start in batch order (the pool's queue is FIFO), and a failure stops only
the queries queued after it, so the failures before it in batch order are still met.
"""

from __future__ import annotations

import asyncio
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

    loop = asyncio.get_running_loop()
    futures = [loop.run_in_executor(pool, one, q) for q in request.queries]
    for future in futures:  # the failures after the deciding one are dropped, not logged as unread
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
    try:
        parts = []
        for i, future in enumerate(futures):
            try:
                parts.append(await future)
            except ResponseTooLargeError:
                raise
            except DrsearchError as e:
                if isinstance(e, CorruptIndexError):
                    raise
                raise type(e)(f"queries.{i}: {e.message}") from None
    finally:
        budget.stopped = True
        for future in futures:
            future.cancel()  # those not started yet never start
    if time.monotonic() > deadline:
        raise QueryTimeoutError("the batch ran past its time limit")
    return RETRIEVE_OPEN + b",".join(parts) + RETRIEVE_CLOSE


__all__ = ["check_batch_work", "run_batch"]
