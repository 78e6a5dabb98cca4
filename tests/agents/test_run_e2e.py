"""End to end: `drsearch run` with a scripted fake model against a real drsearch server.

Covers sampling parameters and seeds, statuses (answered, turn cap, model error, infra
error), malformed and text-tag tool calls, 429/5xx retries, accounting, run.json, resume and
replay identity.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from drsearch.agents import DR256, code_version, tool_schema_sha256
from drsearch.agents.canonical import sha256_json
from drsearch.dev.chat import SEED_BASE, serve_fake
from drsearch.tools.cli import main

from .conftest import BLOCKED, QUESTIONS

SCRIPTS: dict[int, list[dict[str, Any]]] = {
    1: [  # malformed native calls, then text-tag calls (one malformed), then an answer
        {"call": [("search", "{not json"), ("browse", {"url": "x"}), ("search", {"query": "plague", "k": 0})]},
        {"content": 'Let me look.\n<tool_call>{"name": "search", "arguments": {"query": "bubonic plague"}}'
                    '</tool_call>\n<tool_call>{"name": "search", "arguments": {"query": }}</tool_call>'},
        {"content": "28"},
    ],
    2: [{"errors": [429, 503], "call": [("search", {"query": "QUESTION"})]}, {"content": "answer-INDEX"}],
    3: [{"call": [("search", {"query": "QUESTION", "k": 2})]}],  # never answers: turn cap
    4: [{"status": 500}],  # retries run out: an infrastructure failure (not finished, exit 1)
    5: [{"status": 400}],  # not retryable: the model's error at once
}


def run_cli(out: Path, *extra: str, search: list[str], rc: int = 0) -> dict[str, Any]:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        got = main(["run", "--questions", str(QUESTIONS), *search, "--out", str(out), "--quiet", "--json",
                    "--max-attempts", "3", "--backoff", "0.01", *extra], out=buf)
    assert got == rc, buf.getvalue()
    return dict(json.loads(buf.getvalue()))


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def live_run(search_server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("runs") / "live"
    with serve_fake(SCRIPTS) as fake:
        summary = run_cli(out, "--model", "fake-model", "--base-url", fake.url, "--concurrency", "4",
                          search=["--search", search_server], rc=1)  # question 4: infrastructure
        return {"out": out, "summary": summary, "fake": fake}


def by_index(out: Path) -> dict[int, dict[str, Any]]:
    return {r["index"]: r for r in lines(out)}


def test_every_question_recorded_in_index_order(live_run: dict[str, Any]) -> None:
    records = lines(live_run["out"])
    assert [r["index"] for r in records] == list(range(12))
    summary = live_run["summary"]
    assert summary["questions"] == 12
    assert summary["statuses"] == {"answered": 9, "infra_error": 1, "model_error": 1, "turn_cap": 1}


def test_sampling_parameters_and_seeds(live_run: dict[str, Any]) -> None:
    requests = live_run["fake"].requests
    assert requests
    for body in requests:
        assert body["temperature"] == 0.6 and body["top_p"] == 0.95 and body["top_k"] == 20
        assert body["model"] == "fake-model" and body["tool_choice"] == "auto"
        assert [t["function"]["name"] for t in body["tools"]] == ["search", "open"]
        index = body["seed"] - SEED_BASE
        row = json.loads(QUESTIONS.read_text().splitlines()[index])
        assert body["messages"][: len(row["prompt"])] == row["prompt"]  # frozen prompt, as given


def test_default_episode_searches_opens_and_answers(live_run: dict[str, Any], search_server: str) -> None:
    r = by_index(live_run["out"])[0]
    assert r["status"] == "answered" and r["final_answer"] == "answer-0"
    assert r["seed"] == SEED_BASE
    assert r["accounting"]["tool_calls"] == {"open": 1, "search": 1}
    assert r["accounting"]["llm_calls"] == 3 and r["accounting"]["completion_tokens"] == 21
    assert r["accounting"]["reasoning_tokens"] == 6
    tool_msgs = [m for m in r["messages"] if m["role"] == "tool"]
    assert tool_msgs[0]["content"].startswith("3 result(s) for")
    assert "characters 0-" in tool_msgs[1]["content"]
    blocked = set(BLOCKED.read_text().split())
    for call in r["tool_calls"]:
        assert call["ok"] and len(call["response_sha256"]) == 64
        assert call["arguments"].get("docid") not in blocked
    # per call: usage as reported, summing to the episode's; a tool call's arguments, and the
    # hash and size of the exact bytes the server sent (asked again here: the same bytes)
    assert [t["usage"] for t in r["turns"]] == [{"completion_tokens": 7, "prompt_tokens": 10 * n,
                                                 "reasoning_tokens": 2} for n in (2, 4, 6)]
    assert r["accounting"]["prompt_tokens"] == sum(t["usage"]["prompt_tokens"] for t in r["turns"])
    search = r["tool_calls"][0]
    assert search["name"] == "search" and search["arguments"]["k"] == 3
    body = httpx.post(search_server + "/search", json=search["arguments"]).content
    assert search["response_sha256"] == hashlib.sha256(body).hexdigest() and search["response_bytes"] == len(body)
    assert r["accounting"]["tool_response_bytes"] == sum(c["response_bytes"] for c in r["tool_calls"])


def test_malformed_and_text_tag_calls(live_run: dict[str, Any]) -> None:
    r = by_index(live_run["out"])[1]
    assert r["status"] == "answered" and r["final_answer"] == "28"
    assert r["accounting"]["malformed_tool_calls"] == 4
    assert r["accounting"]["tool_calls"] == {"open": 0, "search": 1}
    tool_errors = [json.loads(m["content"]) for m in r["messages"] if m["role"] == "tool"]
    assert [e["error"]["type"] for e in tool_errors] == ["malformed_tool_call"] * 3
    assert "unknown tool 'browse'" in tool_errors[1]["error"]["message"]
    text_reply = r["messages"][-2]
    assert text_reply["role"] == "user" and text_reply["content"].count("<tool_response>") == 2
    assert [c["dialect"] for c in r["tool_calls"]] == ["native"] * 3 + ["text"] * 2


def test_retries_turn_cap_and_errors(live_run: dict[str, Any]) -> None:
    records, fake = by_index(live_run["out"]), live_run["fake"]
    assert records[2]["status"] == "answered" and fake.attempts[(2, 0)] == 3  # 429, 503, then ok
    assert records[3]["status"] == "turn_cap" and records[3]["accounting"]["llm_calls"] == 20
    assert records[3]["accounting"]["tool_calls"]["search"] == 20
    assert records[4]["status"] == "infra_error" and "gave up after 3 attempts" in records[4]["reason"]
    assert records[5]["status"] == "model_error" and "HTTP 400" in records[5]["reason"]
    assert fake.attempts[(5, 0)] == 1


def test_run_json_and_summary(live_run: dict[str, Any], search_server: str) -> None:
    manifest = json.loads((live_run["out"] / "run.json").read_text())
    health = httpx.get(search_server + "/health").json()
    assert manifest["corpus_identity"] == health["corpus"]["identity"]
    assert manifest["blocklist_sha256"] == health["blocklist"]["sha256"]
    assert manifest["blocklist_count"] == manifest["blocklist_matched"] == health["blocklist"]["matched"] == 3
    assert manifest["preset"]["name"] == "dr256" and manifest["preset"]["max_turns"] == 20
    assert manifest["tool_schema_sha256"] == tool_schema_sha256(DR256)
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]
    assert manifest["prompt_sha256"] == {r["metadata"]["qid"]: sha256_json(r["prompt"]) for r in rows}
    assert manifest["questions_sha256"] == hashlib.sha256(QUESTIONS.read_bytes()).hexdigest()
    assert manifest["model"] == "fake-model" and manifest["base_url"] == live_run["fake"].url
    assert manifest["code_version"] == code_version() and manifest["search"] == search_server
    started = datetime.fromisoformat(manifest["started_at"])
    assert started.tzinfo is not None and abs((datetime.now(UTC) - started).total_seconds()) < 3600
    summary = live_run["summary"]
    totals = summary["accounting"]
    assert totals["llm_calls"] == sum(r["accounting"]["llm_calls"] for r in lines(live_run["out"]))
    assert summary["cache"]["llm"] == {"hits": 0, "misses": 0, "stored": totals["llm_calls"]}
    assert summary["cache"]["tool"]["stored"] == sum(totals["tool_calls"].values())
    assert totals["malformed_tool_calls"] == 4 and totals["tool_response_bytes"] > 0


def test_replay_reproduces_trajectories_byte_for_byte(live_run: dict[str, Any], tmp_path: Path) -> None:
    out = tmp_path / "replayed"
    with serve_fake({}) as fake:  # no search server, no model: everything from the cache
        summary = run_cli(out, "--replay", str(live_run["out"]), search=[], rc=1)
        assert fake.requests == [] and fake.probes == []
    # question 4's failure was never cached: its replay misses (an infrastructure failure too)
    replayed, recorded = by_index(out), by_index(live_run["out"])
    assert {i: r for i, r in replayed.items() if i != 4} == {i: r for i, r in recorded.items() if i != 4}
    assert replayed[4]["status"] == "infra_error" and replayed[4]["reason"].startswith("replay_miss: ")
    assert summary["cache"]["llm"]["misses"] == 1 and summary["cache"]["llm"]["hits"] > 0
    assert summary["cache"]["tool"]["misses"] == 0


def test_resume_after_interruption_is_identical(live_run: dict[str, Any], sample_index: Path,
                                               tmp_path: Path) -> None:
    ids = [json.loads(line)["metadata"]["qid"] for line in QUESTIONS.read_text().splitlines()]
    out = tmp_path / "resumed"
    with serve_fake(SCRIPTS) as fake:
        args = ("--model", "fake-model", "--base-url", fake.url, "--concurrency", "3")
        search = ["--database", str(sample_index), "--blocked-docids", str(BLOCKED)]
        run_cli(out, *args, "--ids", *ids[7:10], search=search)  # the "interrupted" run
        with open(out / "trajectories.jsonl", "ab") as fh:
            fh.write(b'{"qid": "torn line of a kill -9')  # a half-written last line
        before = len(fake.requests)
        summary = run_cli(out, *args, search=search, rc=1)
        seeds = {b["seed"] - SEED_BASE for b in fake.requests[before:]}
    assert summary["resumed"] == 3 and not seeds & {7, 8, 9}
    assert (out / "trajectories.jsonl").read_bytes() == (live_run["out"] / "trajectories.jsonl").read_bytes()


def test_resume_refuses_a_different_run(live_run: dict[str, Any], search_server: str) -> None:
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["run", "--questions", str(QUESTIONS), "--search", search_server, "--out",
                   str(live_run["out"]), "--model", "other-model", "--base-url", "http://127.0.0.1:9/v1",
                   "--quiet"], out=io.StringIO())
    assert rc == 2 and "differs in base_url, model" in err.getvalue()


def test_resume_after_kill_9(live_run: dict[str, Any], search_server: str, tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    exe = str(Path(sys.executable).with_name("drsearch"))
    out = tmp_path / "killed"
    with serve_fake(SCRIPTS, delay_s=0.03) as fake:
        args = ["--model", "fake-model", "--base-url", fake.url, "--concurrency", "2"]
        proc = subprocess.Popen([exe, "run", "--questions", str(QUESTIONS), "--search", search_server,
                                 "--out", str(out), "--quiet", "--max-attempts", "3", "--backoff", "0.01", *args],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        traj = out / "trajectories.jsonl"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and proc.poll() is None:
            if traj.exists() and traj.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        kept = [json.loads(line) for line in traj.read_bytes().splitlines(keepends=True) if line.endswith(b"\n")]
        done = sum(r["status"] != "infra_error" for r in kept)
        assert 3 <= len(kept) < 12, "the run should have been killed mid-way"
        summary = run_cli(out, *args, search=["--search", search_server], rc=1)
    assert summary["resumed"] == done and summary["questions"] == 12
    assert traj.read_bytes() == (live_run["out"] / "trajectories.jsonl").read_bytes()


def test_a_user_preset_file_is_sent_recorded_and_replayed(sample_index: Path, tmp_path: Path) -> None:
    """--preset FILE.json (data, not code); --ids then --limit; --replay takes the recorded preset;
    replaying with another preset misses, and each miss is an error episode naming the call."""
    preset = tmp_path / "short.json"
    preset.write_text(json.dumps({"base": "dr256", "name": "short", "max_turns": 2, "extra_body": {"top_k": 5},
                                  "seed_base": 1000}))
    ids = [json.loads(line)["metadata"]["qid"] for line in QUESTIONS.read_text().splitlines()]
    out = tmp_path / "short"
    never_answers = [{"call": [("search", {"query": "QUESTION", "k": 2})]}]
    with serve_fake({1000 + i - SEED_BASE: never_answers for i in range(2)}) as fake:  # keyed by seed
        summary = run_cli(out, "--model", "fake-model", "--base-url", fake.url, "--preset", str(preset),
                          "--ids", ids[2], ids[0], ids[1], "--limit", "2",
                          search=["--database", str(sample_index), "--blocked-docids", str(BLOCKED)])
        assert {(b["seed"], b["top_k"]) for b in fake.requests} == {(1000, 5), (1001, 5)}
    assert [r["index"] for r in lines(out)] == [0, 1]  # file order, then the first two
    assert summary["statuses"] == {"turn_cap": 2} and summary["accounting"]["llm_calls"] == 4
    assert summary["accounting"]["tool_calls"] == {"open": 0, "search": 4}
    recorded = json.loads((out / "run.json").read_text())["preset"]
    assert recorded["name"] == "short" and recorded["max_turns"] == 2 and recorded["temperature"] == 0.6

    replayed = tmp_path / "replayed"
    run_cli(replayed, "--replay", str(out), "--ids", ids[0], ids[1], search=[])
    assert (replayed / "trajectories.jsonl").read_bytes() == (out / "trajectories.jsonl").read_bytes()

    other = tmp_path / "other-preset"
    summary = run_cli(other, "--replay", str(out), "--preset", "dr256", "--ids", ids[0], search=[], rc=1)
    (record,) = lines(other)
    assert summary["statuses"] == {"infra_error": 1}
    assert summary["cache"]["llm"] == {"hits": 0, "misses": 1, "stored": 0}
    assert record["status"] == "infra_error"
    assert record["reason"].startswith(f"replay_miss: replay cache has no response for chat completion {ids[0]} "
                                       "turn 0")


def test_a_replay_miss_of_a_tool_call_names_the_call(live_run: dict[str, Any], tmp_path: Path) -> None:
    import shutil
    import sqlite3

    src = tmp_path / "src"
    shutil.copytree(live_run["out"], src)
    with sqlite3.connect(src / "cache.sqlite3") as db:  # forget one search the model made
        (call,) = db.execute("SELECT call FROM responses WHERE kind = 'tool' AND call LIKE 'search(%' "
                             "ORDER BY call LIMIT 1").fetchone()
        db.execute("DELETE FROM responses WHERE call = ?", (call,))
    out = tmp_path / "replayed"
    summary = run_cli(out, "--replay", str(src), search=[], rc=1)
    errors = [r for r in lines(out) if r["status"] == "infra_error" and r["index"] != 4]  # 4: never cached
    assert errors and all(f"replay cache has no response for {call}" in r["reason"] for r in errors)
    assert summary["cache"]["tool"]["misses"] == len(errors) and summary["questions"] == 12


def test_repeated_attempts_move_the_seeds(sample_index: Path, tmp_path: Path) -> None:
    """--attempt N: the same preset with seeds moved by N x 1,000,000, recorded in run.json,
    on top of a preset file too; attempt 0 is the preset itself."""
    from drsearch.agents.preset import ATTEMPT_SEED_STRIDE

    ids = [json.loads(line)["metadata"]["qid"] for line in QUESTIONS.read_text().splitlines()]
    never_answers = [{"call": [("search", {"query": "QUESTION", "k": 2})]}]
    moved = SEED_BASE + 2 * ATTEMPT_SEED_STRIDE
    preset = tmp_path / "short.json"
    preset.write_text(json.dumps({"base": "dr256", "name": "short", "max_turns": 1}))
    with serve_fake({moved + i - SEED_BASE: never_answers for i in range(2)}) as fake:
        out = tmp_path / "attempt-2"
        run_cli(out, "--model", "fake-model", "--base-url", fake.url, "--attempt", "2",
                "--preset", str(preset), "--ids", ids[0], ids[1],
                search=["--database", str(sample_index), "--blocked-docids", str(BLOCKED)])
        assert {b["seed"] for b in fake.requests} == {moved, moved + 1}
    recorded = json.loads((out / "run.json").read_text())["preset"]
    assert recorded["name"] == "short-attempt2" and recorded["seed_base"] == moved
    assert recorded["max_turns"] == 1
    assert DR256.for_attempt(0) is DR256
    assert DR256.for_attempt(3).seed_for(255) == SEED_BASE + 3 * ATTEMPT_SEED_STRIDE + 255
    assert main(["run", "--questions", str(QUESTIONS), "--database", str(sample_index), "--out",
                 str(tmp_path / "bad"), "--attempt", "-1", "--model", "m",
                 "--base-url", "http://127.0.0.1:9/v1"]) == 2  # one-line error, nothing written
    assert not (tmp_path / "bad").exists()
