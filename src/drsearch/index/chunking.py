"""DR-256's chunking rule: 800-word windows starting every 700 words.

Words are maximal runs of non-whitespace (``str.split()``). Chunk ``i`` covers words
``[700*i, 700*i + 800)``; a document of at most 800 words is one chunk; windowing stops
after the first window that reaches the last word, so no window lies inside its
predecessor. Chunk text is its words joined by single spaces.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

CHUNK_WORDS = 800
CHUNK_STRIDE = 700


@dataclass(frozen=True, slots=True)
class ChunkSpan:
    """One chunk of a document: its ordinal and word offsets ``[start, end)``."""

    ordinal: int
    start: int
    end: int


def chunk_spans(n_words: int, size: int = CHUNK_WORDS, stride: int = CHUNK_STRIDE) -> list[ChunkSpan]:
    """Return the chunk windows for a document of ``n_words`` words.

    An empty document has no chunks. Raises ValueError unless ``0 < stride <= size``.
    """
    if not 0 < stride <= size:
        raise ValueError(f"need 0 < stride <= size, got size={size} stride={stride}")
    if n_words <= 0:
        return []
    spans: list[ChunkSpan] = []
    start = 0
    while True:
        end = min(start + size, n_words)
        spans.append(ChunkSpan(len(spans), start, end))
        if end >= n_words:
            return spans
        start += stride


def split_words(text: str) -> list[str]:
    """Split text into words: maximal runs of non-whitespace."""
    return text.split()


def chunk_words(
    words: Sequence[str], size: int = CHUNK_WORDS, stride: int = CHUNK_STRIDE
) -> list[tuple[ChunkSpan, str]]:
    """Chunk a word list; returns each span with its text (words joined by one space)."""
    return [(s, " ".join(words[s.start : s.end])) for s in chunk_spans(len(words), size, stride)]


__all__ = ["CHUNK_STRIDE", "CHUNK_WORDS", "ChunkSpan", "chunk_spans", "chunk_words", "split_words"]
