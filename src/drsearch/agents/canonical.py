"""Canonical JSON and hashes: the one spelling used for cache keys, hashes and run files."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Sorted keys, compact separators, UTF-8 as is, no NaN: equal values give equal text."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"),
                      allow_nan=False)


def canonical_bytes(value: Any) -> bytes:
    return canonical_json(value).encode("utf-8")


def sha256_hex(data: bytes | str) -> str:
    """SHA-256 of bytes, or of a string's UTF-8 encoding."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def sha256_json(value: Any) -> str:
    return sha256_hex(canonical_bytes(value))


__all__ = ["canonical_bytes", "canonical_json", "sha256_hex", "sha256_json"]
