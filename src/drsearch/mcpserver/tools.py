"""The MCP tools' contract, without the SDK: schemas, argument checks and answers.

Three tools over one :class:`~drsearch.index.Searcher` (the in-process engine, so blocked
documents are absent exactly as over HTTP):

``search(query, k?)``
    BrowseComp-Plus's shape: a JSON list ``[{"docid", "score", "snippet", "title", "url"}]``,
    best first; ``k`` defaults to the server's ``--k``; ``snippet`` is the best passage,
    cut to ``--snippet-chars`` characters.
``get_document(docid, offset?, length?)``
    ``{"docid", "text", "total_length", "next_offset"}``: one page of the text, paged as
    ``open`` pages it; ``null`` for an unknown *or blocked* docid.
``open(docid | url, offset?, length?)``
    The exact body of ``POST /open``: one page of the text with ``next_offset``.

A page of either tool is at most ``--page-chars`` characters (``McpSettings.page_chars``): the
default ``length`` and its cap, so no call answers a whole long document at once; the caller
reads on from ``next_offset``. Arguments of all three tools are checked by the request contract
(:mod:`drsearch.contract.request`), exactly as ``POST /search`` and ``POST /open`` check them; a
bad call is a tool error whose text is the HTTP API's JSON error body ``{"error": {"type",
"message"}}`` with the same type and message, never a protocol error or a crash. Schemas are
strict-mode compatible: closed objects, every property in ``required``, the optional ones
nullable; null and absent arguments mean the same, so clients that omit them work too.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..contract import (
    MAX_K,
    OPEN_TOOL,
    SEARCH_TOOL,
    InvalidInputError,
    InvalidRequestError,
    Limits,
    Searcher,
    canonical_json,
    error_body,
    open_parameters,
    parse_open,
    parse_search,
    search_parameters,
    strict_parameters,
    tool_arguments,
)

SEARCH_K_DEFAULT = 5  # BrowseComp-Plus's default --k
SNIPPET_CHARS_DEFAULT = 2000  # about BrowseComp-Plus's 512-token snippets
PAGE_CHARS_DEFAULT = 10_000  # about 2,500 tokens: a page of a document, not a whole book
GET_DOCUMENT_FIELDS = ("docid", "offset", "length")
TOOL_NAMES = (SEARCH_TOOL, "get_document", OPEN_TOOL)


@dataclass(frozen=True, slots=True)
class Answer:
    """A tool's answer: the text the client gets and whether it is a tool error."""

    text: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class McpSettings:
    """``k``: results when a call gives none (1..``max_k``); ``snippet_chars``: cap on each
    search result's snippet; ``max_k``: the largest k a call may ask for; ``page_chars``: the
    default and largest ``length`` of a ``get_document`` or ``open`` page."""

    k: int = SEARCH_K_DEFAULT
    snippet_chars: int = SNIPPET_CHARS_DEFAULT
    max_k: int = MAX_K
    page_chars: int = PAGE_CHARS_DEFAULT

    def __post_init__(self) -> None:
        if not 1 <= self.max_k <= MAX_K:
            raise ValueError(f"max_k must be in 1..{MAX_K}")
        if not 1 <= self.k <= self.max_k:
            raise ValueError(f"k must be in 1..{self.max_k}")
        if self.snippet_chars < 1:
            raise ValueError("snippet_chars must be >= 1")
        if self.page_chars < 1:
            raise ValueError("page_chars must be >= 1")

    def page_length(self, length: int | None) -> int:
        """The characters a page of ``length`` (None: not given) holds: at most ``page_chars``."""
        return self.page_chars if length is None else min(length, self.page_chars)

    def limits(self) -> Limits:
        """The request contract's limits of these settings (k default and maximum)."""
        return Limits(max_k=self.max_k, default_k=self.k)


