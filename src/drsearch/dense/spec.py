"""The retriever syntax every front-end takes: ``bm25|dense|hybrid[:rrf|:linear=W][+rerank]``.

``hybrid`` alone is ``hybrid:rrf`` (reciprocal-rank fusion, k = 60). ``hybrid:linear=W`` is
the normalised convex combination ``W · dense + (1 − W) · bm25`` of each list's min-max
normalised scores, W in [0, 1] (``drsearch.dense.hybrid``). ``+rerank`` reorders the top of
the result with an LLM (``drsearch.dense.rerank``). A spec that does not parse is
InvalidInputError, one line naming the syntax.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..contract import InvalidInputError

KINDS = ("bm25", "dense", "hybrid")
SYNTAX = "bm25|dense|hybrid[:rrf|:linear=W][+rerank]"
_SPEC = re.compile(r"(?P<kind>[a-z0-9]+)(?::(?P<fusion>rrf|linear=(?P<w>[^:+]*)))?(?P<rerank>\+rerank)?")


@dataclass(frozen=True, slots=True)
class RetrieverSpec:
    """A parsed ``--retriever``: the kind, a hybrid's fusion (``rrf`` or ``linear`` with its
    dense ``weight``), and whether an LLM reranks the result."""

    kind: str
    fusion: str | None = None
    weight: float | None = None
    rerank: bool = False

    @property
    def base(self) -> str:
        """The spec without ``+rerank``, canonical (``hybrid`` → ``hybrid:rrf``)."""
        if self.kind != "hybrid":
            return self.kind
        return "hybrid:rrf" if self.fusion == "rrf" else f"hybrid:linear={self.weight!r}"

    def __str__(self) -> str:
        return self.base + ("+rerank" if self.rerank else "")


def parse_retriever(text: str) -> RetrieverSpec:
    """``text`` as a :class:`RetrieverSpec`; InvalidInputError (one line) if it does not parse,
    names an unknown kind, gives a fusion to a non-hybrid, or a weight outside [0, 1]."""
    m = _SPEC.fullmatch(text)
    if m is None or m["kind"] not in KINDS:
        raise InvalidInputError(f"--retriever {text!r}: not {SYNTAX}")
    kind, fusion = m["kind"], m["fusion"]
    if fusion is not None and kind != "hybrid":
        raise InvalidInputError(f"--retriever {text!r}: a fusion (:{fusion}) is for hybrid only")
    rerank = m["rerank"] is not None
    if kind != "hybrid":
        return RetrieverSpec(kind, rerank=rerank)
    if fusion is None or fusion == "rrf":
        return RetrieverSpec(kind, "rrf", rerank=rerank)
    try:
        weight = float(m["w"])
    except ValueError:
        weight = math.nan
    if not 0.0 <= weight <= 1.0:  # nan fails too
        raise InvalidInputError(f"--retriever {text!r}: the linear weight W must be a number in [0, 1]")
    return RetrieverSpec(kind, "linear", weight + 0.0, rerank)  # + 0.0: -0.0 is 0.0


__all__ = ["KINDS", "SYNTAX", "RetrieverSpec", "parse_retriever"]
