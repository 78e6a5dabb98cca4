"""Response bodies as bytes, serialised once and byte-identical to ``drsearch.index.canonical_bytes``.

The engine's canonical JSON (sorted keys, compact, UTF-8 as is) costs ~0.2 ms for a k=10
search body and ~1.7 ms for k=100 with the standard library; orjson writes the same bytes
in ~4/22 µs. The two agree on everything our bodies hold except the spelling of floats
outside ``[1e-4, 1e16)`` (``1e-06`` against ``1e-6``) and integers beyond 64 bits, so the
fast path checks for those and falls back to the reference encoder (tests pin the equality).
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from ..contract import Document, Hit, SearchResult
from ..contract import canonical_bytes as _reference_bytes

_SORTED = orjson.OPT_SORT_KEYS


def _plain_float(x: float) -> bool:
    """True if orjson and ``json`` spell ``x`` the same way (both in positional notation)."""
    return x == 0.0 or (math.isfinite(x) and 1e-4 <= abs(x) < 1e16)


def _plain(obj: Any) -> bool:
    """True if ``obj`` (decoded JSON) holds no float or integer the two encoders spell apart."""
    if isinstance(obj, str) or obj is None or isinstance(obj, bool):
        return True
    if isinstance(obj, float):
        return _plain_float(obj)
    if isinstance(obj, int):
        return -(1 << 63) <= obj < (1 << 64)
    if isinstance(obj, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in obj.items())
    if isinstance(obj, list | tuple):
        return all(_plain(v) for v in obj)
    return False


def _encode(body: Any, fast: bool) -> bytes:
    """``body`` as canonical bytes: orjson when ``fast`` (the caller checked it is safe), else
    the reference encoder."""
    return orjson.dumps(body, option=_SORTED) if fast else _reference_bytes(body)


def canonical_bytes(body: Any) -> bytes:
    """Any JSON-able body as canonical bytes: exactly ``drsearch.index.canonical_bytes(body)``
    (the same encoding under the same name), faster.

    Raises ValueError/TypeError for what the reference rejects (NaN, non-JSON types).
    """
    return _encode(body, _plain(body))


def search_json(result: SearchResult) -> bytes:
    """The /search body of ``result``; only the hits' scores need checking for the fast path."""
    return _encode(result.to_dict(), all(_plain_float(h.score) for h in result.hits))


def document_json(doc: Document, offset: int = 0, length: int | None = None) -> bytes:
    """The /open body of ``doc`` paged by ``offset``/``length`` (characters)."""
    return _encode(doc.to_dict(offset, length), _plain(doc.metadata))


def _retrieved(h: Hit) -> dict[str, str]:
    return {"id": h.docid, "contents": f"{h.title.replace(chr(10), ' ')}\n{h.chunk_text}"}


def _passage(h: Hit) -> dict[str, str]:
    return {"id": h.docid, "contents": h.chunk_text}  # the passage's own contents, as built


def retrieve_part(result: SearchResult, with_scores: bool, passages: bool = False) -> bytes:
    """One query's list of a /retrieve body, as canonical bytes (see :func:`retrieve_json`).

    ``RETRIEVE_OPEN + b",".join(parts) + RETRIEVE_CLOSE`` is byte for byte
    ``retrieve_json(results, with_scores)``: compact JSON has nothing between the items of a
    list but the comma, so a batch is encoded one query at a time (and never held twice).
    """
    item = _passage if passages else _retrieved
    if with_scores:
        items: list[Any] = [{"document": item(h), "score": h.score} for h in result.hits]
        return _encode(items, all(_plain_float(h.score) for h in result.hits))
    return _encode([item(h) for h in result.hits], True)


RETRIEVE_OPEN = b'{"result":['
RETRIEVE_CLOSE = b"]}"


def retrieve_json(results: list[SearchResult], with_scores: bool, passages: bool = False) -> bytes:
    """The /retrieve body (Search-R1's shape): ``{"result": [[item, ...] per query]}``.

    An item is ``{"document": {"id", "contents"}, "score"}`` with scores, else the bare
    ``{"id", "contents"}``; ``contents`` is the title, a newline, then the best chunk's text
    (Search-R1's clients split the title off at the first newline, so a newline inside a
    title is sent as a space). ``passages`` (an index built from passage lines,
    ``Engine.passages``): ``contents`` is the passage's ``contents`` exactly as built (its
    one chunk), which is what Search-R1's own server returns for its corpus rows.
    """
    return (RETRIEVE_OPEN + b",".join(retrieve_part(r, with_scores, passages) for r in results)
            + RETRIEVE_CLOSE)


__all__ = ["RETRIEVE_CLOSE", "RETRIEVE_OPEN", "canonical_bytes", "document_json", "retrieve_json",
           "retrieve_part", "search_json"]
