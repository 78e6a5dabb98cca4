"""Run a doc's fenced ``bash`` blocks as a user would: in order, in one shell, in a scratch
directory where ``data/`` is the repository's, with the repository's ``.venv/bin`` first on
PATH. Servers the blocks start with ``&`` are stopped afterwards, whatever happened: the
shell runs in a session of its own and the whole process group is killed."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

from .helpers import REPO

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
SHELLS = {"bash", "sh", "shell", "console", "zsh"}


def fenced(doc: Path) -> list[tuple[str, str]]:
    """Every fenced block of ``doc``: (info string, body)."""
    return [(m.group(1).strip(), m.group(2)) for m in FENCE.finditer(doc.read_text(encoding="utf-8"))]


def bash_blocks(doc: Path, section: str | None = None) -> list[str]:
    """The ``bash`` blocks of ``doc`` (of the ``## section`` heading's part only, when given)."""
    text = doc.read_text(encoding="utf-8")
    if section is not None:
        text = text.split(section + "\n", 1)[1].split("\n## ", 1)[0]
    return [m.group(2) for m in FENCE.finditer(text) if m.group(1).strip() == "bash"]


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def run_blocks(blocks: list[str], cwd: Path, env: dict[str, str], timeout_s: float = 300.0
               ) -> subprocess.CompletedProcess[str]:
    """Run ``blocks`` as one ``bash -e`` script in ``cwd`` (``data`` linked to the repo's)."""
    (cwd / "data").symlink_to(REPO / "data", target_is_directory=True)
    script = cwd / "doc.sh"
    script.write_text("set -euo pipefail\n" + "\n".join(blocks), encoding="utf-8")
    venv_bin = str(Path(sys.executable).parent)
    full_env = {**os.environ, **env, "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.Popen(["bash", str(script)], cwd=cwd, env=full_env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        out, err = "", f"timed out after {timeout_s:g} s"
    finally:
        with contextlib.suppress(ProcessLookupError):  # the servers started with & are in its group
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
