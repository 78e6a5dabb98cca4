"""The python tool is a sandbox: a scripted model tries each escape through the
real tool in a real `drsearch run` subprocess, and each one fails; a plain computation answers
byte for byte as without the sandbox; where the machine cannot sandbox, `run` refuses."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from drsearch.agents import DR256, LocalPython
from drsearch.agents.pytool import PROCESSES_MAX, python_limits
from drsearch.dev.chat import serve_fake

from .conftest import BLOCKED, QUESTIONS

DRSEARCH = str(Path(sys.executable).with_name("drsearch"))


class Listener:
    """A real TCP server on 127.0.0.1 that counts the connections it accepts."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def _marked_processes(marker: str) -> list[int]:
    """Host processes whose command line carries ``marker`` (the escaped daemon's)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def _daemon_code(marker: str) -> str:
    """Start a setsid'd, double-forked daemon that keeps writing, check it runs, and return."""
    return f"""import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv(sys.executable, [sys.executable, '-c',
                 'import time\\nwhile True:\\n    open("/tmp/alive", "a").write("x")\\n    time.sleep(0.05)',
                 '{marker}'])
    os._exit(0)
for _ in range(400):  # a loaded machine may take a while to start it
    if os.path.exists('/tmp/alive') and os.path.getsize('/tmp/alive') > 0:
        break
    time.sleep(0.05)
print('daemon alive:', os.path.exists('/tmp/alive'), flush=True)
"""


def _escapes(questions: Path, blocked: Path, outside: Path, port: int, marker: str) -> list[str]:
    walk = """import os
pid = 'self'
while True:
    status = open(f'/proc/{pid}/status').read()
    ppid = [l.split()[1] for l in status.splitlines() if l.startswith('PPid:')][0]
    args = open(f'/proc/{ppid}/cmdline', 'rb').read().split(b'\\0')
    for a in args:
        if a.endswith(b'.jsonl'):
            print(open(a).read())
    if ppid in ('0', '1'):
        break
    pid = ppid
"""
    return [
        walk,
        f"print(open({str(questions)!r}).read())",
        f"import os\nprint(os.listdir({str(blocked.parent)!r}))\nprint(open({str(blocked)!r}).read())",
        f"open({str(outside)!r}, 'w').write('escaped')",
        "import sys\nopen(sys.prefix + '/escaped.txt', 'w').write('escaped')",
        "open('/escaped.txt', 'w').write('escaped')",
        f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=5)\nprint('connected')",
        """import os, time
n = 0
try:
    for _ in range(500):
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
except OSError as e:
    print('forked', n, e.errno)
else:
    print('forked', n)
""",
        _daemon_code(marker),
        "print(2962 * 1000)",
    ]


def _run(tmp: Path, questions: Path, blocked: Path, base_url: str, *extra: str,
         prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    """`drsearch run` as a subprocess: question 0 only, a preset offering just python."""
    preset = tmp / "calc.json"
    preset.write_text(json.dumps({"base": "dr256", "name": "calc", "tools": ["python"], "max_turns": 20}))
    argv = [*(prefix or []), DRSEARCH, "run", "--questions", str(questions), "--database", str(tmp / "db"),
            "--blocked-docids", str(blocked), "--out", str(tmp / "run"), "--model", "fake-model",
            "--base-url", base_url, "--preset", str(preset), "--limit", "1", "--quiet", "--json", *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=300)


def _tool_messages(out: Path) -> list[str]:
    first = json.loads((out / "trajectories.jsonl").read_text().splitlines()[0])
    return [m["content"] for m in first["messages"] if m["role"] == "tool"]


def _secrets(tmp: Path) -> tuple[Path, Path, str]:
    """Copies of the questions (first label a canary) and the blocklist (a canary comment)."""
    canary = f"CANARY-{uuid.uuid4().hex}"
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]
    rows[0]["label"] = canary
    secret = tmp / "secret"
    secret.mkdir()
    questions = secret / "questions.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    blocked = secret / "blocked_docids.txt"
    blocked.write_text(f"# {canary}\n" + BLOCKED.read_text())
    return questions, blocked, canary


