"""The python tool: isolated interpreter, fresh directory, minimal environment, rlimits, wall
clock, capped output; offered only by presets that list it, cached and replayed like every tool."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

from drsearch.agents import CLOSED_BOOK, DR256, LocalPython, tool_schema_sha256, tool_schemas
from drsearch.agents.canonical import sha256_json
from drsearch.agents.pytool import format_python, python_limits
from drsearch.dev.chat import serve_fake

from .conftest import BLOCKED
from .test_run_e2e import lines, run_cli


def run(code: str, **preset: Any) -> dict[str, Any]:
    p = DR256.model_copy(update={"tools": ("python",), **preset})
    r = LocalPython().run(code, python_limits(p))
    body: dict[str, Any] = json.loads(r.body)
    assert r.ok == (body["exit_code"] == 0 and not body["timed_out"])
    return body


def test_computes_in_isolation_in_a_fresh_empty_directory() -> None:
    code = ("import os, sys\nprint(6 * 7)\nprint(sys.flags.isolated, sys.flags.ignore_environment)\n"
            "print(sorted(os.listdir('.')))\nprint(sorted(os.environ))\nopen('left.txt', 'w').write('x')")
    body = run(code)
    assert body["exit_code"] == 0 and not body["timed_out"] and not body["output_truncated"]
    out = body["output"].splitlines()
    assert out[0] == "42" and out[1] == "1 1" and out[2] == "['main.py']"
    assert out[3] == "['HOME', 'LANG', 'PATH', 'PYTHONIOENCODING']"  # nothing of the caller's environment
    assert run("import os\nprint(os.listdir('.'))")["output"] == "['main.py']\n"  # nothing kept between calls


def test_errors_are_answers_with_their_exit_code() -> None:
    body = run("print('before')\nraise SystemExit(3)")
    assert body["exit_code"] == 3 and body["output"] == "before\n"
    body = run("1/0")
    assert body["exit_code"] == 1 and "ZeroDivisionError" in body["output"]


def test_cpu_limit_kills_a_busy_loop() -> None:
    body = run("while True:\n    pass", python_cpu_s=1, python_wall_s=60)
    assert body["exit_code"] == -signal.SIGXCPU and not body["timed_out"]
    assert "killed by signal" in format_python(body, 1000)


def test_memory_limit_refuses_a_large_allocation() -> None:
    body = run("x = bytearray(2 * 1024 ** 3)\nprint('allocated')", python_memory_mb=256)
    assert body["exit_code"] == 1 and "MemoryError" in body["output"] and "allocated" not in body["output"]


def test_wall_clock_limit_kills_a_sleeper_and_its_children() -> None:
    # a python child: the sandbox holds the interpreter, not /usr/bin
    code = ("import subprocess, sys, time\nsubprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "print('started', flush=True)\ntime.sleep(60)")
    body = run(code, python_wall_s=3.0)  # room for the sandbox and start-up on a loaded machine
    assert body["timed_out"] and body["output"] == "started\n"
    assert format_python(body, 1000).startswith("python: killed at the wall-clock limit")


def test_output_is_capped_at_the_tool_response_limit() -> None:
    body = run("print('x' * 100_000)", max_tool_response_chars=1000, open_page_chars=500)
    assert body["output_truncated"] and len(body["output"]) == 1000
    text = format_python(body, 1000)
    assert len(text) <= 1000 and text.endswith("…[truncated]")


def test_tool_lists_are_canonical_and_hashed() -> None:
    a = DR256.model_copy(update={"tools": ("search", "python")})
    assert type(DR256).model_validate({**DR256.model_dump(), "tools": ["python", "search"]}).tools == \
        ("search", "python")
    assert [t["function"]["name"] for t in tool_schemas(a)] == ["search", "python"]
    assert [t["function"]["name"] for t in tool_schemas(DR256)] == ["search", "open"]
    hashes = {tool_schema_sha256(p) for p in (DR256, a, CLOSED_BOOK)}
    assert len(hashes) == 3 and tool_schema_sha256(CLOSED_BOOK) == sha256_json([])


def _preset(tmp: Path, name: str, **fields: Any) -> Path:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps({"base": "dr256", "name": name, **fields}))
    return path


def test_a_python_run_records_replays_offline_and_refuses_unoffered_tools(sample_index: Path,
                                                                         tmp_path: Path) -> None:
    preset = _preset(tmp_path, "calc", tools=["python"], max_turns=4)
    script = [{"call": [("python", {"code": "print(2962 * 1000)"}), ("search", {"query": "QUESTION"})]},
              {"content": "answer-INDEX"}]
    out = tmp_path / "calc"
    with serve_fake({0: script, 1: script}) as fake:
        summary = run_cli(out, "--model", "fake-model", "--base-url", fake.url, "--preset", str(preset),
                          "--limit", "2", search=["--database", str(sample_index), "--blocked-docids", str(BLOCKED)])
        for body in fake.requests:
            assert [t["function"]["name"] for t in body["tools"]] == ["python"] and body["tool_choice"] == "auto"
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["tools"] == ["python"] and manifest["preset"]["tools"] == ["python"]
    assert summary["statuses"] == {"answered": 2}
    assert summary["accounting"]["tool_calls"] == {"open": 0, "python": 2, "search": 0}
    assert summary["accounting"]["malformed_tool_calls"] == 2  # search is not offered: not executed
    first = lines(out)[0]
    tool_msgs = [m["content"] for m in first["messages"] if m["role"] == "tool"]
    assert tool_msgs[0] == "python: exit code 0\n2962000\n"
    assert "unknown tool 'search' (tools: python)" in tool_msgs[1]

    replayed = tmp_path / "replayed"  # no model, no search backend, no interpreter run: the cache
    summary = run_cli(replayed, "--replay", str(out), "--limit", "2", search=[])
    assert summary["cache"]["tool"] == {"hits": 2, "misses": 0, "stored": 0}
    assert (replayed / "trajectories.jsonl").read_bytes() == (out / "trajectories.jsonl").read_bytes()


def test_closed_book_is_one_call_without_tools(sample_index: Path, tmp_path: Path) -> None:
    """The closed-book preset: no tools, no tool_choice, the first reply ends the episode, even
    one that asks for a tool (nothing is executed)."""
    out = tmp_path / "closed"
    scripts = {0: [{"content": "<think>I recall</think> 30"}]}  # question 1: the default script's search call
    with serve_fake(scripts) as fake:
        summary = run_cli(out, "--model", "fake-model", "--base-url", fake.url, "--preset", "closed-book",
                          "--limit", "2", search=["--database", str(sample_index)])
        assert len(fake.requests) == 2
        for body in fake.requests:
            assert "tools" not in body and "tool_choice" not in body and body["temperature"] == 0.6
    manifest = json.loads((out / "run.json").read_text())
    assert manifest["tools"] == [] and manifest["preset"]["name"] == "closed-book"
    assert manifest["preset"]["max_turns"] == 1
    r0, r1 = lines(out)
    assert (r0["status"], r0["final_answer"]) == ("answered", "30")
    assert r1["status"] == "answered" and r1["final_answer"] == "" and r1["tool_calls"] == []
    assert summary["accounting"]["llm_calls"] == 2 and summary["accounting"]["tool_calls"] == {"open": 0, "search": 0}


def test_generator_rows_of_the_dr256_shape_run(sample_index: Path, tmp_path: Path) -> None:
    """Rows carrying only prompt, metadata.qid and metadata.benchmark.index, plus a generator's
    own metadata block and no label, are questions `drsearch run` accepts."""
    rows = [{"prompt": [{"role": "user", "content": f"Question: what is {i} squared?\nAnswer:"}],
             "metadata": {"qid": f"gen-{i}", "benchmark": {"index": i},
                          "example_generator": {"template": "square", "answer": i * i}}} for i in range(3)]
    questions = tmp_path / "generated.jsonl"
    questions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "gen"
    with serve_fake({i: [{"content": "answer-INDEX"}] for i in range(3)}) as fake:
        summary = run_cli(out, "--questions", str(questions), "--model", "fake-model", "--base-url", fake.url,
                          "--preset", "closed-book", search=["--database", str(sample_index)])
    assert summary["statuses"] == {"answered": 3}
    assert [(r["qid"], r["final_answer"]) for r in lines(out)] == [("gen-0", "answer-0"), ("gen-1", "answer-1"),
                                                                   ("gen-2", "answer-2")]
