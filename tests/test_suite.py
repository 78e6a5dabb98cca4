"""The suite's own settings: how `make test` runs it (README) and what every property test gets."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import settings

from .conftest import SLOWEST_FILES
from .helpers import REPO


def test_property_tests_have_no_deadline_and_ci_draws_the_same_examples() -> None:
    """tests/conftest.py's profile: an example's wall time decides nothing (on a loaded machine
    the default 200 ms deadline failed a pure-arithmetic test), and CI derandomises."""
    assert settings().deadline is None
    assert settings().derandomize == bool(os.environ.get("CI"))


def test_make_unit_runs_the_suite_on_one_worker_more_than_cores_one_file_at_a_time() -> None:
    """`make test`'s pytest runs on cores + 1 xdist workers, a test file on one worker (its
    module fixtures built once), pytest-xdist is in the dev extra a fresh clone installs, and
    bytecode is written even where the environment says not to (PYTHONDONTWRITEBYTECODE): each
    worker rewrote ~750 modules' asserts and each `drsearch` child compiled src/ again."""
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
    cores = int(subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout)  # as make asks
    assert out.split() == ["PYTHONDONTWRITEBYTECODE=", ".venv/bin/pytest", "-n", str(cores + 1), "--dist", "loadfile"], out
    serial = subprocess.run([*dry, "TEST_WORKERS=0"], cwd=REPO, capture_output=True, text=True, timeout=60,
                            check=True, env=env).stdout
    assert serial.split() == ["PYTHONDONTWRITEBYTECODE=", ".venv/bin/pytest"], serial



def test_every_slowest_file_exists_once() -> None:
    """A renamed or deleted file in tests/conftest.py's SLOWEST_FILES would silently lose its
    place at the front of the schedule."""
    assert len(set(SLOWEST_FILES)) == len(SLOWEST_FILES)
    assert [p for p in SLOWEST_FILES if not (REPO / p).is_file()] == []


def test_the_slowest_files_are_collected_first_and_xdist_keeps_that_order(request: pytest.FixtureRequest) -> None:
    """`make test`'s xdist workers take files in collection order, the slowest first: a long
    file taken last would run alone at the end while the other workers sit idle."""
    pytest.importorskip("xdist", reason="pytest-xdist (the dev extra) is not installed")
    assert request.config.option.loadscopereorder is False  # xdist's default: most tests first
    # a fast file named first, then one of the slowest, then a slower one still
    names = ["tests/test_error_tree_doc.py", SLOWEST_FILES[-1], SLOWEST_FILES[0]]
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-o", "addopts=", "-q",
                          "-p", "no:cacheprovider", *names],
                         cwd=REPO, capture_output=True, text=True, timeout=300).stdout
    files = list(dict.fromkeys(line.split("::")[0] for line in out.splitlines() if "::" in line))
    assert files == [SLOWEST_FILES[0], SLOWEST_FILES[-1], "tests/test_error_tree_doc.py"], out[-2000:]

# A stand-in for pytest that counts its runs in ./counter, prints its arguments as pytest prints
# a summary line, and fails on run FAIL_AT: the script's loop is what is under test, and a real
# pytest start takes tens of seconds on a loaded machine.
_FAKE_PYTEST = """n=$(( $(cat counter 2>/dev/null || echo 0) + 1 )); echo $n > counter
[ "$n" != "$FAIL_AT" ] || { echo "1 failed, args: $*"; exit 1; }; echo "1 passed, args: $*"
"""


