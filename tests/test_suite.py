"""The suite's own settings: how `make test` runs it (README) and what every property test gets."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib

import pytest
from hypothesis import settings

from .helpers import REPO


def test_property_tests_have_no_deadline_and_ci_draws_the_same_examples() -> None:
    """tests/conftest.py's profile: an example's wall time decides nothing (on a loaded machine
    the default 200 ms deadline failed a pure-arithmetic test), and CI derandomises."""
    assert settings().deadline is None
    assert settings().derandomize == bool(os.environ.get("CI"))


def test_make_unit_runs_the_suite_on_two_workers_one_file_at_a_time() -> None:
    """`make test`'s pytest runs on 2 xdist workers, a test file on one worker (its module
    fixtures built once), and pytest-xdist is in the dev extra a fresh clone installs."""
    dev = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["dev"]
    assert any(re.match(r"pytest-xdist\b", req) for req in dev), dev
    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert "-n" not in addopts.split()  # a plain `pytest tests/x.py` stays one process
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    # -o: the venv's stamp counts as up to date (a dry run either way; nothing is installed).
    # Run inside `make test`, the outer make's MAKEFLAGS/MAKELEVEL would make this one print
    # "Entering directory" lines, and a TEST_WORKERS in the environment would override the default.
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "TEST_WORKERS"}}
    dry = ["make", "--no-print-directory", "-n", "-o", ".venv/.installed-dev", "unit"]
    out = subprocess.run(dry, cwd=REPO, capture_output=True, text=True, timeout=60, check=True, env=env).stdout
    assert out.split() == [".venv/bin/pytest", "-n", "2", "--dist", "loadfile"], out
    serial = subprocess.run([*dry, "TEST_WORKERS=0"], cwd=REPO, capture_output=True, text=True, timeout=60,
                            check=True, env=env).stdout
    assert serial.split() == [".venv/bin/pytest"], serial
