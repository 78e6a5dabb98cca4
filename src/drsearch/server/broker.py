"""A broker over the shards of one split index: every query to every shard, one exact answer.

``drsearch serve --shards URL...`` (or :func:`create_broker_app` over :func:`connect_shards`
as a library) answers ``POST /search``, ``/retrieve`` and ``/open`` with the bytes the whole
index's server would give (docs/SCALING.md "Exact shards"), and ``GET /health``, ``/stats`` and
``/metrics`` in a server's shapes for the whole corpus, with every shard's state beside them
(drsearch.server.broker_status). Each shard is an ordinary
``drsearch serve`` of one shard file (drsearch.index.shards), served and replicated like any
index (HAProxy, a Kubernetes Service per shard): the broker keeps no state but what the
shards said of themselves at start-up (identities, counts) and its own request counters.

Why the merge is exact: a shard's scores are the whole index's bits (its postings carry the
corpus' impacts), every document lies in one shard, and shards hold contiguous ranges of the
index's chunk rowids (FTS5's tie-break) in shard order. So the index's top k is the top k of
the shards' top k lists ordered by (score desc, shard index, rank within the shard), each
document's best chunk already chosen by its shard.

Never a partial list: a shard that cannot be reached, answers late or answers with another
identity than it had at start-up makes the request a 503 ``shard_unavailable`` naming it.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..contract.errors import InvalidInputError
from ..contract.searcher import fleet_identity
from . import broker_status
from .broker_status import Probe, Shard
from .encoding import canonical_bytes  # the reference encoder's bytes, by orjson where they agree
from .exposition import PROMETHEUS_CONTENT_TYPE
from .metrics import MetricsStore
from .middleware import ServerMiddleware

IDENTITY = "x-drsearch-identity"
JSON = "application/json"
_MAX_BODY = 16 << 20
# the broker's counters by endpoint, as a server's (drsearch.server.metrics.ENDPOINTS)
_ENDPOINTS = {"/search": "search", "/open": "open", "/retrieve": "retrieve", "/health": "health",
              "/stats": "stats", "/metrics": "metrics"}


@dataclass(frozen=True, slots=True)
class ShardSet:
    """The shards of one split, in shard order, and what the broker answers as."""

    shards: tuple[Shard, ...]
    corpus: str
    blocklist_sha256: str
    split: str

    @property
    def identity(self) -> str:
        """The whole index's ``x-drsearch-identity`` (its corpus identity, the shards' list)."""
        return fleet_identity(self.corpus, self.blocklist_sha256)


class ShardUnavailable(Exception):
    """A shard did not answer, or answered as another identity."""

    def __init__(self, shard: Shard, why: str) -> None:
        super().__init__(f"shard {shard.index} ({shard.url}) {why}")


def _shard_info(url: str, timeout: float) -> tuple[dict[str, Any], str, dict[str, Any], dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"{url}/stats", timeout=timeout) as got:
            identity, raw = got.headers.get(IDENTITY, ""), got.read()
    except urllib.error.HTTPError as e:
        raise InvalidInputError(f"shard {url}: GET /stats answered HTTP {e.code}") from None
    except (OSError, ValueError) as e:
        raise InvalidInputError(f"shard {url}: cannot reach it ({type(e).__name__}: {e})") from None
    try:
        body = json.loads(raw)
    except ValueError:
        raise InvalidInputError(f"shard {url}: GET /stats did not answer JSON (not a drsearch "
                                "server)") from None
    shard = body.get("shard")
    if not isinstance(shard, dict):
        raise InvalidInputError(f"shard {url} serves a whole index (identity "
                                f"{body.get('content_identity')}), not a shard of a split (drsearch shard)")
    body.pop("server", None)  # live counters: asked again whenever /stats is
    return shard, identity, body.get("blocklist", {}), body


def connect_shards(urls: Sequence[str], *, timeout: float = 10.0,
                   allow_missing_blocked: bool = False) -> ShardSet:
    """Ask every shard server who it is and check that together they are one split, whole.

    Refused (InvalidInputError, one line naming the shard): a shard that cannot be reached,
    one that serves a whole index, shards of different splits (another corpus, shard count or
    blocklist), a shard index twice or missing, a server whose blocklist is not the split's,
    and a blocklist that names docids no shard holds (unless ``allow_missing_blocked``).
    """
    if not urls:
        raise InvalidInputError("--shards needs at least one URL")
    found = [(url.rstrip("/"), *_shard_info(url.rstrip("/"), timeout)) for url in urls]
    first_url, first, _, _, _ = found[0]
    by_index: dict[int, Shard] = {}
    for url, shard, identity, blocklist, stats in found:
        if shard.get("set") != first.get("set"):
            raise InvalidInputError(
                f"shard {url} belongs to another split (corpus {shard.get('corpus')}, {shard.get('count')} "
                f"shards, split {shard.get('set')}) than {first_url} (corpus {first.get('corpus')}, "
                f"{first.get('count')} shards, split {first.get('set')})")
        if shard["index"] in by_index:
            raise InvalidInputError(f"shards {by_index[shard['index']].url} and {url} are both shard "
                                    f"{shard['index']} of the split")
        want = shard["blocklist"]["sha256"]
        if blocklist.get("sha256") != want or not identity.endswith(f":{want}"):
            raise InvalidInputError(f"shard {url} serves the blocklist {blocklist.get('sha256')}, "
                                    f"the split's is {want}")
        by_index[shard["index"]] = Shard(url, shard["index"], identity, int(blocklist.get("matched", 0)),
                                         stats)
    count = int(first["count"])
    missing = [i for i in range(count) if i not in by_index]
    if missing:
        raise InvalidInputError(f"the split has {count} shards; no URL given serves shard "
                                f"{', '.join(map(str, missing))}")
    matched = sum(s.blocklist_matched for s in by_index.values())
    listed = int(first["blocklist"]["count"])
    if matched < listed and not allow_missing_blocked:
        raise InvalidInputError(f"the shards' blocklist lists {listed} docids, {matched} in the shards "
                                "(--allow-missing-blocked if the corpus is deliberately partial)")
    return ShardSet(tuple(by_index[i] for i in range(count)), str(first["corpus"]),
                    str(first["blocklist"]["sha256"]), str(first["set"]))


def _error(status: int, kind: str, message: str) -> Response:
    return Response(canonical_bytes({"error": {"type": kind, "message": message}}), status, media_type=JSON)


@dataclass(frozen=True, slots=True)
class Answer:
    """A shard's answer: status, the identity header, the body."""

    status_code: int
    identity: str | None
    content: bytes