def test_every_escape_fails_through_a_real_run(sample_index: Path, tmp_path: Path, listener: Listener) -> None:
    questions, blocked, canary = _secrets(tmp_path)
    shutil.copy(sample_index, tmp_path / "db")
    outside = tmp_path / "escaped.txt"
    marker = f"DAEMON-{uuid.uuid4().hex}"
    codes = _escapes(questions, blocked, outside, listener.port, marker)
    script = [*({"call": [("python", {"code": c})]} for c in codes), {"content": "answer-INDEX"}]
    with serve_fake({0: script}) as fake:
        done = _run(tmp_path, questions, blocked, fake.url)
    assert done.returncode == 0, done.stderr
    msgs = _tool_messages(tmp_path / "run")
    assert len(msgs) == len(codes)
    assert not any(canary in m for m in msgs)  # neither the questions' labels nor the blocklist
    walk, by_path, blocklist, write_out, write_prefix, write_root, tcp, bomb, daemon, plain = msgs
    assert "FileNotFoundError" in walk and "/proc/self/status" in walk  # there is no /proc
    assert "FileNotFoundError" in by_path and "FileNotFoundError" in blocklist
    assert "FileNotFoundError" in write_out and not outside.exists()
    assert "Read-only file system" in write_prefix and not Path(sys.prefix, "escaped.txt").exists()
    assert "Read-only file system" in write_root and not Path("/escaped.txt").exists()
    assert "Network is unreachable" in tcp and "connected" not in tcp
    time.sleep(0.5)
    assert listener.accepted == 0  # the server saw no connection
    forked = int(bomb.split("forked ")[1].split()[0])
    assert forked < PROCESSES_MAX and bomb.rstrip().endswith(" 11")  # EAGAIN at the process cap
    assert "daemon alive: True" in daemon  # it did run inside, and is gone now
    assert _marked_processes(marker) == []
    assert plain == "python: exit code 0\n2962000\n"
    run_json = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run_json["python_isolation"] == "unshare"


def test_a_daemon_dies_when_its_call_returns_even_at_the_wall_clock() -> None:
    for tail, wall_s, timed_out in (("", 60.0, False), ("time.sleep(60)\n", 8.0, True)):
        limits = python_limits(DR256.model_copy(update={"tools": ("python",), "python_wall_s": wall_s}))
        marker = f"DAEMON-{uuid.uuid4().hex}"
        body = json.loads(LocalPython().run(_daemon_code(marker) + tail, limits).body)
        assert body["timed_out"] is timed_out and "daemon alive: True" in body["output"]
        assert _marked_processes(marker) == []  # at once: the call returns after its namespace is gone


def test_killing_drsearch_mid_call_ends_everything_the_call_started(tmp_path: Path) -> None:
    marker = f"DAEMON-{uuid.uuid4().hex}"
    script = tmp_path / "caller.py"
    script.write_text(
        "import sys\nfrom drsearch.agents import DR256, LocalPython\nfrom drsearch.agents.pytool import python_limits\n"
        "limits = python_limits(DR256.model_copy(update={'tools': ('python',), 'python_wall_s': 120.0}))\n"
        "LocalPython().run(open(sys.argv[1]).read(), limits)\n")
    code = tmp_path / "code.py"
    code.write_text(_daemon_code(marker) + "time.sleep(120)\n")
    env = {**os.environ, "TMPDIR": str(tmp_path)}  # its temporary directory is left behind: keep it here
    caller = subprocess.Popen([sys.executable, str(script), str(code)], env=env)
    try:
        deadline = time.monotonic() + 60
        while not _marked_processes(marker):
            assert time.monotonic() < deadline and caller.poll() is None, "the daemon never started"
            time.sleep(0.1)
    finally:
        caller.kill()  # SIGKILL: drsearch cannot clean up; the kernel must
        caller.wait()
    deadline = time.monotonic() + 5
    while _marked_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _marked_processes(marker) == []


