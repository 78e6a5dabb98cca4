"""A pristine sample release (assembled once) and cheap per-test copies of it."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest

from drsearch.release.repo_data import assemble_sample_release

from ..helpers import REPO


@pytest.fixture(scope="session")
def pristine_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample release, built from the inputs named in the repo's manifest.json."""
    out = tmp_path_factory.mktemp("pristine") / "release"
    assemble_sample_release(REPO, out)
    return out


@pytest.fixture()
def release(pristine_release: Path, tmp_path: Path) -> Path:
    """A private copy of the sample release that a test may damage."""
    dst = tmp_path / "release"
    shutil.copytree(pristine_release, dst)
    return dst


def snapshot(root: Path) -> dict[str, tuple[str, int, int]]:
    """Every file's SHA-256, size and mtime (ns): proof that nothing was modified."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[p.relative_to(root).as_posix()] = (hashlib.sha256(p.read_bytes()).hexdigest(), st.st_size,
                                                   st.st_mtime_ns)
    return out
