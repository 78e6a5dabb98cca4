"""The request contract of every front-end, in one place (no web framework here).

``POST /search`` and ``POST /open``, the MCP server's tools, the agents' ``search``/``open``
tools and the ``drsearch search``/``drsearch open`` commands all check a request with the
functions below, so the same bad input gets the same error class and the same message
whichever door it comes through:

- :class:`Limits`: the limits and defaults (``max_k``, ``default_k``, the query's
  character and distinct-term caps, the unknown-field policy), defaults defined once here;
- :func:`parse_search` / :func:`parse_open`: a JSON-like mapping (a decoded HTTP body, a
  tool call's arguments, the CLI's options) to a frozen :class:`SearchRequest` /
  :class:`OpenRequest`, or an :class:`~drsearch.contract.errors.InvalidInputError`
  (``InvalidQueryError``, ``InvalidKError`` or ``InvalidRequestError``) whose message is
  stable, one line and says what was given;
- :func:`canonical_json` / :func:`canonical_bytes`: the canonical JSON encoding of every
  response body, run file and hashed value;
- :func:`error_body`: the one error body ``{"error": {"message", "type"}}``, capped;
- the search/open tool contract: tool names, parameter schemas
  (:func:`search_parameters`, :func:`open_parameters`, :func:`strict_parameters`),
  :func:`tool_arguments` and :func:`hit_passage`, rendered by ``drsearch.agents.tools`` and
  ``drsearch.mcpserver.tools``.

The integer rule (JSON Schema's ``integer``): ``k``, ``offset`` and ``length`` accept a JSON
integer, or a number with no fractional part (``5.0``, ``1e1``: what JSON Schema counts as an
integer and what a model's tool call may write); never ``5.5``, ``"5"`` or ``true``. Integers
must also lie within ±(2**53 − 1), the range every JSON reader holds exactly (RFC 7493), so
a "huge" offset or length is refused rather than silently rounded by some client. The CLI
reads its option text as the JSON number an HTTP body would carry (:func:`number_from_text`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .errors import InvalidInputError, InvalidKError, InvalidQueryError, InvalidRequestError

# -- limits ---------------------------------------------------------------------------------
MAX_K = 100
"""The largest ``k`` of one search (HTTP, MCP, the agents' tools, ``drsearch search QUERY``)."""
MAX_RUN_K = 10_000
"""The deepest ``k`` of batch retrieval (TREC runs are cut at 1000 by convention)."""
DEFAULT_K = 10
MAX_QUERY_CHARS = 32_768
# Distinct terms a query may have: Lucene's default clause limit. Every term costs a
# posting-list read and a pass over each hit's text for its snippet, so without a cap a
# 32 KB query of short words costs seconds.
MAX_QUERY_TERMS = 1024
MAX_JSON_INT = 2**53 - 1
"""The largest integer a request may carry (I-JSON: exact in every JSON reader)."""
DEFAULT_TIME_LIMIT_S = 10.0
"""The default ``time_limit_s`` of one request (body to encoding over HTTP, one search in-process)."""
MAX_MESSAGE_CHARS = 500
"""Error messages longer than this are cut (a hostile input is never echoed back whole)."""

UnknownFields = Literal["reject", "ignore"]
SEARCH_FIELDS = ("query", "k")
OPEN_FIELDS = ("docid", "url", "offset", "length")
RETRIEVE_FIELDS = ("queries", "topk", "return_scores")
# Queries in one /retrieve batch unless the server says otherwise (Search-R1's trainer sends
# one batch per rollout step: its batch size).
DEFAULT_MAX_BATCH_QUERIES = 256


@dataclass(frozen=True, slots=True)
class Limits:
    """What one front-end accepts. Immutable; an inconsistent value raises ValueError.

    ``max_k`` (1..MAX_RUN_K) bounds ``k``; ``default_k`` is ``k`` when a request gives none;
    ``max_query_chars`` and ``max_query_terms`` cap the query (at most the engine's own
    caps); ``unknown_fields`` rejects (``"reject"``) or drops (``"ignore"``) fields the
    request kind does not define.
    """

    max_k: int = MAX_K
    default_k: int = DEFAULT_K
    max_query_chars: int = MAX_QUERY_CHARS
    max_query_terms: int = MAX_QUERY_TERMS
    unknown_fields: UnknownFields = "reject"

    def __post_init__(self) -> None:
        if not 1 <= self.max_k <= MAX_RUN_K:
            raise ValueError(f"max_k must be in 1..{MAX_RUN_K}, got {self.max_k}")
        if not 1 <= self.default_k <= self.max_k:
            raise ValueError(f"default_k must be in 1..max_k ({self.max_k}), got {self.default_k}")
        if not 1 <= self.max_query_chars <= MAX_QUERY_CHARS:
            raise ValueError(f"max_query_chars must be in 1..{MAX_QUERY_CHARS}, got {self.max_query_chars}")
        if not 1 <= self.max_query_terms <= MAX_QUERY_TERMS:
            raise ValueError(f"max_query_terms must be in 1..{MAX_QUERY_TERMS}, got {self.max_query_terms}")
        if self.unknown_fields not in ("reject", "ignore"):
            raise ValueError(f"unknown_fields must be 'reject' or 'ignore', got {self.unknown_fields!r}")


DEFAULT_LIMITS = Limits()


# -- requests -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class SearchRequest:
    """A checked search: free-text ``query`` (never query syntax) and ``k`` results."""

    query: str
    k: int


@dataclass(frozen=True, slots=True)
class OpenRequest:
    """A checked open: exactly one of ``docid``/``url``; text from ``offset``, ``length``
    characters (None: to the end)."""

    docid: str | None
    url: str | None
    offset: int = 0
    length: int | None = None


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``: sorted keys, compact, UTF-8 as is, no NaN.

    The one encoding of response bodies, run files, cache keys and hashed values: the same
    value is the same text everywhere. Raises ValueError/TypeError for what JSON cannot hold.
    """
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False)


def canonical_bytes(value: Any) -> bytes:
    """:func:`canonical_json` as UTF-8 bytes."""
    return canonical_json(value).encode("utf-8")


def _shown(value: object) -> str:
    """``value`` as the JSON a client sent (``true``, ``"5"``, ``5.5``), cut to 40 characters."""
    try:
        text = canonical_json(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object" if isinstance(value, Mapping) else type(value).__name__


def json_integer(value: object) -> int | None:
    """``value`` as an integer under the integer rule (module docstring), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return None


def number_from_text(text: str) -> object:
    """A CLI option's text read as the JSON value an HTTP body would carry (``"5"`` and
    ``"5.0"`` are numbers; ``"true"`` is a boolean); text that is no JSON value stays text,
    so the request check names it. ``+5``, ``5_0``, ``0x5`` and ``NaN`` are text, as JSON says."""
    try:
        return json.loads(text, parse_constant=_not_json)
    except ValueError:
        return text


@dataclass(frozen=True, slots=True)
class RetrieveRequest:
    """A checked batch retrieval (Search-R1's ``/retrieve``): each of ``queries`` as a
    search's query, ``topk`` documents each, scores in the answer when ``return_scores``."""

    queries: tuple[str, ...]
    topk: int
    return_scores: bool = False


def _not_json(name: str) -> object:
    """Python's json reads NaN and Infinity; JSON (and an HTTP body here) has no such number."""
    raise ValueError(f"{name} is not JSON")


def check_k(value: object, max_k: int = MAX_K) -> int:
    """``value`` as ``k``: an integer (the integer rule) in 1..``max_k``. Raises InvalidKError."""
    k = json_integer(value)
    if k is None or not 1 <= k <= max_k:
        raise InvalidKError(f"k must be an integer in 1..{max_k}, got {_shown(value)}")
    return k


def check_query(value: object, max_chars: int = MAX_QUERY_CHARS) -> str:
    """``value`` as a query: a string with a non-whitespace character, at most ``max_chars``
    characters. Raises InvalidQueryError. (The distinct-term cap needs the index's
    tokenizer: the engine checks it, see :func:`too_many_terms`.)"""
    if not isinstance(value, str):
        raise InvalidQueryError(f"query must be a string, got {_type_name(value)}")
    if not value.strip():
        raise InvalidQueryError("query is empty (no character other than whitespace)")
    if len(value) > max_chars:
        raise InvalidQueryError(f"query is {len(value)} characters long; the limit is {max_chars}")
    return value


def too_many_terms(max_terms: int) -> InvalidQueryError:
    """The error of a query with more than ``max_terms`` distinct terms."""
    return InvalidQueryError(f"query has more than {max_terms} distinct terms; the limit is {max_terms}")


def _fields(data: object, allowed: tuple[str, ...], limits: Limits) -> Mapping[str, Any]:
    """``data`` as a mapping of the allowed fields (unknown ones rejected or dropped); never
    a copy when every field is allowed (the hot path of every request), never mutated."""
    if not isinstance(data, dict):
        if not isinstance(data, Mapping):
            raise InvalidRequestError(f"request must be a JSON object, got {_type_name(data)}")
        data = dict(data)
    for key in data:
        if key not in allowed:
            break
    else:
        return data
    unknown = sorted(str(key) for key in data if key not in allowed)
    if limits.unknown_fields == "reject":
        raise InvalidRequestError("unknown field " + ", ".join(repr(u) for u in unknown[:3])
                                  + (f" and {len(unknown) - 3} more" if len(unknown) > 3 else ""))
    return {key: data[key] for key in allowed if key in data}


def _integer_field(fields: Mapping[str, Any], name: str, least: int) -> int | None:
    value = fields.get(name)
    if value is None:
        return None
    number = json_integer(value)
    if number is None or not least <= number <= MAX_JSON_INT:
        raise InvalidRequestError(f"{name} must be an integer in {least}..{MAX_JSON_INT}, "
                                  f"got {_shown(value)}")
    return number


def parse_search(data: object, limits: Limits = DEFAULT_LIMITS) -> SearchRequest:
    """A search request from ``data`` (``{"query": str, "k": int?}``) under ``limits``.

    Checks, first failure wins: a JSON object; no unknown field (unless ignored); ``query``
    present and valid (:func:`check_query`, InvalidQueryError); ``k`` valid when given
    (:func:`check_k`, InvalidKError), else ``limits.default_k``.
    """
    fields = _fields(data, SEARCH_FIELDS, limits)
    if "query" not in fields:
        raise InvalidQueryError("missing field 'query'")
    query = check_query(fields["query"], limits.max_query_chars)
    k = check_k(fields["k"], limits.max_k) if "k" in fields else limits.default_k
    return SearchRequest(query, k)


def parse_open(data: object, limits: Limits = DEFAULT_LIMITS,
               fields: tuple[str, ...] = OPEN_FIELDS) -> OpenRequest:
    """An open request from ``data`` (``{"docid" | "url": str, "offset": int?, "length": int?}``).

    ``fields`` are the ones this front-end defines (the agents' ``open`` tool has no
    ``length``: its page size is the preset's). Checks, first failure wins, each an
    InvalidRequestError: a JSON object; no unknown field; ``docid``/``url`` strings when
    present; exactly one of them; ``offset`` an integer >= 0; ``length`` an integer >= 1, or
    null (to the end of the text, as when it is left out).
    """
    given = _fields(data, fields, limits)
    for key in ("docid", "url"):
        if key in given and not isinstance(given[key], str):
            raise InvalidRequestError(f"{key} must be a string, got {_type_name(given[key])}")
    if ("docid" in given) == ("url" in given):
        raise InvalidRequestError("give exactly one of docid or url")
    if "offset" in given and given["offset"] is None:  # null is no offset (length: null is "to the end")
        raise InvalidRequestError(f"offset must be an integer in 0..{MAX_JSON_INT}, got null")
    offset = _integer_field(given, "offset", 0)
    length = _integer_field(given, "length", 1)
    return OpenRequest(given.get("docid"), given.get("url"), offset or 0, length)


def parse_retrieve(data: object, limits: Limits = DEFAULT_LIMITS,
                   max_queries: int = DEFAULT_MAX_BATCH_QUERIES) -> RetrieveRequest:
    """A batch retrieval from ``data`` (``{"queries": [str, ...], "topk": int?,
    "return_scores": bool?}``): every query held to exactly a search's query rules, ``topk``
    to ``k``'s.

    Checks, first failure wins: a JSON object; no unknown field; ``queries`` a list of 1..
    ``max_queries`` items (InvalidRequestError); each query valid (InvalidQueryError naming
    its position, ``queries.3: ...``); ``topk`` valid when given (InvalidKError), else
    ``limits.default_k``; ``return_scores`` a boolean (InvalidRequestError).
    """
    fields = _fields(data, RETRIEVE_FIELDS, limits)
    if "queries" not in fields:
        raise InvalidRequestError("missing field 'queries'")
    queries = fields["queries"]
    if not isinstance(queries, list):
        raise InvalidRequestError(f"queries must be a list of strings, got {_type_name(queries)}")
    if not 1 <= len(queries) <= max_queries:
        raise InvalidRequestError(f"queries must hold 1..{max_queries} queries, got {len(queries)}")
    checked = []
    for i, query in enumerate(queries):
        try:
            checked.append(check_query(query, limits.max_query_chars))
        except InvalidQueryError as e:
            raise InvalidQueryError(f"queries.{i}: {e}") from None
    topk = limits.default_k
    if "topk" in fields:
        topk = json_integer(fields["topk"]) or 0
        if not 1 <= topk <= limits.max_k:
            raise InvalidKError(f"topk must be an integer in 1..{limits.max_k}, got {_shown(fields['topk'])}")
    scores = fields.get("return_scores", False)
    if not isinstance(scores, bool):
        raise InvalidRequestError(f"return_scores must be true or false, got {_shown(scores)}")
    return RetrieveRequest(tuple(checked), topk, scores)


# -- error body -----------------------------------------------------------------------------
def error_body(error_type: str, message: str) -> bytes:
    """The canonical bytes of ``{"error": {"message", "type"}}``, the message cut to
    MAX_MESSAGE_CHARS characters. The one error body of the HTTP API, the in-process
    searcher, the MCP tools and the agents' tool errors."""
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 1] + "…"
    return canonical_bytes({"error": {"message": message, "type": error_type}})