def test_a_plain_computation_answers_byte_for_byte_as_unsandboxed() -> None:
    limits = python_limits(DR256.model_copy(update={"tools": ("python",)}))
    for code in ("print(2962 * 1000)", "import math\nprint(math.factorial(30), sum(range(10**6)))",
                 "print('before')\nraise SystemExit(3)", "1/0"):
        sandboxed = LocalPython().run(code, limits)
        plain = LocalPython(isolation="none").run(code, limits)
        assert sandboxed == plain or (sandboxed.ok, code) == (plain.ok, "1/0")
    # a traceback names the file by its path, which differs: /tmp/work/main.py in the sandbox
    body = json.loads(LocalPython().run("1/0", limits).body)
    assert body["exit_code"] == 1 and 'File "/tmp/work/main.py"' in body["output"]


def test_a_sandbox_that_cannot_be_built_is_an_infrastructure_error(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from drsearch.agents import InfrastructureError, pytool
    from drsearch.agents.errors import SandboxError

    broken = tmp_path / "launcher.py"
    broken.write_text("print('no report')\n")
    monkeypatch.setattr(pytool, "LAUNCHER", broken)
    limits = python_limits(DR256.model_copy(update={"tools": ("python",)}))
    with pytest.raises(SandboxError, match="without a report \\(no report\\)") as e:
        LocalPython().run("print(1)", limits)
    assert isinstance(e.value, InfrastructureError)  # the episode is an infra_error, nothing cached
    assert pytool.probe_isolation()[0] == "none"


def _no_user_namespaces() -> list[str]:
    """A command prefix that runs its command where no user namespace can be made (the machine
    lacks the sandbox's mechanism); skips where even that cannot be arranged."""
    unshare = shutil.which("unshare")
    prefix = [unshare or "unshare", "--user", "--map-root-user", "sh", "-c",
              'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"', "sh"]
    try:
        probe = subprocess.run([*prefix, unshare or "unshare", "--user", "true"], capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        pytest.skip("unshare(1) cannot run here: cannot simulate a machine without user namespaces")
    if probe.returncode == 0 or b"unshare failed" not in probe.stderr:
        pytest.skip("cannot simulate a machine without user namespaces here")
    return prefix


def test_a_machine_without_a_sandbox_refuses_unless_allowed(sample_index: Path, tmp_path: Path) -> None:
    prefix = _no_user_namespaces()
    shutil.copy(sample_index, tmp_path / "db")
    script = [{"call": [("python", {"code": "print(2962 * 1000)"})]}, {"content": "answer-INDEX"}]
    with serve_fake({0: script}) as fake:
        refused = _run(tmp_path, QUESTIONS, BLOCKED, fake.url, prefix=prefix)
        assert refused.returncode == 2 and refused.stdout == ""
        err = refused.stderr.splitlines()
        assert len(err) == 1 and err[0].startswith("drsearch: error: preset 'calc' offers the python tool")
        assert "--allow-unsandboxed-python" in err[0]
        assert not (tmp_path / "run").exists()  # nothing written

        allowed = _run(tmp_path, QUESTIONS, BLOCKED, fake.url, "--allow-unsandboxed-python", prefix=prefix)
        assert allowed.returncode == 0, allowed.stderr
        assert json.loads((tmp_path / "run" / "run.json").read_text())["python_isolation"] == "none"
        assert _tool_messages(tmp_path / "run") == ["python: exit code 0\n2962000\n"]

        resumed = _run(tmp_path, QUESTIONS, BLOCKED, fake.url)  # where it can sandbox: not the same run
        assert resumed.returncode == 2, resumed.stderr
        assert resumed.stderr.endswith("holds a different run (differs in python_isolation); use another --out\n")


def test_an_interpreter_installed_under_tmp_runs_in_the_sandbox(tmp_path: Path) -> None:
    """A checkout in /tmp (CI's clone) has its .venv under /tmp, where the sandbox mounts its
    own tmpfs: the interpreter is bound inside it, read-only, and the call answers as usual."""
    assert str(tmp_path).startswith("/tmp/")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    limits = python_limits(DR256.model_copy(update={"tools": ("python",)}))
    body = json.loads(LocalPython(executable=str(venv / "bin/python")).run(
        "import sys\nprint(sys.prefix, 6 * 7)\nopen('/tmp/scratch', 'w').write('x')", limits).body)
    assert body["exit_code"] == 0, body
    assert body["output"].strip() == f"{venv} 42"
