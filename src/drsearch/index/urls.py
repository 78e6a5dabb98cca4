"""URL canonicalisation, shared by the engine (open by URL) and the corpus builder.

Two spellings of one address map to the same canonical string:

- scheme and host are lower-cased, an IDN host is IDNA-encoded, a trailing dot on the
  host is dropped;
- the default port (80 for http, 443 for https) is dropped;
- the fragment is dropped;
- dot segments in the path are resolved, an empty path becomes ``/`` and a trailing
  slash on a non-root path is dropped;
- percent-escapes are upper-cased, escapes of unreserved characters are decoded and
  characters that must be escaped are escaped;
- tracking parameters (``utm_*``, ``gclid``, ``fbclid`` …) are removed and the remaining
  query parameters are sorted (stable, so repeated keys keep their order).

The function is idempotent: ``canonicalize_url(canonicalize_url(u)) == canonicalize_url(u)``.
Strings that are not absolute http(s) URLs are returned stripped of surrounding whitespace
(and of a fragment), so lookups of odd identifiers still behave predictably.
"""

from __future__ import annotations

import contextlib
import re
from urllib.parse import quote, unquote, urlsplit, urlunsplit

TRACKING_PARAMS = frozenset(
    {
        "gclid", "gclsrc", "dclid", "fbclid", "msclkid", "yclid", "igshid", "mc_cid", "mc_eid",
        "_ga", "_gl", "_hsenc", "_hsmi", "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id",
        "wickedid", "rb_clickid", "s_cid", "twclid", "ttclid", "srsltid",
    }
)
TRACKING_PREFIXES = ("utm_", "pk_", "hsa_")
DEFAULT_PORTS = {"http": 80, "https": 443}

# RFC 3986 unreserved characters never need escaping; everything else outside this
# "safe" set is escaped. Existing escapes are first normalised (see _normalise_escapes).
_PATH_SAFE = "/:@!$&'()*+,;=-._~"
_QUERY_SAFE = "/:@!$'()*+,;-._~?"
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _normalise_escapes(part: str, safe: str) -> str:
    """Decode escapes of unreserved characters, upper-case the rest, escape raw unsafe chars."""

    def fix(m: re.Match[str]) -> str:
        ch = chr(int(m.group(1), 16))
        return ch if ch in _UNRESERVED else "%" + m.group(1).upper()

    part = _ESCAPE.sub(fix, part)
    # Escape what is left raw, without double-escaping the surviving %XX sequences.
    pieces = re.split(r"(%[0-9A-F]{2})", part)
    return "".join(p if _ESCAPE.fullmatch(p) else quote(p, safe=safe) for p in pieces)


def _resolve_dots(path: str) -> str:
    out: list[str] = []
    segments = path.split("/")
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == ".":
            if last:
                out.append("")
            continue
        if seg == "..":
            if len(out) > 1:
                out.pop()
            if last:
                out.append("")
            continue
        out.append(seg)
    result = "/".join(out)
    return result if result.startswith("/") else "/" + result


def _is_tracking(key: str) -> bool:
    k = unquote(key).lower()
    return k in TRACKING_PARAMS or k.startswith(TRACKING_PREFIXES)


def _canonical_host(host: str) -> str:
    host = host.lower().rstrip(".")
    if host and not host.isascii():
        with contextlib.suppress(UnicodeError):
            host = host.encode("idna").decode("ascii")
    return host


def canonicalize_url(url: str) -> str:
    """Return the canonical form of ``url`` (see the module docstring). Never raises."""
    raw = url.strip()
    scheme, colon, _ = raw.partition(":")
    if colon and scheme.isascii() and scheme.isalpha() and scheme.lower() not in DEFAULT_PORTS:
        # urlsplit takes such a scheme as written (letters before the first colon), and a URL
        # of another scheme than http(s) is kept as it is below, less its fragment: the same
        # result without parsing it (a passage's ``passage:<id>``, millions of them a build).
        return raw.split("#", 1)[0]
    return _parsed(raw)


def _parsed(raw: str) -> str:
    """:func:`canonicalize_url` of a stripped URL, parsed."""
    try:
        parts = urlsplit(raw)
        port = parts.port
    except ValueError:
        return raw.split("#", 1)[0]
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS or not parts.hostname:
        return raw.split("#", 1)[0]
    host = _canonical_host(parts.hostname)
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = host if port is None or port == DEFAULT_PORTS[scheme] else f"{host}:{port}"
    if parts.username is not None:
        cred = parts.username + (f":{parts.password}" if parts.password is not None else "")
        netloc = f"{cred}@{netloc}"
    path = _resolve_dots(_normalise_escapes(parts.path or "/", _PATH_SAFE))
    if len(path) > 1 and path.endswith("/"):
        path = path.rstrip("/") or "/"
    params = [p for p in parts.query.split("&") if p and not _is_tracking(p.split("=", 1)[0])]
    params = [_normalise_escapes(p, _QUERY_SAFE + "=&") for p in params]
    params.sort(key=lambda p: p.split("=", 1)[0])
    return urlunsplit((scheme, netloc, path, "&".join(params), ""))


__all__ = ["TRACKING_PARAMS", "canonicalize_url"]
