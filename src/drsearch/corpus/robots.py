"""robots.txt (RFC 9309), fetched once per origin and cached; the decision is made per URL.

The cache holds each origin's *parsed rules* (the group that applies to our user agent),
never a yes/no answer: every URL is checked against the rules with its own path and query.
(DR-256 v1.0.2 cached the first decision per origin and applied it to every other path of
that origin; tests/corpus/test_fetch.py has the test that catches it.)

Matching follows RFC 9309 rather than Python's ``urllib.robotparser`` (which applies the
first matching rule and knows no wildcards):

- groups: consecutive ``user-agent`` lines open a group that holds the rules up to the next
  ``user-agent`` line after a rule. The crawler's product token (the leading letters, ``_``
  and ``-`` of the User-Agent, e.g. ``drsearch-corpus``) selects every group naming it,
  case-insensitively, merged into one; without one, the ``*`` groups apply; without those,
  nothing is disallowed. Rules before the first ``user-agent`` line and unknown keys
  (``sitemap``, ``crawl-delay``, …) are ignored; so is an ``allow``/``disallow`` with an
  empty value. A pattern that starts with neither ``/`` nor ``*`` gets a leading ``/``.
- matching: a rule matches when its pattern matches a prefix of the URL's path plus
  ``?query``; ``*`` matches any run of characters and a final ``$`` anchors the end. The
  matching rule with the longest pattern (in octets) wins, and ``allow`` wins a tie. No
  matching rule, or the path ``/robots.txt``, means allowed.
- percent-encoding, applied alike to patterns and URLs before comparing: characters
  outside ASCII, controls and spaces are UTF-8 percent-encoded; ``%XX`` escapes of
  unreserved characters (``A-Z a-z 0-9 - . _ ~``) are decoded; other escapes are kept with
  upper-case hex digits; in URLs a literal ``*`` or ``$`` becomes ``%2A``/``%24`` so that
  a pattern can name them (RFC 9309 §2.2.3). Other reserved characters compare as written
  (RFC 3986 §6.2.2.2: ``/`` and ``%2F`` are not the same URL).

Per RFC 9309: a robots.txt answered with 4xx means no restrictions; 5xx, a network error
or a timeout means "disallow everything" for this run (recorded as ``robots_unavailable``
and retried on the next run); so do 429 and 408, answers that say nothing about the rules
(drsearch.contract.retry's ``RETRY_STATUSES``). Only the first 500 KiB are parsed.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx

from ..contract.retry import RETRY_STATUSES

MAX_ROBOTS_BYTES = 500 * 1024  # RFC 9309: parse at least 500 KiB

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_KEEP = _UNRESERVED | frozenset(":/?#[]@!$&'()*+,;=%")
_HEX = frozenset("0123456789abcdefABCDEF")
_PRODUCT = re.compile(r"[A-Za-z_-]+")


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL (lower-cased)."""
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def normalize_path(path: str, *, pattern: bool = False) -> str:
    """The percent-encoding normal form in which patterns and URL paths are compared (see the
    module docstring). ``pattern`` keeps ``*`` and ``$`` as wildcards; in a URL they are data."""
    out: list[str] = []
    i = 0
    while i < len(path):
        ch = path[i]
        if ch == "%" and i + 2 < len(path) and path[i + 1] in _HEX and path[i + 2] in _HEX:
            decoded = chr(int(path[i + 1 : i + 3], 16))
            out.append(decoded if decoded in _UNRESERVED else "%" + path[i + 1 : i + 3].upper())
            i += 3
            continue
        if ch == "%":
            out.append("%25")  # a stray "%" is data
        elif not pattern and ch in "*$":
            out.append(f"%{ord(ch):02X}")
        elif ch in _KEEP:
            out.append(ch)
        else:
            out.extend(f"%{b:02X}" for b in ch.encode("utf-8"))
        i += 1
    return "".join(out)


def url_path(url: str) -> str:
    """The part of ``url`` that rules match: path (``/`` when empty) and ``?query``, normalised."""
    parts = urlsplit(url)
    path = parts.path or "/"
    return normalize_path(path + ("?" + parts.query if parts.query else ""))


def product_token(user_agent: str) -> str:
    """The name a robots.txt group uses for a crawler: the leading ``[A-Za-z_-]+`` of its
    User-Agent, lower-cased (``drsearch-corpus/1.0 (…)`` → ``drsearch-corpus``)."""
    m = _PRODUCT.match(user_agent.strip())
    return m.group(0).lower() if m else ""