class _Pool:
    """Keep-alive HTTP/1.1 connections to one shard server, for POSTs of JSON.

    Why not httpx here: a broker request is one POST per shard, and with httpx's async
    client the broker spent 4.1 ms of CPU per /search over 4 shards, against 1.1 ms with
    this (benchmarks/shard_bench.py's corpus, k=10, one client); the shard servers are ours
    and always answer with a Content-Length, which is all this client reads."""

    def __init__(self, url: str, timeout: float) -> None:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise InvalidInputError(f"shard {url}: not an http:// URL")
        self.host, self.port = parts.hostname, parts.port or 80
        self.prefix = parts.path.rstrip("/").encode()
        self.timeout = timeout
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def request(self, method: bytes, path: str, body: bytes = b"") -> Answer:
        for _ in range(2):  # an idle connection the server closed meanwhile: once more on a new one
            fresh = not self.idle
            conn = self.idle.pop() if self.idle else await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port), self.timeout)
            try:
                got = await asyncio.wait_for(self._exchange(conn, method, path, body), self.timeout)
            except (ConnectionError, asyncio.IncompleteReadError) as e:
                conn[1].close()
                if fresh:
                    raise ConnectionError(f"{type(e).__name__}: {e}") from None
                continue
            except BaseException:
                conn[1].close()
                raise
            self.idle.append(conn)
            return got
        raise ConnectionError("the connection closed twice")

    async def _exchange(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter], method: bytes,
                        path: str, body: bytes) -> Answer:
        reader, writer = conn
        writer.write(b"%s %s%s HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\n"
                     b"content-length: %d\r\n\r\n%s" % (method, self.prefix, path.encode(),
                                                          self.host.encode(), len(body), body))
        await writer.drain()
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split(" ", 2)[1])
        headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head[1:] if h)}
        if "content-length" not in headers:
            raise ConnectionError(f"HTTP {status} without content-length")
        content = await reader.readexactly(int(headers["content-length"]))
        if headers.get("connection", "").lower() == "close":
            raise _Closing(Answer(status, headers.get(IDENTITY), content))
        return Answer(status, headers.get(IDENTITY), content)


