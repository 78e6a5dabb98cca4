"""The sample release, made once per session the way ``make sample-release`` makes it (the
construction recipe run offline on data/construct), and cheap per-test copies of it."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from offline_recipe.driver import Recipe, run_recipe


@pytest.fixture(scope="session")
def sample_recipe(tmp_path_factory: pytest.TempPathFactory) -> Recipe:
    """The recipe run of ``make sample-release`` (fetch times frozen), with its working files.
    Tests that change its pool restore it; none touches its release (``pristine_release``)."""
    root = tmp_path_factory.mktemp("sample")
    return run_recipe(root / "sample-release.work", frozen_fetch_times=True, release=root / "sample-release")


@pytest.fixture(scope="session")
def pristine_release(sample_recipe: Recipe) -> Path:
    """The bundled sample release: the construction recipe's output."""
    return sample_recipe.release


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
