"""robots.txt, fetched once per origin and cached; the decision is made per URL.

The cache holds each origin's *parsed rules*, never a yes/no answer: every URL is checked
against the rules with its own path and query. (DR-256 v1.0.2 cached the first decision
per origin and applied it to every other path of that origin; tests/corpus/test_fetch.py
has the test that catches it.)

Per RFC 9309: a robots.txt answered with 4xx means no restrictions; 5xx, a network error
or a timeout means "disallow everything" for this run (recorded as ``robots_unavailable``
and retried on the next run).
"""

from __future__ import annotations

import asyncio
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

import httpx

MAX_ROBOTS_BYTES = 500 * 1024  # RFC 9309: parse at least 500 KiB


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL (lower-cased)."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


class RobotsCache:
    """Per-origin robots.txt rules, fetched at most once per origin (concurrent callers wait
    for the same fetch)."""

    def __init__(self, client: httpx.AsyncClient, user_agent: str) -> None:
        self._client = client
        self._agent = user_agent
        self._rules: dict[str, RobotFileParser | None] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.fetches = 0

    async def _load(self, origin: str) -> RobotFileParser | None:
        """The origin's rules; None when robots.txt was unavailable (disallow everything)."""
        self.fetches += 1
        rules = RobotFileParser(origin + "/robots.txt")
        try:
            resp = await self._client.get(origin + "/robots.txt", follow_redirects=True)
        except httpx.HTTPError:
            return None
        if resp.status_code >= 500 or resp.status_code == 429:
            return None
        if resp.status_code >= 400:
            rules.parse([])  # no robots.txt: everything allowed
        else:
            rules.parse(resp.content[:MAX_ROBOTS_BYTES].decode("utf-8", "replace").splitlines())
        return rules

    async def decision(self, url: str) -> str | None:
        """``None`` when ``url`` may be fetched, else the reason (``robots_disallowed``,
        ``robots_unavailable``). Checks this URL's own path against its origin's rules."""
        origin = origin_of(url)
        lock = self._locks.setdefault(origin, asyncio.Lock())
        async with lock:
            if origin not in self._rules:
                self._rules[origin] = await self._load(origin)
        rules = self._rules[origin]
        if rules is None:
            return "robots_unavailable"
        return None if rules.can_fetch(self._agent, url) else "robots_disallowed"


__all__ = ["MAX_ROBOTS_BYTES", "RobotsCache", "origin_of"]