class _Closing(Exception):  # not an error: an answer on a connection not to keep
    def __init__(self, answer: Answer) -> None:
        self.answer = answer


class Broker:
    """Fans one request out to every shard (keep-alive connections of its own, :class:`_Pool`)
    and merges the answers."""

    def __init__(self, shards: ShardSet, timeout: float = 15.0, metrics: MetricsStore | None = None) -> None:
        self.set = shards
        self.pools = [_Pool(s.url, timeout) for s in shards.shards]
        self.metrics = metrics or MetricsStore(None)  # the broker's own requests (one process)

    async def _ask(self, shard: Shard, path: str, body: bytes) -> Answer:
        try:
            got = await self.pools[shard.index].request(b"POST", path, body)
        except _Closing as c:
            got = c.answer
        except (OSError, TimeoutError, ValueError, IndexError) as e:
            raise ShardUnavailable(shard, f"did not answer POST {path} ({type(e).__name__}: {e})") from None
        seen = got.identity
        if seen != shard.identity:
            raise ShardUnavailable(shard, f"answered POST {path} as identity {seen}, not {shard.identity} "
                                   "as at start-up")
        return got

    async def ask_all(self, path: str, body: bytes) -> list[Answer]:
        """Every shard's answer to ``POST path`` in shard order. Raises ShardUnavailable."""
        tasks = [asyncio.ensure_future(self._ask(s, path, body)) for s in self.set.shards]
        try:
            return list(await asyncio.gather(*tasks))
        finally:
            for t in tasks:
                t.cancel()

    def _relay(self, got: Answer) -> Response:
        return Response(got.content, got.status_code, media_type=JSON)

    def _failed(self, answers: list[Answer], ok: tuple[int, ...] = (200,)) -> Response | None:
        """The first answer that is not a success (the shards refuse a bad request alike)."""
        for got in answers:
            if got.status_code not in ok:
                return self._relay(got)
        return None

    async def search(self, body: bytes) -> Response:
        answers = await self.ask_all("/search", body)
        if (bad := self._failed(answers)) is not None:
            return bad
        parts = [orjson.loads(a.content) for a in answers]
        k = int(parts[0]["k"])
        merged = _merge([p["results"] for p in parts], k, lambda h: float(h["score"]))
        results = [dict(h, rank=rank) for rank, h in enumerate(merged, 1)]
        return self._answer({"query": parts[0]["query"], "k": parts[0]["k"], "results": results})

    async def retrieve(self, body: bytes) -> Response:
        try:
            req = json.loads(body)
        except ValueError:
            req = None
        scores = req.get("return_scores", False) if isinstance(req, dict) else None
        if not isinstance(req, dict) or not isinstance(scores, bool):  # the shards say what is wrong
            return self._relay((await self.ask_all("/retrieve", body))[0])
        answers = await self.ask_all("/retrieve", canonical_bytes({**req, "return_scores": True}))
        if (bad := self._failed(answers)) is not None:
            return bad
        parts = [orjson.loads(a.content)["result"] for a in answers]
        topk = int(req.get("topk", 10))
        result = []
        for per_query in zip(*parts, strict=True):
            merged = _merge(list(per_query), topk, lambda item: float(item["score"]))
            result.append(merged if scores else [item["document"] for item in merged])
        return self._answer({"result": result})

    async def open(self, body: bytes) -> Response:
        answers = await self.ask_all("/open", body)
        for got in answers:  # a docid or URL opens in one shard at most (the split's rule)
            if got.status_code == 200:
                return self._relay(got)
        return self._failed(answers, (404,)) or self._relay(answers[0])

    def _answer(self, value: Any) -> Response:
        return Response(canonical_bytes(value), 200, media_type=JSON)

    async def _probe(self, s: Shard, path: str) -> Probe:
        """``GET path`` of one shard: its JSON body, or the line that says why there is none
        (no answer, another identity than at start-up, not a 200)."""
        try:
            got = await self.pools[s.index].request(b"GET", path)
        except _Closing as c:
            got = c.answer
        except (OSError, TimeoutError, ValueError, IndexError) as e:
            return None, f"shard {s.index} ({s.url}) did not answer GET {path} ({type(e).__name__}: {e})"
        if got.status_code != 200 or got.identity != s.identity:
            return None, (f"shard {s.index} ({s.url}) answered GET {path} with HTTP {got.status_code} "
                          f"as identity {got.identity}")
        try:
            return orjson.loads(got.content), None
        except orjson.JSONDecodeError:
            return None, f"shard {s.index} ({s.url}) answered GET {path} with a body that is not JSON"

    async def probe_all(self, path: str) -> list[Probe]:
        """Every shard's answer to ``GET path`` (:meth:`_probe`), in shard order."""
        return list(await asyncio.gather(*(self._probe(s, path) for s in self.set.shards)))

    async def health(self) -> Response:
        """``GET /health``: the shape of a server's, for the whole corpus, and every shard's
        state; 503 when a shard does not answer ``/health`` as at start-up (a load balancer's
        check of the broker), naming it (drsearch.server.broker_status)."""
        body = broker_status.health_body(self.set.corpus, self.set.split, self.set.shards,
                                         await self.probe_all("/health"))
        status = 503 if body["status"] == "unavailable" else 200
        return Response(canonical_bytes(body), status, media_type=JSON)

    async def stats(self) -> Response:
        """``GET /stats``: the whole corpus' counts, every shard's counts, state and counters,
        and the broker's own request counters (always 200: a shard down is a row's state)."""
        body = broker_status.stats_body(self.set.corpus, self.set.split, self.set.shards,
                                        await self.probe_all("/stats"), self.metrics.snapshot())
        return Response(canonical_bytes(body), 200, media_type=JSON)

    async def prometheus(self) -> Response:
        """``GET /metrics``: the broker's counters and the shards' state, Prometheus text."""
        text = broker_status.metrics_text(self.set.corpus, self.set.shards, await self.probe_all("/health"),
                                          self.metrics.snapshot())
        return Response(text.encode("utf-8"), media_type=PROMETHEUS_CONTENT_TYPE)


