"""JSON with line numbers: parse a document and remember the line of every value's path, so
a config error can say ``file:line`` (pydantic reports paths, not positions)."""

from __future__ import annotations

import json
from typing import Any

Path = tuple[str | int, ...]
_DECODER = json.JSONDecoder()
_WS = " \t\r\n"


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: dict[Path, int] = {}

    def line(self, pos: int) -> int:
        return self.text.count("\n", 0, pos) + 1

    def skip(self, pos: int) -> int:
        while pos < len(self.text) and self.text[pos] in _WS:
            pos += 1
        return pos

    def fail(self, msg: str, pos: int) -> json.JSONDecodeError:
        return json.JSONDecodeError(msg, self.text, pos)

    def value(self, pos: int, path: Path) -> tuple[Any, int]:
        pos = self.skip(pos)
        self.lines.setdefault(path, self.line(pos))
        ch = self.text[pos:pos + 1]
        if ch == "{":
            return self.obj(pos + 1, path)
        if ch == "[":
            return self.arr(pos + 1, path)
        try:
            return _DECODER.raw_decode(self.text, pos)
        except json.JSONDecodeError as e:
            raise self.fail(e.msg, e.pos) from None

    def obj(self, pos: int, path: Path) -> tuple[dict[str, Any], int]:
        out: dict[str, Any] = {}
        pos = self.skip(pos)
        if self.text[pos:pos + 1] == "}":
            return out, pos + 1
        while True:
            pos = self.skip(pos)
            if self.text[pos:pos + 1] != '"':
                raise self.fail("Expecting property name enclosed in double quotes", pos)
            key, end = _DECODER.raw_decode(self.text, pos)
            if key in out:
                raise self.fail(f"duplicate key {key!r}", pos)
            self.lines[(*path, key)] = self.line(pos)
            pos = self.skip(end)
            if self.text[pos:pos + 1] != ":":
                raise self.fail("Expecting ':' delimiter", pos)
            out[key], pos = self.value(pos + 1, (*path, key))
            pos = self.skip(pos)
            ch = self.text[pos:pos + 1]
            if ch == "}":
                return out, pos + 1
            if ch != ",":
                raise self.fail("Expecting ',' delimiter", pos)
            pos += 1

    def arr(self, pos: int, path: Path) -> tuple[list[Any], int]:
        out: list[Any] = []
        pos = self.skip(pos)
        if self.text[pos:pos + 1] == "]":
            return out, pos + 1
        while True:
            item, pos = self.value(pos, (*path, len(out)))
            out.append(item)
            pos = self.skip(pos)
            ch = self.text[pos:pos + 1]
            if ch == "]":
                return out, pos + 1
            if ch != ",":
                raise self.fail("Expecting ',' delimiter", pos)
            pos += 1


def loads_with_lines(text: str) -> tuple[Any, dict[Path, int]]:
    """The document and ``{path: line}`` (a key's path maps to the key's line). Raises
    json.JSONDecodeError (with ``lineno``) on bad JSON, duplicate keys included."""
    p = _Parser(text)
    value, pos = p.value(0, ())
    if p.skip(pos) != len(text):
        raise p.fail("Extra data", p.skip(pos))
    return value, p.lines


def line_of(lines: dict[Path, int], loc: Path) -> int:
    """The line of ``loc`` or of its nearest recorded ancestor (1 for the root)."""
    while loc:
        if loc in lines:
            return lines[loc]
        loc = loc[:-1]
    return lines.get((), 1)


__all__ = ["line_of", "loads_with_lines"]
