"""Paths in a release's construction evidence, made independent of the machine that built it.

The construction stages record where their inputs were (``POOL/*/manifest.json``: the pool,
the corpus database, the rollouts, as absolute paths, so a moved input reruns a stage). A
release copies those records (``selection/summary.json``, ``baselines/*/run.json``); with the
paths as recorded, the same recipe run in two directories gave two releases (another
manifest, another identity) and a published release named its builder's directories. In the
release, an absolute path under the construction's work directory (the pool's parent) is
written relative to it, and any other absolute path as its file name alone: the release says
what was used, never where it lay.
"""

from __future__ import annotations

import os
from pathlib import PurePosixPath
from typing import Any


def portable_path(value: str, base: str) -> str:
    """``value`` relative to the directory ``base`` when it lies under it, its last part
    when it is another absolute path, unchanged when it is no absolute path."""
    if not os.path.isabs(value):
        return value
    norm = os.path.normpath(value)
    root = os.path.normpath(base)
    if norm == root:
        return "."
    if norm.startswith(root.rstrip(os.sep) + os.sep):
        return PurePosixPath(*os.path.relpath(norm, root).split(os.sep)).as_posix()
    return os.path.basename(norm)


PATH_KEYS = frozenset({"crawl", "database", "grades", "pool", "questions", "runs", "template"})
"""The keys under which the stages and ``drsearch run`` record a file or directory: only their
strings are rewritten (a prompt or a tool description that happens to start with "/" is text)."""


def portable(record: Any, base: str, *, under_path_key: bool = False) -> Any:
    """``record`` (parsed JSON) with the absolute paths held under ``PATH_KEYS`` (a string, or
    strings in a list) made portable; everything else as it was."""
    if isinstance(record, str):
        return portable_path(record, base) if under_path_key else record
    if isinstance(record, list):
        return [portable(v, base, under_path_key=under_path_key) for v in record]
    if isinstance(record, dict):
        return {k: portable(v, base, under_path_key=k in PATH_KEYS) for k, v in record.items()}
    return record


__all__ = ["PATH_KEYS", "portable", "portable_path"]
