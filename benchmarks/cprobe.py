"""Build a benchmark's C probe as a shared library with the system's C compiler (format_probe,
vcpu_probe): one place for finding the compiler, Python's CFLAGS and the one-line errors."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
import sysconfig
from pathlib import Path


def compile_shared(name: str, source: Path, flags: list[str], out_dir: Path) -> ctypes.CDLL:
    """``source`` built into ``out_dir/<name>.so`` with Python's CFLAGS, ``flags``, -fPIC and
    -shared, and loaded. SystemExit with one line naming ``name`` without a C compiler (cc, gcc
    or clang) or when it fails."""
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise SystemExit(f"{name}: no C compiler (cc, gcc or clang) on PATH")
    so = out_dir / f"{name}.so"
    cflags = sysconfig.get_config_var("CFLAGS") or ""
    cmd = [cc, *cflags.split(), *flags, "-fPIC", "-shared", str(source), "-o", str(so)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"{name}: {cc} failed: {p.stderr.strip()[-300:]}")
    return ctypes.CDLL(str(so))
