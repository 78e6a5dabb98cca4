"""The ``python`` tool: run a snippet of code for computation, under resource limits.

Each call runs ``sys.executable -I main.py`` (isolated mode: no ``PYTHON*`` environment
variables, no user site-packages, no script directory on ``sys.path``) in a fresh temporary
directory that is removed afterwards, with a minimal environment (``PATH``, ``LANG``,
``HOME`` set to that directory), stdin closed, and these limits from the preset:

- CPU time (``RLIMIT_CPU``, ``python_cpu_s``), address space (``RLIMIT_AS``,
  ``python_memory_mb``), the size of any file written (``RLIMIT_FSIZE``, which also caps the
  captured output), and a wall-clock limit (``python_wall_s``) after which the whole
  process group is killed.

This is a **resource limit, not a security sandbox**: the code runs as the calling user
with that user's file-system and network access. Use it with models and questions you
would let run code on the machine.

The response body (the bytes cached by the replay cache) is canonical JSON
``{"exit_code", "output", "output_truncated", "timed_out"}``; ``output`` is stdout and
stderr interleaved as written. The model sees :func:`format_python`'s text of it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Protocol

from .canonical import canonical_json
from .preset import Preset
from .replay import ReplayCache
from .searcher import ToolResponse

OUTPUT_BYTES_MAX = 1_000_000
"""Bytes of output kept on disk per call (RLIMIT_FSIZE): a print loop cannot fill the disk."""


def python_limits(preset: Preset) -> dict[str, Any]:
    """The limits of one call: part of its cache key, since other limits may answer otherwise."""
    return {"cpu_s": preset.python_cpu_s, "memory_mb": preset.python_memory_mb,
            "output_chars": preset.max_tool_response_chars, "wall_s": preset.python_wall_s}


class PythonRunner(Protocol):
    """Runs one ``python`` tool call: ``code`` under ``limits`` (:func:`python_limits`)."""

    def run(self, code: str, limits: dict[str, Any]) -> ToolResponse: ...


# Set in a launcher interpreter that then execs the real one: a preexec_fn is not safe in a
# process running episodes on threads. Soft = hard (the code cannot raise them), except CPU
# time: its hard limit is a second later, so the soft one ends the program with SIGXCPU (at
# equal limits Linux sends SIGKILL, indistinguishable from any other kill).
_LAUNCH = """import os, resource, sys
cpu, mem, fsize = (int(v) for v in sys.argv[1:4])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
for which, value in ((resource.RLIMIT_AS, mem), (resource.RLIMIT_FSIZE, fsize), (resource.RLIMIT_CORE, 0)):
    resource.setrlimit(which, (value, value))
os.execv(sys.executable, [sys.executable, "-I", "main.py"])
"""


class LocalPython:
    """The live :class:`PythonRunner`: a child interpreter per call (see the module doc)."""

    def __init__(self, executable: str | None = None) -> None:
        self.executable = executable or sys.executable

    def run(self, code: str, limits: dict[str, Any]) -> ToolResponse:
        cpu_s, memory = int(limits["cpu_s"]), int(limits["memory_mb"]) * 1024 * 1024
        with tempfile.TemporaryDirectory(prefix="drsearch-python-") as tmp:
            work = Path(tmp) / "work"  # the code's directory holds main.py only; output lies beside it
            work.mkdir()
            (work / "main.py").write_text(code, encoding="utf-8")
            env = {"HOME": str(work), "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8"}
            out_path = Path(tmp) / "output"
            timed_out = False
            with open(out_path, "wb") as out:
                argv = [self.executable, "-I", "-c", _LAUNCH, str(cpu_s), str(memory), str(OUTPUT_BYTES_MAX)]
                proc = subprocess.Popen(argv, cwd=work, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True)
                try:
                    code_ = proc.wait(timeout=float(limits["wall_s"]))
                except subprocess.TimeoutExpired:
                    timed_out = True
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    code_ = proc.wait()
                finally:  # children it started are ended with it
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
            raw = out_path.read_bytes()
        text = raw.decode("utf-8", errors="replace")
        cap = int(limits["output_chars"])
        body = {"exit_code": code_, "output": text[:cap], "output_truncated": len(text) > cap,
                "timed_out": timed_out}
        return ToolResponse(code_ == 0 and not timed_out, canonical_json(body).encode("utf-8"))


class CachedPython:
    """A :class:`PythonRunner` answering from the replay cache, falling back to ``live``
    (None: replay only, a miss raises ReplayMissError). Key: ``["tool", "python",
    {"code": code}, limits]``, so a recorded run replays its computations offline."""

    def __init__(self, cache: ReplayCache, live: PythonRunner | None) -> None:
        self._cache = cache
        self._live = live

    def run(self, code: str, limits: dict[str, Any]) -> ToolResponse:
        live = self._live

        def run_live() -> tuple[bool, bytes]:
            assert live is not None
            r = live.run(code, limits)
            return r.ok, r.body

        ok, body = self._cache.fetch("tool", ["tool", "python", {"code": code}, limits],
                                     f"python({canonical_json(code)[:200]})",
                                     None if live is None else run_live)
        return ToolResponse(ok, body)


def format_python(body: dict[str, Any], limit: int) -> str:
    """What the model reads: how the program ended, then its output (within ``limit``)."""
    if body.get("timed_out"):
        head = "python: killed at the wall-clock limit"
    elif isinstance(body.get("exit_code"), int) and body["exit_code"] < 0:
        head = f"python: killed by signal {-body['exit_code']} (CPU or memory limit?)"
    else:
        head = f"python: exit code {body.get('exit_code')}"
    output = str(body.get("output", ""))
    tail = " …[output truncated]" if body.get("output_truncated") else ""
    text = f"{head}\n{output}{tail}" if output else f"{head}\n(no output)"
    return text if len(text) <= limit else text[: limit - len(" …[truncated]")] + " …[truncated]"


__all__ = ["OUTPUT_BYTES_MAX", "CachedPython", "LocalPython", "PythonRunner", "format_python",
           "python_limits"]
