"""The agent's tools: ``search(query, k)``, ``open(docid | url, offset)`` and ``python(code)``.

A preset offers any subset of them (``Preset.tools``); a call of a tool it does not offer
is malformed, never executed. ``python`` runs through :mod:`drsearch.agents.pytool`.

Documented API (docs/CLIENTS.md): :func:`tool_schemas` in the chat-completions, Responses or
Anthropic dialect, optionally strict-mode (every property in ``required``, optional ones
nullable), and :func:`execute` to run any model's call against any :class:`Searcher`.

Schemas (OpenAI function format, hashed into run.json) and argument checks of ``search``
and ``open`` are the request contract's (:mod:`drsearch.contract.request`: the same checks and
messages as ``POST /search``/``POST /open``, under the preset's k limits), and compact text
formatting of the searcher's JSON answers: search results as rank, docid, url, title and
chunk text; documents in pages of ``open_page_chars`` with the offset of the next page;
every response capped at ``max_tool_response_chars``. Errors (bad arguments, unknown
documents) are the contract's error body ``{"error": {"type", "message"}}``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ..biotools import BIOTOOLS, render
from ..contract import (
    OPEN_TOOL,
    SEARCH_TOOL,
    InvalidInputError,
    Limits,
    OpenRequest,
    SearchRequest,
    canonical_json,
    error_body,
    hit_passage,
    open_parameters,
    parse_open,
    parse_search,
    search_parameters,
    strict_parameters,
    tool_arguments,
)
from .biocalls import BioCalls
from .canonical import sha256_json
from .preset import DR256, Preset
from .pytool import PythonRunner, format_python, python_limits
from .searcher import Searcher, ToolResponse

TRUNCATED = " …[truncated]"


Dialect = Literal["chat", "responses", "anthropic"]
TOOL_DIALECTS: tuple[str, ...] = get_args(Dialect)


def _functions(preset: Preset) -> list[dict[str, Any]]:
    """The preset's tools as ``{"name", "description", "parameters"}``, in :data:`TOOL_NAMES`
    order (depends on the tool list, the k limits and the python limits only)."""
    search = {
        "name": SEARCH_TOOL,
        "description": ("Search the frozen web corpus (BM25 over page chunks). Returns up to k pages, "
                        "each with rank, docid, url, title and its best-matching passage."),
        "parameters": search_parameters(preset_limits(preset)),
    }
    open_ = {
        "name": OPEN_TOOL,
        "description": ("Open a page by docid (from search results) or by URL and read its text, "
                        f"{preset.open_page_chars} characters at a time; pass the offset given at the "
                        "end of a page to read the next one."),
        "parameters": open_parameters(length=False),  # the page size is the preset's
    }
    python = {
        "name": "python",
        "description": ("Run a Python 3 program for computation and read what it prints (stdout and "
                        f"stderr). Fresh empty directory each call, nothing kept between calls, no input; "
                        f"limits: {preset.python_cpu_s} s CPU, {preset.python_memory_mb} MB memory, "
                        f"{preset.python_wall_s:g} s wall clock."),
        "parameters": {"type": "object", "additionalProperties": False, "required": ["code"],
                       "properties": {"code": {"type": "string",
                                               "description": "the program; print the result"}}},
    }
    schemas = {"open": open_, "python": python, "search": search}
    return [schemas[name] if name in schemas else BIOTOOLS[name].schema() for name in preset.tools]


def preset_limits(preset: Preset) -> Limits:
    """The request contract's limits of ``preset``'s tools (its k default and maximum)."""
    return Limits(max_k=preset.search_k_max, default_k=preset.search_k_default)


# The agents' open has no ``length``: a page is ``preset.open_page_chars`` characters.
AGENT_OPEN_FIELDS = ("docid", "url", "offset")


def tool_schemas(preset: Preset | None = None, *, dialect: str = "chat",
                 strict: bool = False) -> list[dict[str, Any]]:
    """The ``tools`` field of a request: the preset's tools (default DR-256), in
    :data:`TOOL_NAMES` order (``[]`` closed-book), in the request format of ``dialect``:

    - ``"chat"``: chat completions' ``[{"type": "function", "function": {name, description,
      parameters}}]`` (the default: what ``drsearch run`` sends and hashes into run.json);
    - ``"responses"``: the Responses API's flat ``[{"type": "function", name, description,
      parameters, strict}]``;
    - ``"anthropic"``: the Messages API's ``[{name, description, input_schema}]``.

    ``strict``: schemas for strict mode (:func:`strict_parameters`) with ``"strict": true``.
    Raises InvalidInputError for another dialect.
    """
    if dialect not in TOOL_DIALECTS:
        raise InvalidInputError(f"unknown tool dialect {dialect!r} (dialects: {', '.join(TOOL_DIALECTS)})")
    out: list[dict[str, Any]] = []
    for fn in _functions(preset or DR256):
        params = strict_parameters(fn["parameters"]) if strict else fn["parameters"]
        if dialect == "chat":
            body = {"description": fn["description"], "name": fn["name"], "parameters": params}
            out.append({"function": {**body, "strict": True} if strict else body, "type": "function"})
        elif dialect == "responses":  # strict is on by default there: always say which
            out.append({"description": fn["description"], "name": fn["name"], "parameters": params,
                        "strict": strict, "type": "function"})
        else:
            tool = {"description": fn["description"], "input_schema": params, "name": fn["name"]}
            out.append({**tool, "strict": True} if strict else tool)
    return out


def tool_schema_sha256(preset: Preset) -> str:
    return sha256_json(tool_schemas(preset))


def tool_error(error_type: str, message: str) -> str:
    """The text of a structured tool error, as the model sees it (the contract's error
    body: the message capped like every other)."""
    return error_body(error_type, message).decode("utf-8")


class _Refused(Exception):
    """A call refused before it runs: its error type and message."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type, self.message = error_type, message


