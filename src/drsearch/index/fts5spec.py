"""FTS5's own syntax: ``tokenize`` specs and ``CREATE VIRTUAL TABLE ... USING fts5(...)``.

An index records its tokenizer as the FTS5 ``tokenize`` value it was built with (e.g.
``porter unicode61`` or ``unicode61 remove_diacritics 2``); build and query time both turn
it into a tokenizer name and arguments with :func:`tokenize_words`, which follows FTS5's
rules (barewords, or single-quoted literals with ``''`` for a quote), so the tokens we
score are the tokens FTS5 indexes. :func:`parse_fts5_table` reads another tool's FTS5
declaration (columns, ``UNINDEXED`` flags, options such as ``tokenize``, ``content`` and
``detail``) so that ``drsearch import`` can take over its chunks and tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..contract.errors import InvalidInputError

_QUOTES = {"'": "'", '"': '"', "`": "`", "[": "]"}


def _bareword_char(c: str) -> bool:
    # sqlite3Fts5IsBareword: ASCII letters, digits, '_' and every non-ASCII character
    return (c.isascii() and (c.isalnum() or c == "_")) or not c.isascii()


def tokenize_words(spec: str) -> list[str]:
    """The tokenizer name and its arguments of an FTS5 ``tokenize`` value.

    ``"unicode61 remove_diacritics 2"`` → ``["unicode61", "remove_diacritics", "2"]``;
    ``"unicode61 tokenchars '-.'"`` → ``["unicode61", "tokenchars", "-."]``. Raises
    InvalidInputError for what FTS5 would refuse to parse (empty, or a word that is neither
    a bareword nor a single-quoted literal).
    """
    words: list[str] = []
    i, n = 0, len(spec)
    while i < n:
        if spec[i].isspace():
            i += 1
            continue
        if spec[i] == "'":
            j, out = i + 1, []
            while True:
                if j >= n:
                    raise InvalidInputError(f"tokenizer {spec!r}: unterminated quote")
                if spec[j] == "'":
                    if j + 1 < n and spec[j + 1] == "'":
                        out.append("'")
                        j += 2
                        continue
                    break
                out.append(spec[j])
                j += 1
            words.append("".join(out))
            i = j + 1
            continue
        j = i
        while j < n and _bareword_char(spec[j]):
            j += 1
        if j == i:
            raise InvalidInputError(f"tokenizer {spec!r}: cannot parse at {spec[i:i + 10]!r} (FTS5 takes "
                                    "barewords and 'quoted' arguments)")
        words.append(spec[i:j])
        i = j
    if not words:
        raise InvalidInputError("tokenizer spec is empty")
    return words


def sql_string(value: str) -> str:
    """``value`` as an SQL string literal (inner quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"


@dataclass(frozen=True)
class Fts5Column:
    name: str
    unindexed: bool = False


@dataclass(frozen=True)
class Fts5Table:
    """An FTS5 table's declaration: its columns and options (keys lower-cased, values dequoted)."""

    name: str
    columns: list[Fts5Column]
    options: dict[str, str] = field(default_factory=dict)

    @property
    def indexed(self) -> list[str]:
        """The columns FTS5 tokenizes and scores (not ``UNINDEXED``)."""
        return [c.name for c in self.columns if not c.unindexed]

    @property
    def tokenize(self) -> str:
        """The ``tokenize`` value, or FTS5's default ``unicode61`` when none is given."""
        return self.options.get("tokenize", "unicode61")


def _lex(sql: str) -> list[tuple[str, str]]:
    """(kind, value) tokens: ("q", dequoted) quoted, ("w", text) bareword, ("p", char) other."""
    out: list[tuple[str, str]] = []
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c.isspace():
            i += 1
        elif c in _QUOTES:
            close, j, buf = _QUOTES[c], i + 1, []
            while True:
                if j >= n:
                    raise InvalidInputError(f"unterminated quote in {sql[:80]!r}")
                if sql[j] == close:
                    if close != "]" and j + 1 < n and sql[j + 1] == close:
                        buf.append(close)
                        j += 2
                        continue
                    break
                buf.append(sql[j])
                j += 1
            out.append(("q", "".join(buf)))
            i = j + 1
        elif _bareword_char(c) or c in "-+.":
            j = i
            while j < n and (_bareword_char(sql[j]) or sql[j] in "-+."):
                j += 1
            out.append(("w", sql[i:j]))
            i = j
        else:
            out.append(("p", c))
            i += 1
    return out


def parse_fts5_table(name: str, sql: str) -> Fts5Table | None:
    """The declaration of ``name`` from its ``sqlite_schema.sql``; None if it is not FTS5.

    Raises InvalidInputError for an FTS5 declaration this parser cannot read.
    """
    toks = _lex(sql)
    start = next((i for i in range(len(toks) - 2)
                  if toks[i][0] == "w" and toks[i][1].upper() == "USING"
                  and toks[i + 1][0] in "wq" and toks[i + 1][1].lower() == "fts5"
                  and toks[i + 2] == ("p", "(")), None)
    if start is None:
        return None
    args: list[list[tuple[str, str]]] = [[]]
    depth = 0
    for tok in toks[start + 3:]:
        if tok == ("p", "("):
            depth += 1
        elif tok == ("p", ")"):
            if depth == 0:
                break
            depth -= 1
        elif tok == ("p", ",") and depth == 0:
            args.append([])
            continue
        args[-1].append(tok)
    columns: list[Fts5Column] = []
    options: dict[str, str] = {}
    for arg in args:
        if not arg:
            continue
        if len(arg) >= 3 and arg[1] == ("p", "="):
            if len(arg) != 3:
                raise InvalidInputError(f"FTS5 table {name!r}: cannot read option {arg[0][1]!r}")
            options[arg[0][1].lower()] = arg[2][1]
            continue
        if arg[0][0] == "p":
            raise InvalidInputError(f"FTS5 table {name!r}: cannot read its declaration {sql[:120]!r}")
        flags = [v.upper() for _, v in arg[1:]]
        columns.append(Fts5Column(arg[0][1], "UNINDEXED" in flags))
    return Fts5Table(name, columns, options)


__all__ = ["Fts5Column", "Fts5Table", "parse_fts5_table", "sql_string", "tokenize_words"]
