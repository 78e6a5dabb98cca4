"""The release tests' helpers. The sample release itself (``sample_recipe``,
``pristine_release`` and the per-test copy ``release``) is tests/conftest.py's: the CLI
tests share the one recipe run."""

from __future__ import annotations

import hashlib
from pathlib import Path


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every file's SHA-256, size and mtime (ns): proof that nothing was modified."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[p.relative_to(root).as_posix()] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size,
                                                   st.st_mtime_ns)
    return out
