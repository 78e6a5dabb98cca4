"""What ``drsearch kg serve`` decides about a query before running it (no pyoxigraph here).

- :func:`uses_federation`: whether a SPARQL query contains the ``SERVICE`` keyword. A
  federated query makes the endpoint fetch any URL the client names (a blind server-side
  request forgery), so the endpoint refuses it before any work. The check reads the query's
  tokens as the SPARQL grammar does (after its ``\\uXXXX`` code-point escapes, skipping
  comments, string literals, IRIs, variables, prefixed names and language tags), so a
  ``SERVICE`` in a comment or a string does not trigger it and an escaped one does not
  slip through. It is conservative: a bare word or a prefix (the part of a prefixed name
  before its ``:``) that contains ``SERVICE`` in any case refuses the query, wherever the
  grammar would put it, because a parser may read a keyword at the start of a longer word
  (``1SERVICE``, ``SERVICEx:y``). The local part of a prefixed name (``bd:serviceParam``)
  is a name, never the keyword.
- :func:`negotiate`: the media type of the answer from the request's ``Accept`` header.
"""

from __future__ import annotations

import re

# SPARQL 1.1 §19.2: \uXXXX and \UXXXXXXXX are replaced before the query is parsed, anywhere.
_CODEPOINT = re.compile(r"\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})")
# IRIREF: '<' ([^<>"{}|^`\]-[#x00-#x20])* '>'; a '<' that does not start one is "less than".
_IRIREF = re.compile(r"<[^<>\"{}|^`\\\x00-\x20]*>")
_STRING = re.compile(r"'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^\"\\]|\\.|\"(?!\"\"))*\"\"\""
                     r"|'(?:[^'\\\n\r]|\\.)*'|\"(?:[^\"\\\n\r]|\\.)*\"", re.S)
_VARIABLE = re.compile(r"[?$][\w\u00b7\u0300-\u036f\u203f-\u2040]*")
_LANGTAG = re.compile(r"@[A-Za-z]+(?:-[A-Za-z0-9]+)*")
# A keyword, a prefixed name (with its ':'), a blank node label or a number: one run.
_WORD = re.compile(r"[\w:.\-\u00b7%\\]+")


def _unescape(query: str) -> str:
    def char(m: re.Match[str]) -> str:
        code = int(m.group(1) or m.group(2), 16)
        return chr(code) if code <= 0x10FFFF else m.group(0)
    return _CODEPOINT.sub(char, query)


def keywords(query: str) -> list[str]:
    """The words of ``query`` where the grammar may read a keyword, upper-cased, in order: bare
    words, and the prefix of a prefixed name (``SERVICEX`` of ``ServiceX:y``); comments,
    strings, IRIs, variables, language tags and local names are skipped."""
    text = _unescape(query)
    words: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            end = text.find("\n", i)
            i = n if end < 0 else end + 1
            continue
        m = None
        if c == "<":
            m = _IRIREF.match(text, i)
        elif c in "'\"":
            m = _STRING.match(text, i)
        elif c in "?$":
            m = _VARIABLE.match(text, i)
        elif c == "@":
            m = _LANGTAG.match(text, i)
        elif c == "_" or c.isalnum() or c == ":":
            m = _WORD.match(text, i)
            if m is not None:
                words.append(m.group(0).partition(":")[0].upper())
        if m is None or m.end() == i:  # punctuation, an operator, or a lone quote (a parse error)
            i += 1
        else:
            i = m.end()
    return words


def uses_federation(query: str) -> bool:
    """True when ``query`` contains the ``SERVICE`` keyword (SPARQL 1.1 federation)."""
    return any("SERVICE" in word for word in keywords(query))


def negotiate(accept: str | None, offered: tuple[str, ...]) -> str | None:
    """The first of ``offered`` (the default first) that ``accept`` allows, by its q-values
    (ties: the header's order, then ``offered``'s); None when it allows none of them. No
    header, or an empty one, takes the default."""
    if accept is None or not accept.strip():
        return offered[0]
    ranges: list[tuple[float, int, str]] = []
    for pos, item in enumerate(accept.split(",")):
        kind, *params = (part.strip() for part in item.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if kind and q > 0:
            ranges.append((-q, pos, kind.lower()))
    for _, _, kind in sorted(ranges):
        for media in offered:
            major = media.split("/")[0]
            if kind in (media, "*/*", f"{major}/*"):
                return media
    return None


__all__ = ["keywords", "negotiate", "uses_federation"]