def tool_definitions(settings: McpSettings) -> list[dict[str, Any]]:
    """``[{"name", "description", "inputSchema"}]`` of the three tools (strict-compatible)."""
    search = search_parameters(settings.limits())
    open_ = open_parameters(length=True)
    page = f"characters to return (default and most: {settings.page_chars})"
    open_["properties"]["length"] = {**open_["properties"]["length"], "description": page}
    get_document = {"type": "object", "additionalProperties": False, "required": ["docid"], "properties": {
        name: schema for name, schema in open_["properties"].items() if name in GET_DOCUMENT_FIELDS}}
    return [
        {"name": "search", "inputSchema": strict_parameters(search), "description": (
            f"Search the frozen web corpus (BM25). Returns the top k (default {settings.k}) documents "
            "as a JSON list of {docid, score, snippet, title, url}, best first.")},
        {"name": "get_document", "inputSchema": strict_parameters(get_document), "description": (
            f"Retrieve a document's text by docid, at most {settings.page_chars} characters from offset: "
            "JSON {docid, text, total_length, next_offset} (next_offset: where the next page starts, "
            "null on the last), or null if there is none.")},
        {"name": "open", "inputSchema": strict_parameters(open_), "description": (
            "Open a document by docid or URL and read its text from offset, length characters at a "
            f"time (at most {settings.page_chars}): JSON {{docid, url, title, text, metadata, total_length, "
            "next_offset}.")},
    ]


def _error(error_type: str, message: str) -> Answer:
    return Answer(error_body(error_type, message).decode("utf-8"), is_error=True)


def _backend_error(body: bytes) -> Answer:
    return Answer(body.decode("utf-8"), is_error=True)


def call_tool(name: str, arguments: object, searcher: Searcher, settings: McpSettings) -> Answer:
    """Run one tool call (see the module docstring); never raises for bad input."""
    try:
        return _call(name, tool_arguments(arguments), searcher, settings)
    except InvalidInputError as e:  # the request contract's refusal: the HTTP API's body
        return _error(e.error_type, e.message)


def _call(name: str, given: object, searcher: Searcher, settings: McpSettings) -> Answer:
    if name == SEARCH_TOOL:
        search = parse_search(given, settings.limits())
        r = searcher.search(search.query, search.k)
        if not r.ok:
            return _backend_error(r.body)
        hits = json.loads(r.body)["results"]
        return Answer(canonical_json([{"docid": h["docid"], "score": h["score"],
                                       "snippet": str(h["chunk"]["text"])[: settings.snippet_chars],
                                       "title": h["title"], "url": h["url"]} for h in hits]))
    if name == OPEN_TOOL:
        request = parse_open(given, settings.limits())
        r = searcher.open(docid=request.docid, url=request.url, offset=request.offset,
                          length=settings.page_length(request.length))
        return Answer(r.body.decode("utf-8"), is_error=not r.ok)
    if name == "get_document":
        # (an unknown field is named first, as the contract names it; then the missing docid,
        # which the contract, asking for a docid or a url, would call "give exactly one")
        if isinstance(given, dict) and "docid" not in given and set(given) <= set(GET_DOCUMENT_FIELDS):
            raise InvalidRequestError("missing field 'docid'")
        request = parse_open(given, settings.limits(), GET_DOCUMENT_FIELDS)
        r = searcher.open(docid=request.docid, url=None, offset=request.offset,
                          length=settings.page_length(request.length))
        if not r.ok:
            if json.loads(r.body)["error"]["type"] == "not_found":
                return Answer("null")  # unknown and blocked alike, as BrowseComp-Plus answers
            return _backend_error(r.body)
        doc = json.loads(r.body)
        page = {key: doc[key] for key in ("docid", "text", "total_length", "next_offset")}
        return Answer(canonical_json(page))
    return _error("unknown_tool", f"unknown tool {name!r} (tools: {', '.join(TOOL_NAMES)})")


__all__ = ["PAGE_CHARS_DEFAULT", "SEARCH_K_DEFAULT", "SNIPPET_CHARS_DEFAULT", "TOOL_NAMES", "Answer",
           "McpSettings", "call_tool", "tool_definitions"]
