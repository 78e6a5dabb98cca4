"""`drsearch serve` runs the release checks of the release its database belongs to."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from drsearch.contract import CorpusFileError, InvalidInputError
from drsearch.tools.cli import _release_of, _validate_release_before_serving


def _args(database: Path, release_dir: Path | None = None) -> argparse.Namespace:
    return argparse.Namespace(database=str(database), release_dir=None if release_dir is None else str(release_dir))


def serve(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))
    return subprocess.run([exe, "serve", "--port", "0", *args], capture_output=True, text=True, timeout=120)


def test_release_found_from_the_dr256_layout(release: Path, tmp_path: Path) -> None:
    db = release / "search" / "corpus.sqlite3"
    assert _release_of(_args(db)) == (db, release.resolve())
    assert _release_of(_args(db, release)) == (db, release.resolve())
    assert _release_of(_args(release)) == (release / "search" / "corpus.sqlite3", release.resolve())
    loose = tmp_path / "loose.sqlite3"
    shutil.copy(db, loose)
    assert _release_of(_args(loose)) == (loose, None)
    with pytest.raises(InvalidInputError, match="is not the corpus of release"):
        _release_of(_args(loose, release))


def test_a_valid_release_passes(release: Path) -> None:
    _validate_release_before_serving(release.resolve(), deep=False)


def test_serve_refuses_a_tampered_release(release: Path) -> None:
    questions = release / "benchmark" / "questions.jsonl"
    rows = questions.read_text().splitlines()
    row = json.loads(rows[0])
    row["label"] = "a different answer"
    questions.write_text("\n".join([json.dumps(row), *rows[1:]]) + "\n")
    with pytest.raises(CorpusFileError, match="failed validation"):
        _validate_release_before_serving(release.resolve(), deep=False)
    p = serve("--database", str(release / "search" / "corpus.sqlite3"))
    assert p.returncode == 2, p.stderr
    assert "failed validation" in p.stderr and "Traceback" not in p.stderr