def _repeat(tmp_path: Path, *args: str, fail_at: int = 0) -> subprocess.CompletedProcess[str]:
    (tmp_path / "fake_pytest.sh").write_text(_FAKE_PYTEST)
    env = {**os.environ, "REPEAT_PYTEST": f"bash {tmp_path / 'fake_pytest.sh'}",
           "REPEAT_PYTEST_ARGS": "-n 2 --dist loadfile", "FAIL_AT": str(fail_at)}
    return subprocess.run(["bash", str(REPO / "scripts" / "repeat_tests.sh"), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, env=env)


def test_repeat_tests_stops_at_the_first_failing_run_and_says_how_many_passed(tmp_path: Path) -> None:
    """scripts/repeat_tests.sh (the flake hunt): run 3 of 5 fails, so it stops there, keeps
    that run's log, and says 2 passed in a row; the counter shows no fourth run."""
    done = _repeat(tmp_path, "5", "tests/index", fail_at=3)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 of 5 runs passed in a row before run 3 failed" in done.stdout, done.stdout
    assert (tmp_path / "counter").read_text() == "3\n"
    assert sorted(p.name for p in tmp_path.glob("repeat-run-*.log")) == ["repeat-run-3.log"]
    log = (tmp_path / "repeat-run-3.log").read_text()
    assert log == "1 failed, args: -p no:cacheprovider -n 2 --dist loadfile tests/index\n", log


def test_repeat_tests_runs_the_server_and_agents_tests_by_default(tmp_path: Path) -> None:
    done = _repeat(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(" passed in ")[0] for line in lines[:-1]] == [f"run {i}/20" for i in range(1, 21)]
    assert lines[-1].startswith("repeat_tests.sh: 20 of 20 runs passed in a row"), lines[-1]
    tests = REPO / "tests"
    assert lines[0].endswith(f"passed, args: -p no:cacheprovider -n 2 --dist loadfile {tests}/server {tests}/agents")
    assert (tmp_path / "counter").read_text() == "20\n" and not list(tmp_path.glob("repeat-run-*.log"))


@pytest.mark.parametrize("runs", ["0", "x", "-1"])
def test_repeat_tests_refuses_a_bad_count_in_one_line(tmp_path: Path, runs: str) -> None:
    done = _repeat(tmp_path, runs)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "positive integer" in done.stderr
    assert not (tmp_path / "counter").exists()


# Stand-ins for the four tools `make test` runs, in a copy of the Makefile beside a fake .venv:
# mypy marks that it started and takes a moment; pytest waits for that mark, so it passes only
# when the checks run beside it, not before or after it. Each exits with the code it is given.
_FAKE_TOOLS = {
    "ruff": 'echo "ruff: all checks passed"; exit "${RUFF_RC:-0}"',
    "mypy": 'touch mypy.started; sleep 1; echo "mypy: success"; exit "${MYPY_RC:-0}"',
    "lint-imports": 'echo "lint-imports: contracts kept"; exit 0',
    "pytest": 'for _ in $(seq 200); do [ -e mypy.started ] && break; sleep 0.05; done\n'
              '[ -e mypy.started ] || { echo "pytest: the checks did not run beside me"; exit 3; }\n'
              'echo "pytest: 1 passed"; exit "${PYTEST_RC:-0}"',
}


def _make_test(tmp_path: Path, **codes: str) -> subprocess.CompletedProcess[str]:
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    # the dev install's stamp must be newer than what it is made from, or make would install
    kernel = tmp_path / "src/drsearch/index"
    kernel.mkdir(parents=True)
    made_from = ["pyproject.toml", "setup.py", *(f"src/drsearch/index/{name}" for name in
                 ("_kernels.c", "_gil.c", "_gil.h", "_topk.h", "_pages.h", "_fts5.h"))]
    for name in made_from:
        (tmp_path / name).write_text("")
        os.utime(tmp_path / name, (1_000_000_000, 1_000_000_000))
    bin_dir = tmp_path / ".venv/bin"
    bin_dir.mkdir(parents=True)
    for tool, body in _FAKE_TOOLS.items():
        (bin_dir / tool).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / tool).chmod(0o755)
    (tmp_path / ".venv/.installed-dev").write_text("")
    env = {k: v for k, v in os.environ.items() if k not in {"MAKEFLAGS", "MFLAGS", "MAKELEVEL", "TEST_WORKERS"}}
    env.update(DRSEARCH_NO_APT="1", **codes)
    return subprocess.run(["make", "--no-print-directory", "test"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, env=env)


@pytest.mark.parametrize(("codes", "passes"), [({}, True), ({"RUFF_RC": "1"}, False), ({"MYPY_RC": "1"}, False),
                                               ({"PYTEST_RC": "1"}, False)])
def test_make_test_runs_the_checks_beside_pytest_and_fails_when_any_fails(
        tmp_path: Path, codes: dict[str, str], passes: bool) -> None:
    """`make test` starts ruff, mypy and import-linter beside pytest (they kept a core idle for
    ~25 s when they ran first), prints their output after pytest's, runs every check even when one
    fails, and fails when any of the four fails."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = _make_test(tmp_path, **codes)
    out = done.stdout
    assert (done.returncode == 0) is passes, out + done.stderr
    assert "did not run beside me" not in out, out
    assert out.index("pytest: 1 passed") < out.index("ruff: all checks passed") < out.index("mypy: success"), out
    if codes and "PYTEST_RC" not in codes:
        assert "make test: FAILED: lint, typecheck or importlint" in out, out
    assert "lint-imports: contracts kept" in out, out  # every check runs, whichever failed (-k)
