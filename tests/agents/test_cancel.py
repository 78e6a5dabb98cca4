"""Ctrl-C during `drsearch run`: model calls in flight are abandoned at once, finished
episodes stay, unfinished ones are not written, exit 130 without a traceback, and a rerun
completes the run byte-identical to an uninterrupted one."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from drsearch.agents import ChatClient, RetryPolicy
from drsearch.agents.llm import CallCancelled
from drsearch.dev.chat import DEFAULT_SCRIPT, SEED_BASE, serve_fake
from drsearch.tools.cli import main

from .conftest import BLOCKED, QUESTIONS

HANGING = 5
# question 5 searches, then its second model call hangs (the first try only)
SCRIPTS: dict[int, list[dict[str, Any]]] = {
    HANGING: [DEFAULT_SCRIPT[0], {"hang": 1, **DEFAULT_SCRIPT[1]}, DEFAULT_SCRIPT[2]]}


def _argv(out: Path, base_url: str, sample_index: Path) -> list[str]:
    return ["run", "--questions", str(QUESTIONS), "--database", str(sample_index), "--blocked-docids",
            str(BLOCKED), "--out", str(out), "--model", "fake-model", "--base-url", base_url,
            "--concurrency", "2", "--quiet", "--json", "--max-attempts", "3", "--backoff", "0.01"]


def _run_in_process(argv: list[str]) -> dict[str, Any]:
    buf = io.StringIO()
    rc = main(argv, out=buf)
    assert rc == 0, buf.getvalue()
    return dict(json.loads(buf.getvalue()))


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _wait_for(condition: Any, what: str, proc: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if proc.poll() is not None:
            raise AssertionError(f"drsearch run ended early (rc {proc.returncode}) waiting for {what}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_ctrl_c_cancels_in_flight_calls_and_the_rerun_resumes(sample_index: Path, tmp_path: Path) -> None:
    baseline = tmp_path / "uninterrupted"
    with serve_fake({}) as fake:
        _run_in_process(_argv(baseline, fake.url, sample_index))

    out = tmp_path / "interrupted"
    traj = out / "trajectories.jsonl"
    exe = str(Path(sys.executable).with_name("drsearch"))
    with serve_fake(SCRIPTS) as fake:
        proc = subprocess.Popen([exe, *_argv(out, fake.url, sample_index)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # every other question finishes on the second worker; question 5 waits on its model call
        _wait_for(lambda: fake.hanging == 1 and traj.exists() and traj.read_bytes().count(b"\n") == 11,
                  "11 finished episodes and one hanging model call", proc)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        try:
            stdout, stderr = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise AssertionError("drsearch run did not stop on SIGINT") from None
        took = time.monotonic() - t0
        err = stderr.decode()
        assert proc.returncode == 130, err
        assert took < 5, f"SIGINT took {took:.1f} s to stop the run"
        assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert "interrupted: 11 finished episode(s) kept" in err and "rerun" in err
        assert stdout == b""
        kept = _lines(traj)
        assert sorted(r["index"] for r in kept) == [i for i in range(12) if i != HANGING]
        assert all(r["status"] == "answered" for r in kept)
        assert not (out / "summary.json").exists()

        before = len(fake.requests)
        summary = _run_in_process(_argv(out, fake.url, sample_index))  # same command: resume
        rerun_seeds = {b["seed"] - SEED_BASE for b in fake.requests[before:]}
    assert rerun_seeds == {HANGING}
    assert summary["resumed"] == 11 and summary["questions"] == 12
    assert summary["statuses"] == {"answered": 12}
    assert traj.read_bytes() == (baseline / "trajectories.jsonl").read_bytes()


def _blocking_client(release: threading.Event, statuses: list[int], **policy: float) -> ChatClient:
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        status = statuses[min(len(calls), len(statuses)) - 1]
        if status == 0:
            release.wait(60)
            status = 200
        return httpx.Response(status, json={"choices": [{"message": {"content": "x", "role": "assistant"}}]})

    http = httpx.Client(base_url="http://llm.test/v1", transport=httpx.MockTransport(handler))
    return ChatClient(http, RetryPolicy(**policy))


@pytest.mark.parametrize("statuses,what", [([0], "a request in flight"), ([503], "a retry wait")])
def test_cancel_interrupts_a_call_at_once(statuses: list[int], what: str) -> None:
    release = threading.Event()
    chat = _blocking_client(release, statuses, max_attempts=5, backoff_s=60, backoff_max_s=60)
    outcome: list[BaseException | bytes] = []

    def call() -> None:
        try:
            outcome.append(chat.complete({"model": "m"})[0])
        except BaseException as e:
            outcome.append(e)

    worker = threading.Thread(target=call)
    worker.start()
    time.sleep(0.2)
    assert not outcome, f"the call should be blocked in {what}"
    t0 = time.monotonic()
    chat.cancel()
    worker.join(5)
    release.set()
    assert time.monotonic() - t0 < 1 and isinstance(outcome[0], CallCancelled)
    with pytest.raises(CallCancelled):  # and later calls are refused
        chat.complete({"model": "m"})
    with contextlib.suppress(Exception):
        chat.close()
