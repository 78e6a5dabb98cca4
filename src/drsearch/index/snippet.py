"""Short, query-aware snippets of a chunk's text.

Speed matters here (one snippet per hit, up to 100 per request), so matching is done with
``str.find`` on the lower-cased chunk rather than by re-tokenising every chunk: each query
term is matched at a word start by the longest common prefix of its indexed form (e.g. a
stem) and its spelling in the query (so ``boundary`` → stem ``boundari`` → ``boundar``).
Terms in most chunks (clamped IDF) are ignored unless the query has nothing else.
The window of about ``width`` characters with the most IDF-weighted matches wins (the
earliest on ties), cut at word boundaries and marked with
``…`` where text was left out. Plain text, no markup: agents read it. Deterministic.

:meth:`SnippetMaker.many` makes a request's snippets with the C kernel when it is built
(``_kernels.snippets``: the same snippets, character for character, computed without the GIL,
so that threads serving complete searches run in parallel; docs/ENGINE.md, "Threads"); a text
it cannot take (a character whose lower case is not one code point) comes back here.
:meth:`SnippetMaker.of_rows` reads a complete search's chunk texts from the file's pages and
makes their snippets in the same GIL-free call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from ..contract.errors import QueryTimeoutError
from . import native as kernel
from .reference import PythonSnippets
from .terms import IDF_FLOOR

if TYPE_CHECKING:
    from .blobs import MappedColumn

SNIPPET_CHARS = 240


class SnippetMaker(PythonSnippets):
    """Snippets for one query: built once per search, applied to each hit's chunk."""

    def __init__(self, terms: Iterable[tuple[str, str, float]], width: int = SNIPPET_CHARS,
                 deadline: float | None = None) -> None:
        """``terms``: (indexed term, query spelling, weight) triples.

        ``deadline`` (``time.monotonic()`` seconds): a snippet still being computed past it
        raises QueryTimeoutError (a query of many short terms makes matching the slowest
        part of a search).
        """
        self._plan([(stem_of(term, surface), weight) for term, surface, weight in terms], width,
                   deadline)

    @classmethod
    def of_stems(cls, stems: list[tuple[str, float]], width: int = SNIPPET_CHARS,
                 deadline: float | None = None) -> SnippetMaker:
        """The maker of ``SnippetMaker(terms)`` from each term's (:func:`stem_of`, weight)
        pair, in the terms' order: for a caller that keeps the pairs of the terms it has seen
        (the engine: a search thread holds the GIL for this set-up)."""
        maker = cls.__new__(cls)
        maker._plan(stems, width, deadline)
        return maker

    def _plan(self, stems: list[tuple[str, float]], width: int, deadline: float | None) -> None:
        self.width = width
        self.deadline = deadline
        weights: dict[str, float] = {}
        # Terms in most chunks (clamped IDF) only where the query has nothing else.
        for stem, weight in [p for p in stems if p[1] > IDF_FLOOR] or stems:
            if stem and weights.get(stem, -1.0) < weight:
                weights[stem] = weight
        # Longest first, so the regex prefers the most specific alternative.
        ordered = sorted(weights, key=_longest_first) if len(weights) > 1 else list(weights)
        self._weights = weights
        self._stems = ordered
        self._stem_weights = [weights[s] for s in ordered]  # the kernel's order, made once

    def many(self, texts: list[str], *, native: bool = True) -> list[str]:
        """The snippet of each text (``native=False``: the Python code only). Raises
        QueryTimeoutError past the deadline."""
        if not (native and kernel.available()):
            return self._many_python(texts)
        got = kernel.snippets(texts, self._stems, self._stem_weights, self.width,
                               0.0 if self.deadline is None else self.deadline)
        return self._finish(texts, got)

    def of_rows(self, column: MappedColumn, rowids: Sequence[int]) -> tuple[list[str], list[str]]:
        """The texts of rows ``rowids`` of a mapped TEXT column and their snippets, read and
        made in one C call without the GIL (``_kernels.texts_snippets``; the kernel must be
        built): what ``column.read_texts(rowids)`` and :meth:`many` of those texts return, with
        their errors. A complete search's last stage, so that threads serving complete searches
        hold the GIL only to make the result's objects. Where the kernel is not available
        (not built, or built from an older source), the texts are read
        by ``read_texts`` and their snippets made by :meth:`many`: the same results."""
        if not kernel.available():
            texts = column.read_texts(rowids)
            return texts, self.many(texts)
        got = column.read_texts_snippets(rowids, self._stems, self._stem_weights, self.width,
                                         0.0 if self.deadline is None else self.deadline)
        if got is None:
            raise QueryTimeoutError("query ran past its time limit")
        texts, snippets = got
        return texts, self._finish(texts, snippets)

    def texts_args(self, column: MappedColumn, hits: tuple[Any, ...] | None = None) -> tuple[Any, ...] | None:
        """The kernel's ``texts`` argument for texts of ``column`` and their snippets made in
        the call that ranks them (``Scorer.rank_texts``); :meth:`finish` takes what it made.
        ``hits``: make_hits' buffers (chunk_doc, chunk_ordinal, field_offsets, fields,
        pieces), read in that call too (into the cache, for make_hits). None where
        the kernel is not available (as :meth:`of_rows`)."""
        if not kernel.available():
            return None
        return kernel.texts_arg(column.text_geometry(), self._stems, self._stem_weights, self.width,
                                0.0 if self.deadline is None else self.deadline, hits)

    def finish(self, made: tuple[list[str], list[str | None]]) -> tuple[list[str], list[str]]:
        """The texts and the kernel's snippets it made for :meth:`texts_args`, the snippets it
        left (None) made here: what :meth:`of_rows` returns."""
        texts, snippets = made
        return texts, self._finish(texts, snippets)

    def _finish(self, texts: list[str], got: list[str | None] | None) -> list[str]:
        """The kernel's snippets, the texts it left (None) made here. None for ``got``: the
        deadline passed."""
        if got is None:
            raise QueryTimeoutError("query ran past its time limit")
        if len(got) == len(texts) and None not in got:  # the usual case: the kernel made them all
            return cast("list[str]", got)
        return [self(text) if snippet is None else snippet for text, snippet in zip(texts, got, strict=True)]

def _longest_first(stem: str) -> tuple[int, str]:
    return -len(stem), stem


def stem_of(term: str, surface: str) -> str:
    """What a snippet matches of a query term at a word start: the longest common prefix of
    its indexed form and its query spelling lower-cased (``boundari``, ``Boundary`` →
    ``boundar``); the indexed form where that is shorter than 3 characters and than the term
    (e.g. 'İ'.lower() is two characters)."""
    stem = _common_prefix(term, surface.lower())
    return term if len(stem) < min(len(term), 3) else stem


def _common_prefix(a: str, b: str) -> str:
    if b.startswith(a):  # the usual case: the indexed term is a prefix of the spelling
        return a
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]


__all__ = ["SNIPPET_CHARS", "SnippetMaker", "stem_of"]
