"""A ``drsearch serve`` process opens (and checks) its index once before its first answer.

The parent's pre-flight checks and a single in-process worker share one engine: at 2M
passages each ``Engine.open`` reads and checks ~50 MB of per-chunk tables, so a second open
was a second or more of start-up. With several workers each opens its own (they are other
processes), and the parent's check still runs first. The background deep check (its own
process) still runs. Counted, not timed: each ``Engine.open`` of the serving process
appends a line to a file.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path

import pytest

from drsearch.server import ServeProcess

from .conftest import BLOCK_QUERY

# Engine.open counted in the serving process, then the CLI as `drsearch` runs it.
_COUNTING = """
import os, sys
from drsearch.index.engine import Engine
real = Engine.open.__func__
def counting(cls, path, *a, **k):
    with open(os.environ["OPENS_LOG"], "a") as f:
        f.write(f"{os.getpid()} {path}\\n")
    return real(cls, path, *a, **k)
Engine.open = classmethod(counting)
from drsearch.tools.cli import entry
sys.argv[0] = "drsearch"
entry()
"""
COUNTING_DRSEARCH = (sys.executable, "-c", _COUNTING)


def _post(url: str, body: dict[str, object]) -> dict[str, object]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=30) as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


def _get(url: str) -> dict[str, object]:
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(url, timeout=30) as r:
        return json.loads(r.read())  # type: ignore[no-any-return]


def _opens(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.mark.parametrize("verify", ["fast", "none", "deep"])
def test_one_worker_serves_on_the_engine_the_parent_checked(sample_index: Path, tmp_path: Path,
                                                            verify: str) -> None:
    log = tmp_path / "opens.txt"
    with ServeProcess(sample_index, "--verify", verify, program=COUNTING_DRSEARCH,
                      env={"OPENS_LOG": str(log)}) as server:
        answer = _post(server.url + "/retrieve", {"queries": ["aircraft"], "topk": 3})
        assert isinstance(answer["result"], list) and len(answer["result"]) == 1
        opens = _opens(log)
        assert len(opens) == 1, opens
        assert opens[0].split()[0] == str(server.pid)  # the serving process, not a helper
        state = _get(server.url + "/health")["verify"]
        assert isinstance(state, dict)
        # the guarantee kept: after fast the deep check still runs (in its own process)
        assert state["state"] == {"fast": "pending", "none": "off", "deep": "ok"}[verify] or (
            verify == "fast" and state["state"] == "ok"), state


def test_the_shared_engine_hides_what_the_blocklist_names(sample_index: Path, tmp_path: Path,
                                                          blocked_docid: str) -> None:
    listed = tmp_path / "blocked.txt"
    listed.write_text(blocked_docid + "\n")
    log = tmp_path / "opens.txt"
    with ServeProcess(sample_index, "--blocked-docids", str(listed), program=COUNTING_DRSEARCH,
                      env={"OPENS_LOG": str(log)}) as server:
        answer = _post(server.url + "/retrieve", {"queries": [BLOCK_QUERY], "topk": 10})
        assert len(_opens(log)) == 1
        (hits,) = answer["result"]  # type: ignore[misc]
        assert hits and blocked_docid not in json.dumps(hits)
        health = _get(server.url + "/health")
        assert health["blocklist"]["count"] == 1, health  # type: ignore[index]
        # the serving process's line naming its blocklist, at info, in uvicorn's format
        log = server.log_path.read_text()
        assert f"INFO:     worker {server.pid} serving {sample_index}" in log, log
        assert "(1 docids, 1 in this corpus; file)" in log, log


def test_several_workers_each_open_their_own(sample_index: Path, tmp_path: Path) -> None:
    log = tmp_path / "opens.txt"
    with ServeProcess(sample_index, workers=2, program=COUNTING_DRSEARCH,
                      env={"OPENS_LOG": str(log)}) as server:
        _post(server.url + "/retrieve", {"queries": ["aircraft"], "topk": 3})
        # the parent's check; the workers are fresh interpreters the counting hook does not reach
        assert [line.split()[0] for line in _opens(log)] == [str(server.pid)]
    assert os.path.exists(sample_index)


# Counted in a fresh interpreter: str.isspace() calls made by importing the server and
# building its app (each serve process pays them before its first answer).
_COUNT_ISSPACE = """
import sys
calls = 0
def count(frame, event, arg):
    global calls
    if event == "c_call" and getattr(arg, "__name__", "") == "isspace":
        calls += 1
sys.setprofile(count)
from drsearch.server import ServerSettings
from drsearch.server.requests import request_models
request_models(ServerSettings())
sys.setprofile(None)
print(calls)
"""


def test_the_server_imports_without_scanning_every_code_point() -> None:
    import subprocess

    out = subprocess.run([sys.executable, "-c", _COUNT_ISSPACE], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert int(out) <= 2 * 0x3001, out  # was 1,114,112: every code point, ~0.1 s a process


def test_the_whitespace_class_covers_every_code_point_str_strip_removes() -> None:
    from drsearch.server.requests import LAST_SPACE, NOT_BLANK

    spaces = [c for c in range(sys.maxunicode + 1) if chr(c).isspace()]
    assert max(spaces) <= LAST_SPACE
    assert "[^" + "".join(f"\\u{c:04x}" for c in spaces) + "]" == NOT_BLANK
