"""The MCP tools' contract, without the SDK: schemas, argument checks and answers.

Three tools over one :class:`~drsearch.index.Searcher` (the in-process engine, so blocked
documents are absent exactly as over HTTP):

``search(query, k?)``
    BrowseComp-Plus's shape: a JSON list ``[{"docid", "score", "snippet", "title", "url"}]``,
    best first; ``k`` defaults to the server's ``--k``; ``snippet`` is the best passage,
    cut to ``--snippet-chars`` characters.
``get_document(docid)``
    ``{"docid", "text"}`` (the whole text), or ``null`` for an unknown *or blocked* docid.
``open(docid | url, offset?, length?)``
    The exact body of ``POST /open``: one page of the text with ``next_offset``.

Arguments of ``search`` and ``open`` are checked by the request contract
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
TOOL_NAMES = (SEARCH_TOOL, "get_document", OPEN_TOOL)


@dataclass(frozen=True, slots=True)
class Answer:
    """A tool's answer: the text the client gets and whether it is a tool error."""

    text: str
    is_error: bool = False


@dataclass(frozen=True, slots=True)
class McpSettings:
    """``k``: results when a call gives none (1..``max_k``); ``snippet_chars``: cap on each
    search result's snippet; ``max_k``: the largest k a call may ask for."""

    k: int = SEARCH_K_DEFAULT
    snippet_chars: int = SNIPPET_CHARS_DEFAULT
    max_k: int = MAX_K

    def __post_init__(self) -> None:
        if not 1 <= self.max_k <= MAX_K:
            raise ValueError(f"max_k must be in 1..{MAX_K}")
        if not 1 <= self.k <= self.max_k:
            raise ValueError(f"k must be in 1..{self.max_k}")
        if self.snippet_chars < 1:
            raise ValueError("snippet_chars must be >= 1")

    def limits(self) -> Limits:
        """The request contract's limits of these settings (k default and maximum)."""
        return Limits(max_k=self.max_k, default_k=self.k)


def tool_definitions(settings: McpSettings) -> list[dict[str, Any]]:
    """``[{"name", "description", "inputSchema"}]`` of the three tools (strict-compatible)."""
    search = search_parameters(settings.limits())
    get_document = {"type": "object", "additionalProperties": False, "required": ["docid"], "properties": {
        "docid": {"type": "string", "description": "docid from a search result"}}}
    open_ = open_parameters(length=True)
    return [
        {"name": "search", "inputSchema": strict_parameters(search), "description": (
            f"Search the frozen web corpus (BM25). Returns the top k (default {settings.k}) documents "
            "as a JSON list of {docid, score, snippet, title, url}, best first.")},
        {"name": "get_document", "inputSchema": strict_parameters(get_document), "description": (
            "Retrieve a document's full text by docid: JSON {docid, text}, or null if there is none.")},
        {"name": "open", "inputSchema": strict_parameters(open_), "description": (
            "Open a document by docid or URL and read its text from offset, length characters at a "
            "time: JSON {docid, url, title, text, metadata, total_length, next_offset}.")},
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
                          length=request.length)
        return Answer(r.body.decode("utf-8"), is_error=not r.ok)
    if not isinstance(given, dict):
        return _error("invalid_arguments", f"{name}: arguments must be a JSON object")
    args = given
    if name == "get_document":
        extra = sorted(set(args) - {"docid"})
        if extra:
            return _error("invalid_arguments", f"get_document: unknown argument(s) {extra}")
        docid = args.get("docid")
        if not isinstance(docid, str) or not docid:
            return _error("invalid_arguments", "get_document: 'docid' must be a non-empty string")
        r = searcher.open(docid=docid, url=None, offset=0, length=None)
        if not r.ok:
            if json.loads(r.body)["error"]["type"] == "not_found":
                return Answer("null")  # unknown and blocked alike, as BrowseComp-Plus answers
            return _backend_error(r.body)
        doc = json.loads(r.body)
        return Answer(canonical_json({"docid": doc["docid"], "text": doc["text"]}))
    return _error("unknown_tool", f"unknown tool {name!r} (tools: {', '.join(TOOL_NAMES)})")


__all__ = ["SEARCH_K_DEFAULT", "SNIPPET_CHARS_DEFAULT", "TOOL_NAMES", "Answer", "McpSettings", "call_tool",
           "tool_definitions"]
