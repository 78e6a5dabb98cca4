"""The SHA-256 of a database file, computed once per file and cached by size and mtime.

run.json and scores.json cite the SQLite file's SHA-256 beside its content identity (the
dataset card asks users to cite it). Hashing a multi-gigabyte corpus on every run would
cost seconds each time, so the digest is kept in a small JSON file,
``$XDG_CACHE_HOME/drsearch/file-sha256.json`` (``~/.cache/...`` by default), keyed by the
file's real path and valid while its size and ``st_mtime_ns`` are unchanged (a frozen
index is never rewritten in place; a rebuild gives a new mtime). A cache that cannot be
read or written is ignored: the digest is then computed, never guessed.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..contract.atomic import write_bytes_atomic
from .integrity import sha256_file

CACHE_NAME = "file-sha256.json"
MAX_ENTRIES = 256  # a handful of corpora per machine; the oldest are dropped beyond this


def cache_path() -> Path:
    """Where the digests are kept (``$XDG_CACHE_HOME/drsearch``, else ``~/.cache/drsearch``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "drsearch" / CACHE_NAME


def _read(path: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}


def cached_sha256(path: str | os.PathLike[str]) -> str:
    """The hex SHA-256 of ``path``; from the cache when its size and mtime match. Raises
    OSError when the file cannot be read."""
    real = Path(path).resolve()
    st = real.stat()
    key = str(real)
    cache = cache_path()
    entries = _read(cache)
    hit = entries.get(key)
    if hit and hit.get("bytes") == st.st_size and hit.get("mtime_ns") == st.st_mtime_ns \
            and isinstance(hit.get("sha256"), str):
        return str(hit["sha256"])
    digest = sha256_file(real)
    entries.pop(key, None)
    entries[key] = {"bytes": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": digest}
    kept = dict(list(entries.items())[-MAX_ENTRIES:])  # insertion order: the newest last
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(cache, (json.dumps(kept, indent=1) + "\n").encode("utf-8"))
    except OSError:  # a read-only home: the digest is still right, only not remembered
        pass
    return digest


__all__ = ["CACHE_NAME", "cache_path", "cached_sha256"]