# -- the search/open tool contract ------------------------------------------------------------
SEARCH_TOOL = "search"
OPEN_TOOL = "open"


def search_parameters(limits: Limits) -> dict[str, Any]:
    """JSON schema of the ``search`` tool's arguments (``query``, optional ``k``)."""
    return {"type": "object", "additionalProperties": False, "required": ["query"], "properties": {
        "query": {"type": "string", "description": "free-text keywords"},
        "k": {"type": "integer", "minimum": 1, "maximum": limits.max_k,
              "description": f"results to return (default {limits.default_k})"}}}


def open_parameters(*, length: bool) -> dict[str, Any]:
    """JSON schema of the ``open`` tool's arguments: ``docid`` or ``url``, optional
    ``offset`` and, when ``length``, optional ``length`` (else the page size is fixed)."""
    props: dict[str, Any] = {
        "docid": {"type": "string", "description": "docid from a search result"},
        "url": {"type": "string", "description": "page URL (instead of docid)"},
        "offset": {"type": "integer", "minimum": 0,
                   "description": "character offset of the page (default 0)"}}
    if length:
        props["length"] = {"type": "integer", "minimum": 1,
                           "description": "characters to return (default: all)"}
    return {"type": "object", "additionalProperties": False, "properties": props}


def strict_parameters(parameters: dict[str, Any]) -> dict[str, Any]:
    """``parameters`` as strict mode requires: every property listed in ``required`` and the
    ones that were optional made nullable (``null`` then means "not given":
    :func:`tool_arguments` drops it). ``additionalProperties`` is false already."""
    props = parameters["properties"]
    optional = set(props) - set(parameters.get("required", []))
    strict_props = {name: ({**schema, "type": [schema["type"], "null"]} if name in optional else schema)
                    for name, schema in props.items()}
    return {**parameters, "properties": strict_props, "required": list(props)}


