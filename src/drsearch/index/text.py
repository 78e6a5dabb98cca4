"""Text normalisation and tokenisation shared by build and query time.

Both sides use FTS5's own tokenizer (through apsw), so the terms the fast scorer looks up
are exactly the terms FTS5 indexed; text is NFC-normalised first on both sides.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

import apsw

from ..contract.errors import InvalidInputError
from .fts5spec import tokenize_words

# FTS5_MAX_TOKEN_SIZE: FTS5 indexes (and queries) a longer token by its first 32,768 bytes.
MAX_TOKEN_BYTES = 32768


def normalize_text(text: str) -> str:
    """NFC-normalise; lone surrogates (unencodable in UTF-8) become '?' (queries: a build
    refuses such input, see ``validate_document``)."""
    if not text.isascii():
        text = text.encode("utf-8", "replace").decode("utf-8")
        text = unicodedata.normalize("NFC", text)
    return text


def indexed_term(term: str) -> str:
    """A token's term as FTS5's index holds it, and so as the build's ``terms`` table does: a
    token of more than :data:`MAX_TOKEN_BYTES` UTF-8 bytes cut there (inside a character, its
    bytes decode as U+FFFD, as the build decodes the index's keys)."""
    if len(term) <= MAX_TOKEN_BYTES // 4:  # at most 4 bytes a character: short enough, no encoding
        return term
    raw = term.encode("utf-8")
    return term if len(raw) <= MAX_TOKEN_BYTES else raw[:MAX_TOKEN_BYTES].decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class Token:
    """A token: the indexed term and its byte span in the UTF-8 source."""

    term: str
    start: int
    end: int


class Tokenizer:
    """FTS5's tokenizer for an FTS5 ``tokenize`` value (``porter unicode61``,
    ``unicode61 remove_diacritics 2``, ...) callable from Python.

    The value is split into name and arguments by FTS5's own rules, and the tokenizer is
    SQLite's, so build and query time produce exactly FTS5's tokens. Raises
    InvalidInputError for a spec FTS5 would refuse (unknown tokenizer, bad arguments).
    """

    def __init__(self, connection: apsw.Connection, fts5_tokenize: str) -> None:
        name, *args = tokenize_words(fts5_tokenize)
        self.spec = fts5_tokenize
        try:
            self._tok = connection.fts5_tokenizer(name, args)
        except apsw.Error as e:
            why = "" if str(e) == "not an error" else f": {e}"
            raise InvalidInputError(f"tokenizer {fts5_tokenize!r} is not one FTS5 accepts{why}") from None

    def terms(self, text: str) -> list[str]:
        """Terms of already-normalised document text, in order (build time)."""
        return self._tok(  # type: ignore[return-value]
            text.encode("utf-8"),
            apsw.FTS5_TOKENIZE_DOCUMENT,
            None,
            include_offsets=False,
            include_colocated=False,
        )

    def tokens(self, utf8: bytes, *, query: bool = False) -> list[Token]:
        """Tokens with byte offsets (query parsing and snippets)."""
        return [Token(t[2], t[0], t[1]) for t in self.spans(utf8, query=query)]

    def spans(self, utf8: bytes, *, query: bool = False) -> list[tuple[int, int, str]]:
        """What :meth:`tokens` says, as FTS5 hands it over: (start, end, term) tuples, no
        object per token (query parsing runs on every search)."""
        flags = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
        return self._tok(utf8, flags, None, include_offsets=True,  # type: ignore[return-value]
                         include_colocated=False)


__all__ = ["MAX_TOKEN_BYTES", "Token", "Tokenizer", "indexed_term", "normalize_text"]