def _merge(lists: list[list[dict[str, Any]]], k: int, score: Any) -> list[dict[str, Any]]:
    """The first k of the shards' lists (each in its shard's order) by (score desc, shard,
    position): the whole index's order, ties included."""
    keyed = [(-score(item), shard, pos, item) for shard, items in enumerate(lists)
             for pos, item in enumerate(items)]
    keyed.sort(key=lambda e: (e[0], e[1], e[2]))
    return [e[3] for e in keyed[:k]]


def create_broker_app(shards: ShardSet, *, time_limit_s: float = 15.0) -> Starlette:
    """The broker's ASGI app over ``shards`` (:func:`connect_shards`); a shard that has not
    answered within ``time_limit_s`` seconds is a 503 naming it. Every response carries the
    whole index's ``x-drsearch-identity``; the broker counts and times its requests as a
    server does (``/stats``, ``/metrics``; ``app.state.broker`` is the :class:`Broker`)."""
    broker = Broker(shards, time_limit_s)

    def post(method: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            body = await request.body()
            if len(body) > _MAX_BODY:
                return _error(413, "body_too_large", f"request body over {_MAX_BODY} bytes")
            try:
                return await method(body)  # type: ignore[no-any-return]
            except ShardUnavailable as e:
                return _error(503, "shard_unavailable", str(e))
        return endpoint

    def get(method: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            return await method()  # type: ignore[no-any-return]
        return endpoint

    async def refused(request: Request, exc: Exception) -> Response:
        # no such endpoint or method: the project's error body, as a server's, never a
        # plain-text page
        status = getattr(exc, "status_code", 404)
        kind = "method_not_allowed" if status == 405 else "not_found"
        return _error(status, kind, f"{request.method} {request.url.path}: the broker serves POST /search, "
                      "/retrieve, /open and GET /health, /stats, /metrics")

    app = Starlette(routes=[Route("/search", post(broker.search), methods=["POST"]),
                            Route("/retrieve", post(broker.retrieve), methods=["POST"]),
                            Route("/open", post(broker.open), methods=["POST"]),
                            Route("/health", get(broker.health), methods=["GET"]),
                            Route("/stats", get(broker.stats), methods=["GET"]),
                            Route("/metrics", get(broker.prometheus), methods=["GET"])],
                    exception_handlers={HTTPException: refused})
    app.add_middleware(ServerMiddleware, metrics=broker.metrics, endpoints=_ENDPOINTS,
                       identity=shards.identity)
    app.state.broker = broker
    return app


__all__ = ["Broker", "Shard", "ShardSet", "ShardUnavailable", "connect_shards", "create_broker_app"]
