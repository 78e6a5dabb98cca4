"""One door to the C kernel: ``drsearch.index.native`` is the only module of the package that
imports or names ``_kernels`` (every other module calls its typed functions), and the raw
module's accessor (``native_kernels``, for the kernel's own tests and probes) is used nowhere
in the package."""

from __future__ import annotations

import ast
from pathlib import Path

import drsearch

PACKAGE = Path(drsearch.__file__).resolve().parent


def _kernel_uses(path: Path) -> list[str]:
    """Where ``path`` imports ``_kernels``, reads an attribute ``_kernels`` or calls
    ``native_kernels`` (line: what)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names]
            if (node.module or "").endswith("_kernels") or "_kernels" in names or "native_kernels" in names:
                found.append(f"{node.lineno}: from {node.module} import {', '.join(names)}")
        elif isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.endswith("_kernels")]
        elif isinstance(node, ast.Attribute) and node.attr in ("_kernels", "native_kernels"):
            found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.Name) and node.id == "_kernels":
            found.append(f"{node.lineno}: _kernels")
    return found


def test_only_native_calls_the_kernel() -> None:
    offenders = {str(p.relative_to(PACKAGE)): uses for p in sorted(PACKAGE.rglob("*.py"))
                 if p.name != "native.py" and (uses := _kernel_uses(p))}
    assert offenders == {}


def test_the_check_sees_a_direct_call(tmp_path: Path) -> None:
    """The check above would catch each way the other modules used to reach the kernel."""
    probe = tmp_path / "probe.py"
    probe.write_text("from . import _kernels\nfrom .scoring import native_kernels\n"
                     "x = self._kernels.make_hits\ny = _kernels.rank_one\n", encoding="utf-8")
    assert len(_kernel_uses(probe)) == 4