@dataclass(frozen=True, slots=True)
class BioRequest:
    """A checked biomedical tool call: the tool and its canonical arguments."""

    name: str
    arguments: dict[str, Any]


def _check_call(name: str, args: object, preset: Preset) -> SearchRequest | OpenRequest | BioRequest | str:
    """The checked request of ``name(**args)`` (the python tool: its code). Null arguments
    count as not given. Raises _Refused: ``invalid_arguments`` for an unknown tool or a bad
    python call, else the request contract's own error type and message."""
    if name not in preset.tools:
        offered = ", ".join(preset.tools) or "none: answer directly"
        raise _Refused("invalid_arguments", f"unknown tool {name!r} (tools: {offered})")
    given = tool_arguments(args)
    if name in BIOTOOLS:
        try:
            return BioRequest(name, BIOTOOLS[name].check(given))
        except InvalidInputError as e:
            raise _Refused(e.error_type, e.message) from None
    if name == "python":
        if not isinstance(given, dict):
            raise _Refused("invalid_arguments", "python: arguments must be a JSON object")
        extra = set(given) - {"code"}
        if extra:
            raise _Refused("invalid_arguments", f"python: unknown argument(s) {sorted(extra)}")
        if not isinstance(given.get("code"), str) or not given["code"].strip():
            raise _Refused("invalid_arguments", "python: 'code' must be a non-empty string")
        return str(given["code"])
    try:
        if name == SEARCH_TOOL:
            return parse_search(given, preset_limits(preset))
        return parse_open(given, preset_limits(preset), AGENT_OPEN_FIELDS)
    except InvalidInputError as e:
        raise _Refused(e.error_type, e.message) from None