def tool_arguments(arguments: object) -> object:
    """A tool call's arguments as the request to parse: null values dropped (strict-mode
    schemas make clients send every property, null for "not given"); anything that is not
    an object is passed on for :func:`parse_search`/:func:`parse_open` to refuse."""
    if isinstance(arguments, Mapping):
        return {str(key): value for key, value in arguments.items() if value is not None}
    return arguments


def hit_passage(hit: Mapping[str, Any]) -> str:
    """A search hit's best passage (its chunk text, else its snippet) on one line."""
    chunk = hit.get("chunk")
    text = chunk.get("text") if isinstance(chunk, Mapping) else None
    return " ".join(str(text or hit.get("snippet", "")).split())


def error_of(exc: InvalidInputError) -> bytes:
    """The error body of a refused request."""
    return error_body(exc.error_type, exc.message)



def check_http_url(url: str | None) -> str | None:
    """``url`` itself if it is an ``http://`` or ``https://`` URL with something after the
    scheme (None passes); ValueError otherwise (a pydantic validator's message)."""
    scheme, _, rest = (url or "").partition("://")
    if url is not None and not (scheme in ("http", "https") and rest.strip("/")):
        raise ValueError(f"{url!r} is not an http:// or https:// URL")
    return url

__all__ = [
    "DEFAULT_K",
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_BATCH_QUERIES",
    "DEFAULT_TIME_LIMIT_S",
    "MAX_JSON_INT",
    "MAX_K",
    "MAX_MESSAGE_CHARS",
    "MAX_QUERY_CHARS",
    "MAX_QUERY_TERMS",
    "MAX_RUN_K",
    "OPEN_FIELDS",
    "OPEN_TOOL",
    "RETRIEVE_FIELDS",
    "SEARCH_FIELDS",
    "SEARCH_TOOL",
    "Limits",
    "OpenRequest",
    "RetrieveRequest",
    "SearchRequest",
    "UnknownFields",
    "canonical_bytes",
    "canonical_json",
    "check_http_url",
    "check_k",
    "check_query",
    "error_body",
    "error_of",
    "hit_passage",
    "json_integer",
    "number_from_text",
    "open_parameters",
    "parse_open",
    "parse_retrieve",
    "parse_search",
    "search_parameters",
    "strict_parameters",
    "too_many_terms",
    "tool_arguments",
]
