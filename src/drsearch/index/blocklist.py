"""Blocked docids: applied at query time, never baked into the index file.

File format: UTF-8 text, one docid per line; a UTF-8 byte-order mark at the very start
is dropped; blank lines and lines starting with ``#`` are ignored; spaces and tabs around
a docid are stripped. Every other line must be exactly one docid as ``open --docid``
takes it: a line holding an invisible or control character (Unicode categories Cc, Cf,
Zs, Zl, Zp: a zero-width space, a stray BOM, a no-break space, inner whitespace) or a
docid wrapped in quotes or followed by a comma (a pasted JSON or CSV list) is an error
naming the file and line. Such a line would otherwise "block" a docid that no document
has, and the document it meant would be served: a silently skipped or mangled line
could leak an answer-bearing artifact.
"""

from __future__ import annotations

import hashlib
import os
import unicodedata
from dataclasses import dataclass

from ..contract.errors import BlocklistError

BOM = "\ufeff"
INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
# Characters that wrap or separate docids in JSON, CSV and typographic quoting.
WRAPPERS = frozenset("\"'`,;[]\u2018\u2019\u201c\u201d\u00ab\u00bb")


def docid_problem(item: str) -> str | None:
    """Why ``item`` (a stripped, non-comment line) is not one docid, or None if it is."""
    for c in item:
        if unicodedata.category(c) in INVISIBLE_CATEGORIES or c.isspace():
            name = unicodedata.name(c, "")
            return f"invisible or whitespace character U+{ord(c):04X}" + (f" {name}" if name else "")
    if item[0] in WRAPPERS or item[-1] in WRAPPERS:
        return "quotes, commas or brackets around the docid (one bare docid per line)"
    return None


@dataclass(frozen=True, slots=True)
class BlockList:
    """An immutable set of blocked docids with the SHA-256 of its source bytes."""

    docids: frozenset[str]
    sha256: str
    source: str = ""

    @classmethod
    def empty(cls) -> BlockList:
        return cls(frozenset(), hashlib.sha256(b"").hexdigest(), "")

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> BlockList:
        """Parse a blocklist file. Raises BlocklistError with the file and line on bad input."""
        try:
            data = open(path, "rb").read()  # noqa: SIM115
        except OSError as e:
            raise BlocklistError(f"cannot read blocklist {path}: {e.strerror}") from e
        return cls.from_bytes(data, str(path))

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>") -> BlockList:
        """Parse blocklist bytes (format above). Raises BlocklistError naming ``source:line``."""
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BlocklistError(f"{source}: not UTF-8 text (byte {e.start})") from e
        text = text.removeprefix(BOM)
        docids: set[str] = set()
        # Split on \n only: str.splitlines() would also split on \x0b, \x1c, U+2028..., and
        # hide those characters inside what looks like two good lines.
        for n, line in enumerate(text.split("\n"), 1):
            item = line.removesuffix("\r").strip(" \t")
            if not item or item.startswith("#"):
                continue
            problem = docid_problem(item)
            if problem:
                raise BlocklistError(f"{source}:{n}: malformed docid {item[:60]!r}: {problem}")
            docids.add(item)
        return cls(frozenset(docids), hashlib.sha256(data).hexdigest(), source)

    def __len__(self) -> int:
        return len(self.docids)

    def __contains__(self, docid: object) -> bool:
        return docid in self.docids


__all__ = ["BlockList"]
