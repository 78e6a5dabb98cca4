"""The ``python`` tool: run a snippet of code for computation, in a sandbox, under resource limits.

Each call runs ``python -I main.py`` (isolated mode: no ``PYTHON*`` environment variables, no
user site-packages, no script directory on ``sys.path``) with a minimal environment (``PATH``,
``LANG``, ``HOME`` set to its directory, ``PYTHONIOENCODING``), stdin closed, and these limits
from the preset: CPU time (``RLIMIT_CPU``, ``python_cpu_s``), address space (``RLIMIT_AS``,
``python_memory_mb``), the size of any file written (``RLIMIT_FSIZE``, which also caps the
captured output), a wall-clock limit (``python_wall_s``) and, in the sandbox, a process count
(``RLIMIT_NPROC``, :data:`PROCESSES_MAX`, counted per call in its own user namespace).

Isolation ``"unshare"`` (the default; :mod:`drsearch.agents.sandbox_launch`): new user, mount,
network, pid, IPC and UTS namespaces built with the kernel's own calls. The program sees a
read-only root holding only the interpreter's install and the shared libraries, a
:data:`TMPFS_MB` MiB tmpfs at ``/tmp`` with its directory ``/tmp/work`` (holding ``main.py``),
no ``/proc``, no network interface, no capability, and it runs as ``nobody`` when drsearch runs
as root; when its pid namespace's init ends, every process it started ends with it.
Isolation ``"none"`` (only with ``--allow-unsandboxed-python``): the same limits in a fresh
temporary directory, with the calling user's file-system and network access.
:func:`probe_isolation` tells which one this machine offers.

The response body (the bytes cached by the replay cache) is canonical JSON
``{"exit_code", "output", "output_truncated", "timed_out"}``; ``output`` is stdout and
stderr interleaved as written. The model sees :func:`format_python`'s text of it.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Literal, Protocol

from .canonical import canonical_json
from .errors import SandboxError
from .preset import Preset
from .replay import ReplayCache
from .searcher import ToolResponse

OUTPUT_BYTES_MAX = 1_000_000
"""Bytes of output kept on disk per call (RLIMIT_FSIZE): a print loop cannot fill the disk."""
PROCESSES_MAX = 64
"""Processes and threads the program may have at once (RLIMIT_NPROC, counted per call)."""
TMPFS_MB = 64
"""Size of the sandbox's only writable file system, ``/tmp`` (in memory, gone after the call)."""
LAUNCHER = Path(__file__).with_name("sandbox_launch.py")
Isolation = Literal["unshare", "none"]
_GRACE_S = 10.0  # the launcher enforces the wall clock; this is the backstop if it cannot


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
    """The live :class:`PythonRunner`: a child interpreter per call (see the module doc).

    ``isolation`` is ``"unshare"`` (the sandbox) or ``"none"`` (limits only). A sandbox that
    cannot be built for a call raises :class:`SandboxError` (an infrastructure failure: the
    program did not run, nothing is cached)."""

    def __init__(self, executable: str | None = None, isolation: Isolation = "unshare") -> None:
        self.executable = executable or sys.executable
        self.isolation = isolation

    def run(self, code: str, limits: dict[str, Any]) -> ToolResponse:
        with tempfile.TemporaryDirectory(prefix="drsearch-python-") as tmp:
            work = Path(tmp) / "work"  # the code's directory holds main.py only; output lies beside it
            work.mkdir()
            (work / "main.py").write_text(code, encoding="utf-8")
            run = self._sandboxed if self.isolation == "unshare" else self._unsandboxed
            code_, timed_out = run(Path(tmp), limits)
            raw = (Path(tmp) / "output").read_bytes()
        text = raw.decode("utf-8", errors="replace")
        cap = int(limits["output_chars"])
        body = {"exit_code": code_, "output": text[:cap], "output_truncated": len(text) > cap,
                "timed_out": timed_out}
        return ToolResponse(code_ == 0 and not timed_out, canonical_json(body).encode("utf-8"))

    def _unsandboxed(self, tmp: Path, limits: dict[str, Any]) -> tuple[int, bool]:
        cpu_s, memory = int(limits["cpu_s"]), int(limits["memory_mb"]) * 1024 * 1024
        work = tmp / "work"
        env = {"HOME": str(work), "LANG": "C.UTF-8", "PATH": "/usr/bin:/bin", "PYTHONIOENCODING": "utf-8"}
        timed_out = False
        with open(tmp / "output", "wb") as out:
            # no RLIMIT_NPROC here: unsandboxed, it would count every process of the user
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
            finally:  # children it started are ended with it (unless they left its group)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
        return code_, timed_out

    def _sandboxed(self, tmp: Path, limits: dict[str, Any]) -> tuple[int, bool]:
        (tmp / "root").mkdir()  # the launcher mounts the sandbox's root here, in its own namespace
        cfg = {"code": str(tmp / "work" / "main.py"), "cpu_s": int(limits["cpu_s"]),
               "fsize": OUTPUT_BYTES_MAX, "memory": int(limits["memory_mb"]) * 1024 * 1024,
               "nproc": PROCESSES_MAX, "parent": os.getpid(), "root": str(tmp / "root"), "tmpfs_mb": TMPFS_MB,
               "wall_s": float(limits["wall_s"])}
        report_r, report_w = os.pipe()
        try:
            with open(tmp / "output", "wb") as out:
                proc = subprocess.Popen(
                    [self.executable, "-I", "-S", str(LAUNCHER), f"report_fd={report_w}",
                     *(f"{k}={v}" for k, v in cfg.items())],
                    cwd=tmp, env={"LANG": "C.UTF-8", "PATH": "/usr/bin:/bin"}, stdin=subprocess.DEVNULL,
                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(report_w,))
                os.close(report_w)
                report_w = -1
                try:
                    proc.wait(timeout=float(limits["wall_s"]) + _GRACE_S)
                except subprocess.TimeoutExpired:
                    return -signal.SIGKILL, True
                finally:
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.killpg(proc.pid, signal.SIGKILL)
                        proc.wait()
            report = _read_all(report_r)
        finally:
            os.close(report_r)
            if report_w >= 0:
                os.close(report_w)
        return _outcome(report, proc.returncode, tmp / "output")


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _outcome(report: bytes, launcher_code: int, output: Path) -> tuple[int, bool]:
    """The program's exit code (negative: the signal that ended it) and whether it timed out,
    from the launcher's report line; raises SandboxError when the sandbox was not built."""
    kind, _, value = report.decode("utf-8", errors="replace").strip().partition(" ")
    if kind == "error":
        raise SandboxError(f"python sandbox: {value}")
    if kind == "timeout":
        return -signal.SIGKILL, True
    if kind in ("exited", "signalled") and value.lstrip("-").isdigit():
        return (int(value) if kind == "exited" else -int(value)), False
    said = " ".join(output.read_bytes()[-300:].decode("utf-8", errors="replace").split())
    raise SandboxError(f"python sandbox: the launcher ended with code {launcher_code} "
                       f"without a report ({said or 'no output'})")


def probe_isolation(executable: str | None = None) -> tuple[Isolation, str]:
    """Which isolation this machine offers the python tool: ``("unshare", "")`` when a sandboxed
    ``print`` runs and prints, else ``("none", reason)`` (no user namespaces, no mount rights…)."""
    limits = {"cpu_s": 5, "memory_mb": 512, "output_chars": 1000, "wall_s": 20.0}
    try:
        r = LocalPython(executable, "unshare").run("print('sandbox ok')", limits)
    except (SandboxError, OSError) as e:
        return "none", str(e)
    body = json.loads(r.body)
    if body["output"] != "sandbox ok\n" or not r.ok:
        return "none", f"python sandbox: a test program printed {body['output'][:200]!r}"
    return "unshare", ""


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


__all__ = ["OUTPUT_BYTES_MAX", "PROCESSES_MAX", "TMPFS_MB", "CachedPython", "Isolation", "LocalPython",
           "PythonRunner", "format_python", "probe_isolation", "python_limits"]