@dataclass(frozen=True)
class Rule:
    """One ``allow``/``disallow`` line, its pattern normalised."""

    allow: bool
    pattern: str

    def matches(self, path: str) -> bool:
        """Whether the pattern matches a prefix of the (normalised) ``path``."""
        return _compile(self.pattern).match(path) is not None


_COMPILED: dict[str, re.Pattern[str]] = {}


def _compile(pattern: str) -> re.Pattern[str]:
    regex = _COMPILED.get(pattern)
    if regex is None:
        anchored = pattern.endswith("$")
        body = pattern[:-1] if anchored else pattern
        parts = ".*".join(re.escape(part) for part in body.split("*"))
        regex = re.compile(parts + (r"\Z" if anchored else ""), re.DOTALL)
        if len(_COMPILED) < 10_000:
            _COMPILED[pattern] = regex
    return regex


@dataclass(frozen=True)
class AgentRules:
    """The rules of the group(s) that apply to one crawler; decides per URL path."""

    rules: tuple[Rule, ...]

    def allowed_path(self, path: str) -> bool:
        """Whether a normalised path (see ``url_path``) may be fetched: longest match wins,
        ``allow`` wins ties, no match means allowed."""
        if path == "/robots.txt":
            return True
        best: tuple[int, bool] | None = None
        for rule in self.rules:
            if rule.matches(path):
                key = (len(rule.pattern), rule.allow)
                if best is None or key > best:
                    best = key
        return best is None or best[1]

    def allowed(self, url: str) -> bool:
        """Whether ``url`` may be fetched under these rules (its own path and query)."""
        return self.allowed_path(url_path(url))


@dataclass(frozen=True)
class RobotsTxt:
    """A parsed robots.txt: its groups, each a set of user-agent names and its rules."""

    groups: tuple[tuple[frozenset[str], tuple[Rule, ...]], ...]

    @classmethod
    def parse(cls, text: str) -> RobotsTxt:
        groups: list[tuple[set[str], list[Rule]]] = []
        agents: set[str] | None = None  # the group being read
        rules: list[Rule] = []
        in_rules = False
        for raw in text.removeprefix("\ufeff").splitlines():
            line = raw.split("#", 1)[0]
            key, sep, value = line.partition(":")
            if not sep:
                continue
            key, value = key.strip().lower(), value.strip()
            if key in ("user-agent", "useragent", "user agent"):
                if agents is None or in_rules:
                    agents, rules, in_rules = set(), [], False
                    groups.append((agents, rules))
                agents.add("*" if value == "*" else product_token(value))
            elif key in ("allow", "disallow"):
                if agents is None:
                    continue  # a rule outside any group
                in_rules = True
                if value:
                    if not value.startswith(("/", "*")):
                        value = "/" + value
                    rules.append(Rule(key == "allow", normalize_path(value, pattern=True)))
        return cls(tuple((frozenset(a - {""}), tuple(r)) for a, r in groups))

    def for_agent(self, user_agent: str) -> AgentRules:
        """The merged rules of the groups naming ``user_agent``'s product token, else of the
        ``*`` groups, else none."""
        token = product_token(user_agent)
        mine = [rules for agents, rules in self.groups if token and token in agents]
        if not mine:
            mine = [rules for agents, rules in self.groups if "*" in agents]
        return AgentRules(tuple(rule for rules in mine for rule in rules))


ALLOW_ALL = AgentRules(())


class RobotsCache:
    """Per-origin robots.txt rules, fetched at most once per origin (concurrent callers wait
    for the same fetch)."""

    def __init__(self, client: httpx.AsyncClient, user_agent: str) -> None:
        self._client = client
        self._agent = user_agent
        self._rules: dict[str, AgentRules | None] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self.fetches = 0

    async def _load(self, origin: str) -> AgentRules | None:
        """The origin's rules for our agent; None when robots.txt was unavailable (disallow
        everything)."""
        self.fetches += 1
        try:
            resp = await self._client.get(origin + "/robots.txt", follow_redirects=True)
        except httpx.HTTPError:
            return None
        if resp.status_code in RETRY_STATUSES:  # a transient answer says nothing about the rules
            return None
        if resp.status_code >= 400:
            return ALLOW_ALL  # no robots.txt: everything allowed
        text = resp.content[:MAX_ROBOTS_BYTES].decode("utf-8", "replace")
        return RobotsTxt.parse(text).for_agent(self._agent)

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
        return None if rules.allowed(url) else "robots_disallowed"


__all__ = [
    "ALLOW_ALL",
    "MAX_ROBOTS_BYTES",
    "AgentRules",
    "RobotsCache",
    "RobotsTxt",
    "Rule",
    "normalize_path",
    "origin_of",
    "product_token",
    "url_path",
]
