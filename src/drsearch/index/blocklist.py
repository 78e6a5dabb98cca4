"""Blocked docids: applied at query time, never baked into the index file.

File format: one docid per line; blank lines and lines starting with ``#`` are ignored;
surrounding whitespace is stripped. A line with inner whitespace or control characters,
or a file that is not UTF-8, is an error naming the line (a silently skipped line could
leak an answer-bearing document).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from .errors import BlocklistError


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
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise BlocklistError(f"{source}: not UTF-8 text (byte {e.start})") from e
        docids: set[str] = set()
        for n, line in enumerate(text.splitlines(), 1):
            item = line.strip()
            if not item or item.startswith("#"):
                continue
            if any(c.isspace() or ord(c) < 32 or c == "\x7f" for c in item):
                raise BlocklistError(f"{source}:{n}: malformed docid {item[:60]!r}")
            docids.add(item)
        return cls(frozenset(docids), hashlib.sha256(data).hexdigest(), source)

    def __len__(self) -> int:
        return len(self.docids)

    def __contains__(self, docid: object) -> bool:
        return docid in self.docids


__all__ = ["BlockList"]
