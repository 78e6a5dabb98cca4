"""Strict parsing of tool calls from an assistant message.

Two dialects: native ``tool_calls`` (arguments a JSON-object string), and, only when a
message has no native calls, text tags ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``
for models served without a tool parser (``<think>…</think>`` blocks are ignored). A call
whose JSON does not parse, whose tool is unknown or whose arguments are invalid is
*malformed*: it carries the reason and is never executed with guessed arguments.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from .preset import Preset
from .tools import validate_arguments

OPEN, CLOSE = "<tool_call>", "</tool_call>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_SPACE = re.compile(r"\s*")
_JSON = json.JSONDecoder()


def _block_end(text: str, start: int) -> tuple[int, str] | None:
    """The tool-call block opened at ``start`` (a ``<tool_call>`` tag): where it ends and its
    body. A body that is one JSON value followed by the closing tag ends there, whatever its
    strings hold (a query may contain "</tool_call>" or "<think>"); any other body ends at the
    first closing tag. None: the tag is never closed."""
    at = start + len(OPEN)
    try:
        _, end = _JSON.raw_decode(text, _SPACE.match(text, at).end())  # type: ignore[union-attr]
    except json.JSONDecodeError:
        pass
    else:
        close = _SPACE.match(text, end).end()  # type: ignore[union-attr]
        if text.startswith(CLOSE, close):
            return close + len(CLOSE), text[at:close]
    close = text.find(CLOSE, at)
    return None if close < 0 else (close + len(CLOSE), text[at:close])


def _blocks(text: str) -> tuple[list[str], str]:
    """The bodies of ``text``'s tool-call blocks, left to right, and the text outside them."""
    bodies: list[str] = []
    outside: list[str] = []
    at = 0
    while (start := text.find(OPEN, at)) >= 0:
        block = _block_end(text, start)
        if block is None:
            break
        outside.append(text[at:start])
        at, body = block
        bodies.append(body)
    outside.append(text[at:])
    return bodies, "".join(outside)


@dataclass(frozen=True, slots=True)
class ParsedCall:
    """One tool call: ``error`` None means valid; ``dialect`` native or text."""

    call_id: str
    name: str
    arguments: dict[str, Any] | None
    raw: str
    dialect: Literal["native", "text"]
    error: str | None = None


def strip_think(text: str) -> str:
    """``text`` without its ``<think>`` blocks (those inside a tool-call block are text). Left
    to right: a complete tool-call block is kept whole, a think block (to ``</think>`` or the
    end) is dropped, tool-call tags inside it included."""
    out: list[str] = []
    at = 0
    while True:
        think, call = text.find(THINK_OPEN, at), text.find(OPEN, at)
        if think < 0 and call < 0:
            break
        if call >= 0 and (think < 0 or call < think):
            block = _block_end(text, call)
            end = call + len(OPEN) if block is None else block[0]  # (a tag never closed is text)
            out.append(text[at:end])
            at = end
            continue
        out.append(text[at:think])
        close = text.find(THINK_CLOSE, think)
        at = len(text) if close < 0 else close + len(THINK_CLOSE)
    out.append(text[at:])
    return "".join(out)


def _check(call_id: str, name: object, args: object, raw: str, dialect: Literal["native", "text"],
           preset: Preset) -> ParsedCall:
    if not isinstance(name, str) or not name:
        return ParsedCall(call_id, str(name), None, raw, dialect, "missing tool name")
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except json.JSONDecodeError as e:
            return ParsedCall(call_id, name, None, raw, dialect, f"arguments are not valid JSON ({e.msg})")
    if not isinstance(args, dict):
        return ParsedCall(call_id, name, None, raw, dialect, "arguments must be a JSON object")
    problem = validate_arguments(name, args, preset)
    return ParsedCall(call_id, name, args if problem is None else None, raw, dialect, problem)


def _native(message: dict[str, Any], turn: int, preset: Preset) -> list[ParsedCall]:
    calls = []
    for i, tc in enumerate(message.get("tool_calls") or []):
        fn = tc.get("function") if isinstance(tc, dict) else None
        call_id = str(tc.get("id") or f"call_{turn}_{i}") if isinstance(tc, dict) else f"call_{turn}_{i}"
        raw = json.dumps(tc, ensure_ascii=False, sort_keys=True)
        if not isinstance(fn, dict):
            calls.append(ParsedCall(call_id, "", None, raw, "native", "tool call without a function"))
            continue
        calls.append(_check(call_id, fn.get("name"), fn.get("arguments", {}), raw, "native", preset))
    return calls


def _text(content: str, turn: int, preset: Preset) -> list[ParsedCall]:
    bodies, leftover = _blocks(strip_think(content))
    calls = []
    for i, raw in enumerate(bodies):
        call_id = f"call_{turn}_{i}"
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as e:
            calls.append(ParsedCall(call_id, "", None, raw, "text", f"tool call is not valid JSON ({e.msg})"))
            continue
        if not isinstance(obj, dict) or set(obj) - {"name", "arguments"}:
            calls.append(ParsedCall(call_id, "", None, raw, "text",
                                    'a tool call must be {"name": ..., "arguments": {...}}'))
            continue
        calls.append(_check(call_id, obj.get("name"), obj.get("arguments", {}), raw, "text", preset))
    if OPEN in leftover or CLOSE in leftover:
        calls.append(ParsedCall(f"call_{turn}_{len(calls)}", "", None, leftover.strip()[:500], "text",
                                "unbalanced <tool_call> tag"))
    return calls


def parse_tool_calls(message: dict[str, Any], turn: int, preset: Preset) -> list[ParsedCall]:
    """Every tool call in ``message`` (empty list: a final answer)."""
    if message.get("tool_calls"):
        return _native(message, turn, preset)
    content = message.get("content")
    return _text(content, turn, preset) if isinstance(content, str) else []


__all__ = ["ParsedCall", "parse_tool_calls", "strip_think"]
