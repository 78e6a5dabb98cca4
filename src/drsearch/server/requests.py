"""Request bodies: size-limited reading, strict JSON validation, precise 4xx reasons.

One pair of pydantic models per app (``max_k``, the query cap and the unknown-field
policy are settings), validated straight from the JSON bytes in strict mode: ``k`` must
be a JSON integer (``5`` or ``5.0``, as JSON Schema counts integers; not ``5.5``, ``"5"``
or ``true``), strings must be strings. The same models give the OpenAPI schema, so the
documented contract and the enforced one cannot drift apart. A validation failure becomes
one of the engine's own input errors (``invalid_k``, ``invalid_query``, ``invalid_request``)
or ``invalid_json``, 422.
"""

from __future__ import annotations

import asyncio
import sys
import time
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import ErrorDetails
from starlette.requests import Request

from ..index import InvalidInputError, InvalidKError, InvalidQueryError, InvalidRequestError
from .errors import MalformedBodyError, PayloadTooLargeError, RequestTimeoutError
from .settings import ServerSettings

ModelT = TypeVar("ModelT", bound=BaseModel)
_MAX_REASONS = 3


def _integral(value: Any) -> Any:
    """JSON Schema's integer: ``10.0`` is ``10``; ``10.5``, ``"10"`` and ``true`` stay wrong."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


JsonInt = Annotated[int, BeforeValidator(_integral)]

# What str.strip() removes (str.isspace()), spelled as a character class that JSON Schema's
# (ECMA 262) and Python's regular expressions read alike: the schema's "a query has a
# character that is not whitespace" is then exactly the engine's "query.strip() is not
# empty" (\s differs between the two: U+001C..U+001F, U+0085, U+FEFF).
_SPACE_CODES = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
NOT_BLANK = "[^" + "".join(f"\\u{c:04x}" for c in _SPACE_CODES) + "]"


def _not_null(data: Any) -> Any:
    """``docid``/``url`` may be left out but not sent as null (the schema says string)."""
    if isinstance(data, dict):
        for key in ("docid", "url"):
            if key in data and data[key] is None:
                raise ValueError(f"{key} must be a string (leave it out instead of null)")
    return data


def _search_schema(schema: dict[str, Any]) -> None:
    schema["properties"]["query"]["pattern"] = NOT_BLANK


def _open_schema(schema: dict[str, Any]) -> None:
    """The schema of exactly what the validator accepts (pydantic's own is looser)."""
    props = schema["properties"]
    for key in ("docid", "url"):
        props[key] = {"type": "string", "description": props[key]["description"],
                      "title": props[key]["title"]}
    props["length"] = {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}],
                       "default": None, "description": props["length"]["description"],
                       "title": props["length"]["title"]}
    schema["oneOf"] = [{"required": ["docid"]}, {"required": ["url"]}]


class SearchRequest(BaseModel):
    """``POST /search``: free-text ``query`` (never query syntax) and ``k`` results."""

    query: str
    k: int


class OpenRequest(BaseModel):
    """``POST /open``: exactly one of ``docid``/``url``, optional text paging."""

    docid: str | None = None
    url: str | None = None
    offset: int = 0
    length: int | None = None

    @model_validator(mode="before")
    @classmethod
    def _keys_not_null(cls, data: Any) -> Any:
        return _not_null(data)

    @model_validator(mode="after")
    def _exactly_one_key(self) -> OpenRequest:
        if (self.docid is None) == (self.url is None):
            raise ValueError("give exactly one of docid or url")
        return self


class RetrieveRequest(BaseModel):
    """``POST /retrieve`` (Search-R1's retrieval server): a batch of free-text ``queries``,
    ``topk`` documents each, scores only when ``return_scores``."""

    queries: list[str]
    topk: int
    return_scores: bool = False


def _retrieve_schema(schema: dict[str, Any]) -> None:
    schema["properties"]["queries"]["items"]["pattern"] = NOT_BLANK


@dataclass(frozen=True)
class RequestModels:
    """The request models of one app, built from its settings by :func:`request_models`."""

    search: type[SearchRequest]
    open: type[OpenRequest]
    retrieve: type[RetrieveRequest]


