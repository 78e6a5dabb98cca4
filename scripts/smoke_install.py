"""Install the ``smoke`` extra (llama-cpp-python + SmolLM2's weights) for `make smoke`.

Run with the virtualenv's interpreter: ``.venv/bin/python scripts/smoke_install.py [--dry-run]``.

llama-cpp-python is a source build. Its default (``GGML_NATIVE=ON``) compiles for every
instruction the build machine's CPU *advertises*; a virtual CPU may advertise AVX-512/AMX it
cannot execute, and the model then dies with SIGILL at the first decode. So the build is
portable by default (AVX2/FMA/F16C, which every x86-64 CPU of the last decade runs) and native
only with ``SMOKE_NATIVE=1``.

pip considers an installed llama-cpp-python of the pinned version satisfied whatever flags it
was built with, and may reuse a cached wheel. So the flags are recorded in a stamp file under
the virtualenv (with the version and a hash of the installed files), and llama-cpp-python is
rebuilt with ``--force-reinstall --no-cache-dir`` whenever the stamp does not match what is
installed and wanted. The other packages of the extra are installed afterwards (the pinned
llama-cpp-python is then already satisfied, so pip builds nothing).

Exit status: 0 installed (or already up to date), 1 pip failed, 2 bad ``SMOKE_NATIVE`` or a
smoke extra without an ``==`` pin for llama-cpp-python (one line on stderr).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "llama-cpp-python"
# Portable: no -march=native; the SIMD levels every x86-64 CPU since ~2013 executes.
PORTABLE_CMAKE_ARGS = "-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
NATIVE_CMAKE_ARGS = "-DGGML_NATIVE=ON"
STAMP_NAME = ".smoke-llama-cpp.json"


class SmokeInstallError(Exception):
    """A bad setting or project file: reported as one line, exit 2."""


def smoke_requirements(pyproject: Path) -> list[str]:
    """The ``smoke`` extra's requirement strings, as pyproject.toml lists them."""
    extras = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    if "smoke" not in extras:
        raise SmokeInstallError(f"{pyproject}: no 'smoke' optional dependency")
    return [str(r) for r in extras["smoke"]]


def pinned_version(requirements: list[str]) -> str:
    """The exact version the smoke extra pins llama-cpp-python to (``==X.Y.Z``)."""
    for req in requirements:
        m = re.fullmatch(r"\s*llama[-_.]cpp[-_.]python\s*==\s*([0-9][0-9A-Za-z.+-]*)\s*", req, re.I)
        if m:
            return m.group(1)
        if re.match(r"\s*llama[-_.]cpp[-_.]python\b", req, re.I):
            raise SmokeInstallError(f"the smoke extra must pin {PACKAGE} with '==' (the tested build), "
                                    f"not {req!r}")
    raise SmokeInstallError(f"the smoke extra does not list {PACKAGE}")


def cmake_args(smoke_native: str | None) -> str:
    """The llama.cpp CMake flags for ``SMOKE_NATIVE`` (unset, empty or 0: portable; 1: native)."""
    value = (smoke_native or "").strip()
    if value in ("", "0"):
        return PORTABLE_CMAKE_ARGS
    if value == "1":
        return NATIVE_CMAKE_ARGS
    raise SmokeInstallError(f"SMOKE_NATIVE must be 1 (native build) or 0/unset (portable), not {value!r}")


def installed_build() -> dict[str, str] | None:
    """Version and SHA-256 of the RECORD (the installed files and their hashes) of the
    installed llama-cpp-python, or None when it is not installed."""
    try:
        dist = importlib.metadata.distribution(PACKAGE)
    except importlib.metadata.PackageNotFoundError:
        return None
    record = dist.read_text("RECORD") or ""
    return {"record_sha256": hashlib.sha256(record.encode()).hexdigest(), "version": dist.version}


def rebuild_reason(stamp: dict[str, Any] | None, version: str, args: str,
                   installed: dict[str, str] | None) -> str | None:
    """Why llama-cpp-python must be (re)built, or None when the installed build is the wanted one."""
    if installed is None:
        return f"{PACKAGE} is not installed"
    if installed["version"] != version:
        return f"{PACKAGE} {installed['version']} is installed, the smoke extra pins {version}"
    if stamp is None:
        return f"no build stamp: the installed {PACKAGE} was built with unknown flags (maybe native)"
    if stamp.get("cmake_args") != args:
        return f"build flags changed: installed with {stamp.get('cmake_args')!r}, wanted {args!r}"
    if stamp.get("version") != version or stamp.get("record_sha256") != installed["record_sha256"]:
        return f"the installed {PACKAGE} was replaced since the stamped build"
    return None


def read_stamp(path: Path) -> dict[str, Any] | None:
    """The stamp's content, or None when it is missing or unreadable (then the build is redone)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def write_stamp(path: Path, content: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(content, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def pip(*args: str, env: dict[str, str] | None = None) -> None:
    cmd = [sys.executable, "-m", "pip", "install", "-q", *args]
    print("smoke-install: " + " ".join(cmd[2:]), flush=True)
    if subprocess.run(cmd, env=env).returncode != 0:
        raise SystemExit(f"smoke-install: pip failed: {' '.join(cmd[2:])}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true", help="print what would be done, install nothing")
    ap.add_argument("--stamp", type=Path, default=Path(sys.prefix) / STAMP_NAME,
                    help="build stamp (default: under the running virtualenv)")
    ap.add_argument("--pyproject", type=Path, default=ROOT / "pyproject.toml")
    opts = ap.parse_args(argv)
    try:
        requirements = smoke_requirements(opts.pyproject)
        version = pinned_version(requirements)
        args = cmake_args(os.environ.get("SMOKE_NATIVE"))
    except (SmokeInstallError, OSError, KeyError, tomllib.TOMLDecodeError) as e:
        print(f"smoke-install: error: {e}", file=sys.stderr)
        return 2
    reason = rebuild_reason(read_stamp(opts.stamp), version, args, installed_build())
    if opts.dry_run:
        print(f"smoke-install: {'rebuild' if reason else 'up to date'}: {PACKAGE}=={version} "
              f"CMAKE_ARGS={args!r}" + (f" ({reason})" if reason else ""))
        return 0
    if reason:
        print(f"smoke-install: building {PACKAGE}=={version} with CMAKE_ARGS={args!r} ({reason}); "
              "the first build compiles llama.cpp (minutes)", flush=True)
        env = dict(os.environ, CMAKE_ARGS=args)
        env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
        opts.stamp.unlink(missing_ok=True)  # a failed build must not leave a matching stamp
        t0 = time.monotonic()
        pip("--force-reinstall", "--no-deps", "--no-cache-dir", f"{PACKAGE}=={version}", env=env)
        built = installed_build()
        if built is None or built["version"] != version:
            print(f"smoke-install: error: pip reported success but {PACKAGE}=={version} is not installed",
                  file=sys.stderr)
            return 1
        write_stamp(opts.stamp, {"cmake_args": args, **built})
        print(f"smoke-install: built {PACKAGE}=={version} in {time.monotonic() - t0:.0f} s", flush=True)
    else:
        print(f"smoke-install: {PACKAGE}=={version} already built with CMAKE_ARGS={args!r}", flush=True)
    pip(*requirements)  # its dependencies and the weights; the pinned build is already satisfied
    return 0


if __name__ == "__main__":
    sys.exit(main())