def validate_arguments(name: str, args: dict[str, Any], preset: Preset) -> str | None:
    """None if ``name(**args)`` is a valid call, else why not (never guesses a fix): for
    ``search``/``open`` the message ``POST /search``/``POST /open`` would answer."""
    try:
        _check_call(name, args, preset)
    except _Refused as e:
        return e.message
    return None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A formatted tool response and the backend answer it came from."""

    text: str
    response: ToolResponse


def _cap(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - len(TRUNCATED)] + TRUNCATED


def format_search(body: dict[str, Any], preset: Preset) -> str:
    hits = body.get("results", [])
    head = f"{len(hits)} result(s) for {canonical_json(body.get('query', ''))}"
    if not hits:
        return head + "."
    per_hit = max(200, (preset.max_tool_response_chars - len(head)) // len(hits) - 120)
    parts = [head]
    for h in hits:
        passage = hit_passage(h)
        parts.append(f"[{h['rank']}] docid: {h['docid']}\ntitle: {h['title']}\nurl: {h['url']}\n"
                     f"text: {_cap(passage, per_hit)}")
    return "\n\n".join(parts)


def _render_page(body: dict[str, Any], offset: int, text: str, nxt: int | None) -> str:
    more = f"; next page: open with offset={nxt}" if nxt is not None else "; end of document"
    return (f"docid: {body['docid']}\ntitle: {body['title']}\nurl: {body['url']}\n"
            f"characters {offset}-{offset + len(text)} of {body['total_length']}{more}\n\n{text}")


def format_open(body: dict[str, Any], offset: int, limit: int | None = None) -> str:
    """One page of a document with where it lies and the offset of the next page.

    Within ``limit`` characters without losing text: when the header leaves too little room
    for the whole page, the page is shortened and the next offset moved back to match, so
    reading page after page still covers every character (at least 100 per page).
    """
    text = str(body.get("text", ""))
    nxt = body.get("next_offset")
    page = _render_page(body, offset, text, nxt)
    if limit is None or len(page) <= limit:
        return page
    floor = min(len(text), 100)
    keep = len(text) - (len(page) - limit)
    for _ in range(3):  # the header's numbers change length with keep: settle them
        if keep <= floor:
            keep = floor
            break
        over = len(_render_page(body, offset, text[:keep], offset + keep)) - limit
        if over <= 0:
            break
        keep -= over
    if keep >= len(text):  # the header alone overflows: send the page whole, with its own next offset
        return page
    return _render_page(body, offset, text[:keep], offset + keep)


def execute(name: str, args: object, searcher: Searcher, preset: Preset | None = None,
            python: PythonRunner | None = None, biotools: BioCalls | None = None) -> ToolResult:
    """Run the call ``name(**args)`` against ``searcher`` (``python`` for the python tool; an
    episode offered it must pass one) and format the answer (capped to
    ``preset.max_tool_response_chars``; preset default DR-256).

    Null arguments count as not given (strict-mode schemas send every property). A call that
    is refused is not run: its result is a structured tool error (``response.ok`` false),
    never an exception: ``search``/``open`` arguments get exactly the error type and message
    of ``POST /search``/``POST /open`` (``invalid_query``, ``invalid_k``, ``invalid_request``;
    the request contract); an unknown tool, a bad python call or a biomedical tool's
    arguments outside its schema ``invalid_arguments``. A biomedical tool's answer (through
    ``biotools``, which an episode offered one must pass) reads as its provenance line and the
    service's answer (:func:`drsearch.biotools.render`); a service that cannot answer raises
    ToolServiceError (an infrastructure failure, not an answer).
    """
    preset = preset or DR256
    try:
        request = _check_call(name, args, preset)
    except _Refused as e:
        body = error_body(e.error_type, e.message)
        return ToolResult(body.decode("utf-8"), ToolResponse(False, body))
    if isinstance(request, BioRequest):
        if biotools is None:
            raise ValueError(f"the {name} tool was called but no BioCalls was given")
        answer = biotools.call(request.name, request.arguments)
        return ToolResult(render(answer.body, preset.max_tool_response_chars), answer)
    if isinstance(request, str):
        if python is None:
            raise ValueError("the python tool was called but no PythonRunner was given")
        r = python.run(request, python_limits(preset))
        return ToolResult(format_python(json.loads(r.body), preset.max_tool_response_chars), r)
    offset = 0
    if isinstance(request, SearchRequest):
        r = searcher.search(request.query, request.k)
    else:
        offset = request.offset
        r = searcher.open(docid=request.docid, url=request.url, offset=offset,
                          length=preset.open_page_chars)
    try:
        body = json.loads(r.body)
    except ValueError:
        return ToolResult(tool_error("bad_backend_response", "the search backend sent non-JSON"), r)
    if not r.ok:
        err = body.get("error", {}) if isinstance(body, dict) else {}
        text = tool_error(str(err.get("type", "error")), str(err.get("message", "")))
    elif isinstance(request, SearchRequest):
        text = format_search(body, preset)
    else:  # fitted to the cap by shortening the page, never by cutting text the model cannot page to
        return ToolResult(format_open(body, offset, preset.max_tool_response_chars), r)
    return ToolResult(_cap(text, preset.max_tool_response_chars), r)


__all__ = ["AGENT_OPEN_FIELDS", "TOOL_DIALECTS", "BioRequest", "Dialect", "ToolResult", "execute",
           "format_open",
           "format_search", "preset_limits", "strict_parameters", "tool_error", "tool_schema_sha256",
           "tool_schemas", "validate_arguments"]