def request_models(settings: ServerSettings) -> RequestModels:
    """Strict request models whose limits and unknown-field policy follow ``settings``."""
    reject = settings.unknown_fields == "reject"
    config = ConfigDict(strict=True, frozen=True, extra="forbid" if reject else "ignore")

    def schema_of(edit: Any) -> Any:
        def extra(schema: dict[str, Any]) -> None:
            edit(schema)
            # pydantic drops additionalProperties from models with an after-validator
            if reject:
                schema["additionalProperties"] = False
        return extra

    class StrictSearchRequest(SearchRequest):
        model_config = config | ConfigDict(title="SearchRequest",
                                           json_schema_extra=schema_of(_search_schema))
        query: str = Field(min_length=1, max_length=settings.max_query_chars,
                           description="free text; operators, quotes and colons are plain words; "
                                       f"at most {settings.max_query_terms} distinct terms")
        k: JsonInt = Field(default=settings.default_k, ge=1, le=settings.max_k,
                       description="how many documents to return")

        @field_validator("query")
        @classmethod
        def _not_blank(cls, query: str) -> str:
            if not query.strip():
                raise ValueError("query is empty (only whitespace)")
            return query

    class StrictOpenRequest(OpenRequest):
        model_config = config | ConfigDict(title="OpenRequest", json_schema_extra=schema_of(_open_schema))
        docid: str | None = Field(default=None, description="the document's docid")
        url: str | None = Field(default=None, description="any spelling of any of its URLs")
        offset: JsonInt = Field(default=0, ge=0, description="first character of the text to return")
        length: Annotated[JsonInt, Field(ge=1)] | None = Field(
            default=None, description="characters of text to return")

    # Each query is held to exactly /search's query rules, topk to its k rules.
    Query = Annotated[str, Field(min_length=1, max_length=settings.max_query_chars),
                      AfterValidator(_query_not_blank)]

    class StrictRetrieveRequest(RetrieveRequest):
        model_config = config | ConfigDict(title="RetrieveRequest",
                                           json_schema_extra=schema_of(_retrieve_schema))
        queries: list[Query] = Field(
            min_length=1, max_length=settings.max_batch_queries,
            description=f"free-text queries (each as /search's query), at most "
                        f"{settings.max_batch_queries} per request")
        topk: JsonInt = Field(default=settings.default_k, ge=1, le=settings.max_k,
                          description="how many documents to return per query")
        return_scores: bool = Field(default=False, description="wrap each document with its score")

    return RequestModels(StrictSearchRequest, StrictOpenRequest, StrictRetrieveRequest)


def _query_not_blank(query: str) -> str:
    if not query.strip():
        raise ValueError("query is empty (only whitespace)")
    return query


async def read_body(request: Request, limit: int, deadline: float | None = None) -> bytes:
    """The request body, at most ``limit`` bytes. Raises PayloadTooLargeError beyond it.

    A declared Content-Length over the limit is refused before reading anything; a body
    without one (chunked) is counted as it arrives. A body still arriving at ``deadline``
    (``time.monotonic()`` seconds) raises RequestTimeoutError. A client that goes away
    mid-body raises Starlette's ``ClientDisconnect`` (the middleware counts it).
    """
    if deadline is None:
        return await _read_body(request, limit)
    try:
        async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
            return await _read_body(request, limit)
    except TimeoutError:
        raise RequestTimeoutError("request body not received within the request's time limit") from None


async def _read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isascii() and declared.isdigit():
        if int(declared) > limit:
            raise PayloadTooLargeError(f"request body is {declared} bytes; the limit is {limit}")
        return await request.body()
    parts: list[bytes] = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise PayloadTooLargeError(f"request body exceeds the limit of {limit} bytes")
        parts.append(part)
    return b"".join(parts)


def parse_body(model: type[ModelT], body: bytes) -> ModelT:
    """Validate ``body`` (JSON bytes) as ``model``. Raises an InvalidInputError subclass."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise MalformedBodyError(f"request body is not valid UTF-8 (byte {e.start})") from None
    if not text.strip():
        raise MalformedBodyError("request body is empty: send a JSON object")
    try:
        return model.model_validate_json(text)
    except ValidationError as e:
        raise _input_error(e.errors(include_url=False, include_input=False)) from None


def _input_error(errors: list[ErrorDetails]) -> InvalidInputError:
    first = errors[0]
    if first["type"] == "json_invalid":
        return MalformedBodyError("request body is not valid JSON: "
                                  + first["msg"].removeprefix("Invalid JSON: "))
    reasons = "; ".join(_reason(e) for e in errors[:_MAX_REASONS])
    field = first["loc"][0] if first["loc"] and first["type"] != "extra_forbidden" else None
    if field in ("k", "topk"):
        return InvalidKError(reasons)
    if field == "query" or (field == "queries" and len(first["loc"]) > 1):  # one of the queries
        return InvalidQueryError(reasons)
    return InvalidRequestError(reasons)


def _reason(error: ErrorDetails) -> str:
    loc = ".".join(str(p) for p in error["loc"])
    if error["type"] == "extra_forbidden":
        return f"unknown field {loc!r}"
    if error["type"] == "missing":
        return f"missing field {loc!r}"
    if error["type"] == "model_type":
        return "request body must be a JSON object"
    msg = error["msg"].removeprefix("Value error, ")
    return f"{loc}: {msg}" if loc else msg


def body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The OpenAPI ``requestBody`` object of ``model`` (inline JSON schema, no $refs)."""
    return {"required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}}}


__all__ = [
    "NOT_BLANK",
    "OpenRequest",
    "RequestModels",
    "RetrieveRequest",
    "SearchRequest",
    "body_schema",
    "parse_body",
    "read_body",
    "request_models",
]
