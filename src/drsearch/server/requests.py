"""Request bodies: size-limited reading, JSON decoding, and the request contract's checks.

A body is decoded as JSON (``invalid_json``, 422, when it is not) and checked by the one
request contract of every front-end (:mod:`drsearch.contract.request`: ``parse_search``,
``parse_open``, ``parse_retrieve`` under the app's ``Limits``), so HTTP, the MCP server, the
agents' tools and the CLI refuse the same input with the same error (``invalid_k``, ``invalid_query``,
``invalid_request``, 422) and message. The pydantic models below only describe that
contract in the OpenAPI schema (``max_k``, the query cap and the unknown-field policy
follow the settings); they check nothing (the schemathesis tests keep the two in step).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import from_json
from starlette.requests import ClientDisconnect, Request
from starlette.types import Receive, Scope

from ..contract import (
    MAX_JSON_INT,
    Limits,
    OpenRequest,
    RetrieveRequest,
    SearchRequest,
    parse_open,
    parse_retrieve,
    parse_search,
)
from .errors import MalformedBodyError, PayloadTooLargeError, RequestTimeoutError
from .settings import ServerSettings

# What str.strip() removes (str.isspace()), spelled as a character class that JSON Schema's
# (ECMA 262) and Python's regular expressions read alike: the schema's "a query has a
# character that is not whitespace" is then exactly the engine's "query.strip() is not
# empty" (\s differs between the two: U+001C..U+001F, U+0085, U+FEFF).
# Every code point str.isspace() accepts is at most U+3000 in Python's Unicode database:
# scanning up to there, not all 1,114,112 code points, saves ~0.1 s in each process that
# imports the server (serve, each worker, the deep check) before its first answer.
# tests/server/test_serve_start.py scans the whole range, so an upgrade that adds one past
# it fails there.
LAST_SPACE = 0x3000
_SPACE_CODES = [c for c in range(LAST_SPACE + 1) if chr(c).isspace()]
NOT_BLANK = "[^" + "".join(f"\\u{c:04x}" for c in _SPACE_CODES) + "]"


def _search_schema(schema: dict[str, Any]) -> None:
    schema["properties"]["query"]["pattern"] = NOT_BLANK


def _retrieve_schema(schema: dict[str, Any]) -> None:
    schema["properties"]["queries"]["items"]["pattern"] = NOT_BLANK


def _open_schema(schema: dict[str, Any]) -> None:
    """The schema of exactly what the validator accepts (pydantic's own is looser)."""
    props = schema["properties"]
    for key in ("docid", "url"):
        props[key] = {"type": "string", "description": props[key]["description"],
                      "title": props[key]["title"]}
    props["length"] = {"anyOf": [{"type": "integer", "minimum": 1, "maximum": MAX_JSON_INT},
                                 {"type": "null"}],
                       "default": None, "description": props["length"]["description"],
                       "title": props["length"]["title"]}
    schema["oneOf"] = [{"required": ["docid"]}, {"required": ["url"]}]


class SearchRequestSchema(BaseModel):
    """``POST /search``: free-text ``query`` (never query syntax) and ``k`` results (schema only)."""

    query: str
    k: int


class OpenRequestSchema(BaseModel):
    """``POST /open``: exactly one of ``docid``/``url``, optional text paging (schema only)."""

    docid: str | None = None
    url: str | None = None
    offset: int = 0
    length: int | None = None


class RetrieveRequestSchema(BaseModel):
    """``POST /retrieve`` (Search-R1's retrieval server): a batch of free-text ``queries``,
    ``topk`` documents each, scores only when ``return_scores`` (schema only)."""

    queries: list[str]
    topk: int
    return_scores: bool = False


@dataclass(frozen=True)
class RequestModels:
    """The OpenAPI request models of one app, built from its settings by :func:`request_models`."""

    search: type[SearchRequestSchema]
    open: type[OpenRequestSchema]
    retrieve: type[RetrieveRequestSchema]


def request_models(settings: ServerSettings) -> RequestModels:
    """Request schemas whose limits and unknown-field policy follow ``settings``."""
    reject = settings.unknown_fields == "reject"
    config = ConfigDict(strict=True, frozen=True, extra="forbid" if reject else "ignore")

    def schema_of(edit: Any) -> Any:
        def extra(schema: dict[str, Any]) -> None:
            edit(schema)
            # pydantic drops additionalProperties from models with an after-validator
            if reject:
                schema["additionalProperties"] = False
        return extra

    class StrictSearchRequest(SearchRequestSchema):
        model_config = config | ConfigDict(title="SearchRequest",
                                           json_schema_extra=schema_of(_search_schema))
        query: str = Field(min_length=1, max_length=settings.max_query_chars,
                           description="free text; operators, quotes and colons are plain words; "
                                       f"at most {settings.max_query_terms} distinct terms")
        k: int = Field(default=settings.default_k, ge=1, le=settings.max_k,
                       description="how many documents to return")

    class StrictOpenRequest(OpenRequestSchema):
        model_config = config | ConfigDict(title="OpenRequest", json_schema_extra=schema_of(_open_schema))
        docid: str | None = Field(default=None, description="the document's docid")
        url: str | None = Field(default=None, description="any spelling of any of its URLs")
        offset: int = Field(default=0, ge=0, le=MAX_JSON_INT,
                            description="first character of the text to return")
        length: Annotated[int, Field(ge=1, le=MAX_JSON_INT)] | None = Field(
            default=None, description="characters of text to return")

    # Each query is held to exactly /search's query rules, topk to its k rules.
    Query = Annotated[str, Field(min_length=1, max_length=settings.max_query_chars)]

    class StrictRetrieveRequest(RetrieveRequestSchema):
        model_config = config | ConfigDict(title="RetrieveRequest",
                                           json_schema_extra=schema_of(_retrieve_schema))
        queries: list[Query] = Field(
            min_length=1, max_length=settings.max_batch_queries,
            description=f"free-text queries (each as /search's query), at most "
                        f"{settings.max_batch_queries} per request")
        topk: int = Field(default=settings.default_k, ge=1, le=settings.max_k,
                          description="how many documents to return per query")
        return_scores: bool = Field(default=False, description="wrap each document with its score")

    return RequestModels(StrictSearchRequest, StrictOpenRequest, StrictRetrieveRequest)


async def read_body(request: Request, limit: int, deadline: float | None = None) -> bytes:
    """The request body, at most ``limit`` bytes (:func:`receive_body` of the request)."""
    return await receive_body(request.scope, request.receive, limit, deadline)


async def receive_body(scope: Scope, receive: Receive, limit: int, deadline: float | None = None) -> bytes:
    """The body of the ASGI request ``scope``, read from ``receive``, at most ``limit`` bytes.
    Raises PayloadTooLargeError beyond it.

    A declared Content-Length over the limit is refused before reading anything; a body
    without one (chunked) is counted as it arrives. A body still arriving at ``deadline``
    (``time.monotonic()`` seconds) raises RequestTimeoutError. A client that goes away
    mid-body raises Starlette's ``ClientDisconnect`` (the middleware counts it).
    """
    if deadline is None:
        return await _receive_body(scope, receive, limit)
    try:
        async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
            return await _receive_body(scope, receive, limit)
    except TimeoutError:
        raise RequestTimeoutError("request body not received within the request's time limit") from None


def _declared_length(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name.lower() == b"content-length":
            return bytes(value)
    return None


async def _receive_body(scope: Scope, receive: Receive, limit: int) -> bytes:
    # Starlette's Request.body()/stream() without the Request: the same messages read the same way.
    declared = _declared_length(scope)
    counted = not (declared is not None and declared.isascii() and declared.isdigit())
    if not counted and declared is not None and int(declared) > limit:
        raise PayloadTooLargeError(f"request body is {declared.decode()} bytes; the limit is {limit}")
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()
        if message["type"] != "http.request":
            continue
        part = message.get("body", b"")
        if part:
            size += len(part)
            if counted and size > limit:
                raise PayloadTooLargeError(f"request body exceeds the limit of {limit} bytes")
            parts.append(part)
        if not message.get("more_body", False):
            return parts[0] if len(parts) == 1 else b"".join(parts)


def decode_body(body: bytes) -> Any:
    """``body`` decoded as JSON (big integers kept exact; no NaN/Infinity, no lone surrogates).

    Raises MalformedBodyError (422 ``invalid_json``) for bytes that are not one JSON value.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MalformedBodyError(f"request body is not valid UTF-8 (byte {e.start})") from None
    if not text.strip():
        raise MalformedBodyError("request body is empty: send a JSON object")
    try:
        return from_json(text, allow_inf_nan=False)
    except ValueError as e:
        raise MalformedBodyError(f"request body is not valid JSON: {e}") from None


def parse_search_body(body: bytes, limits: Limits) -> SearchRequest:
    """A ``POST /search`` body checked by the request contract. Raises InvalidInputError."""
    return parse_search(decode_body(body), limits)


def parse_open_body(body: bytes, limits: Limits) -> OpenRequest:
    """A ``POST /open`` body checked by the request contract. Raises InvalidInputError."""
    return parse_open(decode_body(body), limits)


def parse_retrieve_body(body: bytes, limits: Limits, max_queries: int) -> RetrieveRequest:
    """A ``POST /retrieve`` body checked by the request contract. Raises InvalidInputError."""
    return parse_retrieve(decode_body(body), limits, max_queries)


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI ``requestBody`` object of ``model`` (inline JSON schema, no $refs)."""
    return {"required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}}}


__all__ = [
    "NOT_BLANK",
    "OpenRequestSchema",
    "RequestModels",
    "RetrieveRequestSchema",
    "SearchRequestSchema",
    "body_schema",
    "decode_body",
    "parse_open_body",
    "parse_retrieve_body",
    "parse_search_body",
    "read_body",
    "receive_body",
    "request_models",
]
