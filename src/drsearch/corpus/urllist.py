"""Reading a URL list: one absolute http(s) URL per line; ``#`` comments and blank lines ignored.

A malformed line (not http/https, no host, spaces inside, unparsable port …) is reported
with its line number and skipped, never fatal; a URL listed twice (same canonical form)
is fetched once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from ..contract import InvalidInputError
from ..index import canonicalize_url


@dataclass
class UrlList:
    """The usable URLs of a list, in first-seen order, and what was skipped."""

    urls: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    malformed: int = 0
    duplicates: int = 0


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be fetched, or None when it is an absolute http(s) URL with a host."""
    if any(c.isspace() for c in url):
        return "contains whitespace"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as e:
        return f"unparsable ({e})"
    if parts.scheme.lower() not in ("http", "https"):
        return f"scheme must be http or https, not {parts.scheme or 'missing'!r}"
    if not parts.hostname:
        return "no host"
    return None


def host_of(url: str) -> str:
    """The lower-cased host of a URL (``(none)`` when it has none)."""
    try:
        return (urlsplit(url).hostname or "").lower() or "(none)"
    except ValueError:
        return "(none)"


def parse_url_lines(lines: list[str], name: str = "<urls>") -> UrlList:
    """Parse the lines of a URL list (pure; see the module docstring)."""
    out = UrlList()
    seen: set[str] = set()
    for n, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        problem = url_problem(line)
        if problem:
            out.malformed += 1
            out.problems.append(f"{name}:{n}: {problem}: {line[:200]!r}; skipped")
            continue
        canonical = canonicalize_url(line)
        if canonical in seen:
            out.duplicates += 1
            continue
        seen.add(canonical)
        out.urls.append(line)
    return out


def read_url_list(path: str | os.PathLike[str]) -> UrlList:
    """Read a URL list file (UTF-8). Raises InvalidInputError when it cannot be read."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise InvalidInputError(f"cannot read URL list {p}: {e.strerror}") from e
    return parse_url_lines(text.splitlines(), str(p))


__all__ = ["UrlList", "host_of", "parse_url_lines", "read_url_list", "url_problem"]
