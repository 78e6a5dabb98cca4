"""Run the ``drsearch`` console script with stderr on a pseudo-terminal, or piped: progress
bars are drawn only on a terminal, and a log or a pipe must get no ``\\r`` or escape codes."""

from __future__ import annotations

import fcntl
import os
import pty
import shutil
import struct
import subprocess
import sys
import termios
import threading
from pathlib import Path


def drsearch_exe() -> str:
    return shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))


def in_terminal(*args: str) -> tuple[int, str, str]:
    """Run the console script with stderr on a pseudo-terminal (120 columns), stdout piped;
    returns the exit code, stdout and everything written to the terminal."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    chunks: list[bytes] = []

    def drain() -> None:  # read as it comes, so a full terminal buffer never blocks the child
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        p = subprocess.run([drsearch_exe(), *args], stdout=subprocess.PIPE, stderr=slave,
                           stdin=subprocess.DEVNULL, timeout=300)
    finally:
        os.close(slave)
    reader.join(timeout=10)
    os.close(master)
    return p.returncode, p.stdout.decode(), b"".join(chunks).decode("utf-8", "replace")


def piped(*args: str) -> tuple[int, str, str]:
    """Run the console script with stdout and stderr piped."""
    p = subprocess.run([drsearch_exe(), *args], capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr
