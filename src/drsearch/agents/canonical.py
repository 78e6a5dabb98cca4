"""Canonical JSON and hashes: the one spelling used for cache keys, hashes and run files.

The spelling is the request contract's (``drsearch.contract.canonical_json``: sorted keys,
compact separators, UTF-8 as is, no NaN), so a run file and an HTTP body of equal values
are equal text.
"""

from __future__ import annotations

import hashlib
from typing import Any

from ..contract import canonical_bytes, canonical_json


def sha256_hex(data: bytes | str) -> str:
    """SHA-256 of bytes, or of a string's UTF-8 encoding."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def sha256_json(value: Any) -> str:
    return sha256_hex(canonical_bytes(value))


__all__ = ["canonical_bytes", "canonical_json", "sha256_hex", "sha256_json"]
