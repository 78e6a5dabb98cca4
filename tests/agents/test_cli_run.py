"""`drsearch run` usage errors: one line on stderr, exit 2, never a traceback."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from drsearch.tools.cli import main

from .conftest import QUESTIONS


@pytest.mark.parametrize("args,message", [
    ([], "give --search URL or --database CORPUS"),
    (["--database", "x.sqlite3"], "give --model and --base-url"),
    (["--database", "x.sqlite3", "--model", "m", "--base-url", "u", "--preset", "nope"], "unknown preset"),
    (["--database", "x.sqlite3", "--model", "m", "--base-url", "u", "--concurrency", "0"], "greater than"),
    (["--replay", "{tmp}/nothing"], "--replay: cannot read"),
])
def test_usage_errors(args: list[str], message: str, tmp_path: Path) -> None:
    err = io.StringIO()
    argv = ["run", "--questions", str(QUESTIONS), "--out", str(tmp_path / "out"), "--quiet",
            *(a.format(tmp=tmp_path) for a in args)]
    with contextlib.redirect_stderr(err):
        rc = main(argv, out=io.StringIO())
    assert rc == 2, err.getvalue()
    assert message in err.getvalue() and "Traceback" not in err.getvalue()
    assert len(err.getvalue().strip().splitlines()) == 1
