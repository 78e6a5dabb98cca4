"""Short, query-aware snippets of a chunk's text.

The window of ``width`` tokens holding the most query-term occurrences (each weighted by
its IDF, earliest window on ties) is cut from the original text at token boundaries and
marked with ``…`` where text was left out. No markup: agents read plain text.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .text import Tokenizer

SNIPPET_TOKENS = 40
ELLIPSIS = "…"


def make_snippet(text: str, weights: Mapping[str, float], tokenizer: Tokenizer,
                 width: int = SNIPPET_TOKENS) -> str:
    """Return a snippet of ``text`` around the densest run of query terms (``weights``)."""
    utf8 = text.encode("utf-8")
    toks = tokenizer.tokens(utf8)
    if not toks:
        return text[:200]
    if len(toks) <= width:
        return text
    w = np.fromiter((weights.get(t.term, 0.0) for t in toks), dtype=np.float64, count=len(toks))
    csum = np.concatenate(([0.0], np.cumsum(w)))
    window = csum[width:] - csum[:-width]
    best = int(np.argmax(window)) if window.max() > 0 else 0
    start_tok, end_tok = toks[best], toks[min(best + width, len(toks)) - 1]
    # Start at the beginning of the word holding the first token, end after the last one's word.
    start = utf8.rfind(b" ", 0, start_tok.start) + 1
    end_space = utf8.find(b" ", end_tok.end)
    end = len(utf8) if end_space < 0 else end_space
    body = utf8[start:end].decode("utf-8", "replace")
    return (ELLIPSIS if start > 0 else "") + body + (ELLIPSIS if end < len(utf8) else "")


__all__ = ["make_snippet"]
