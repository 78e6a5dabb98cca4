"""Stable document ids and content keys for the corpus builder.

A docid is a function of the document's canonical URL only (``d-`` + 16 hex digits of
xxh3-64), so the same inputs give the same docids in any order, on any machine, in any
batch. A content key is xxh3-128 of the normalised text (NFC, whitespace runs collapsed
to one space): two documents with the same key are exact duplicates.
"""

from __future__ import annotations

import xxhash

from ..index import canonicalize_url
from ..index.text import normalize_text


def stable_docid(url: str) -> str:
    """The docid of the document whose (representative) URL is ``url``; canonicalises first."""
    return "d-" + xxhash.xxh3_64_hexdigest(canonicalize_url(url).encode("utf-8"))


def normalised_text(text: str) -> str:
    """Text as compared for exact duplicates: NFC, whitespace runs collapsed, stripped."""
    return " ".join(normalize_text(text).split())


def content_key(text: str) -> str:
    """xxh3-128 hex digest of the normalised text."""
    return xxhash.xxh3_128_hexdigest(normalised_text(text).encode("utf-8"))


__all__ = ["content_key", "normalised_text", "stable_docid"]
