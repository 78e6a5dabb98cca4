"""SmolLM2 on llama.cpp as an OpenAI-compatible server in its own process, and its supervisor.

Run as a script (``python smollm2_server.py --model F.gguf``) it loads the GGUF with
``llama_cpp.Llama``, prints one JSON line with the CPU features llama.cpp was built with
(``llama_print_system_info``), serves ``/v1/chat/completions`` on 127.0.0.1 (tools rendered
into the system message; replies as text, so tool calls use the loop's ``<tool_call>`` text
dialect), prints a second JSON line with its port, and records every exchange
(``GET /record``).

Its own process, because llama.cpp's failures are not Python exceptions: a build using
instructions the CPU cannot execute dies with SIGILL at the first decode. In-process that
kills pytest; here :class:`ModelProcess` turns any death of the server into a one-line test
failure naming the signal and the build's CPU features.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, NoReturn

import pytest

MODEL = "smollm2-135m-instruct-q4_1"
REBUILD = ("rebuild llama-cpp-python portably: make smoke (SMOKE_NATIVE unset; "
           "scripts/smoke_install.py)")


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


def tool_call_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One call of one of the offered tools: ``{"name": <its name>, "arguments": <its schema>}``."""
    return {"oneOf": [{"additionalProperties": False, "required": ["name", "arguments"], "type": "object",
                       "properties": {"name": {"const": t["function"]["name"]},
                                      "arguments": t["function"].get("parameters") or {"type": "object"}}}
                      for t in tools]}


def tool_call_gbnf(tools: list[dict[str, Any]], to_gbnf: Any) -> str:
    """The grammar of a reply when tools are offered, as llama.cpp's own server constrains tool
    calls: either one well-formed call in the loop's text dialect, ``<tool_call>`` + a JSON object
    that satisfies the tool's schema + ``</tool_call>``, or a plain answer (text without ``<``, so
    no malformed tag can start). ``to_gbnf``: llama.cpp's JSON-schema-to-GBNF converter."""
    call = to_gbnf(json.dumps(tool_call_schema(tools), sort_keys=True))
    call = re.sub(r"^root ::=", "call ::=", call, flags=re.M)
    return 'root ::= "<tool_call>\\n" call "\\n</tool_call>" | answer\nanswer ::= [^<] [^<]*\n' + call


class ChatEndpoint:
    """``create_chat_completion`` behind a lock (one llama context), recording every exchange.

    ``constrain``: decode under a grammar, as llama.cpp's server does (``--jinja`` with tools,
    ``response_format``): tool calls well formed (:func:`tool_call_gbnf`), a ``json_schema``
    response format's schema satisfied. ``/v1/models`` says so (``meta.constrained_decoding``),
    and ``drsearch run`` cites that entry in run.json (``endpoint_model``)."""

    def __init__(self, llama: Any, max_new_tokens: int, constrain: bool = False) -> None:
        self.llama = llama
        self.max_new_tokens = max_new_tokens
        self.constrain = constrain
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.usages: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self.grammars: list[str] = []  # per request: "tool_calls", "json_schema" or "none"

    def grammar(self, body: dict[str, Any]) -> tuple[str, Any]:
        """(which constraint, the LlamaGrammar or None) for a request."""
        if not self.constrain:
            return "none", None
        from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

        if body.get("tools"):
            return "tool_calls", LlamaGrammar.from_string(tool_call_gbnf(body["tools"], json_schema_to_gbnf),
                                                          verbose=False)
        fmt = body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            schema = fmt["json_schema"]["schema"]
            return "json_schema", LlamaGrammar.from_json_schema(json.dumps(schema, sort_keys=True), verbose=False)
        return "none", None

    def model_entry(self) -> dict[str, Any]:
        """This server's ``/v1/models`` entry: the model and how it decodes."""
        meta = {"constrained_decoding": ["json_schema", "tool_calls"] if self.constrain else [],
                "max_new_tokens": self.max_new_tokens}
        return {"id": MODEL, "meta": meta, "object": "model"}

    def complete(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(body)
            try:
                which, grammar = self.grammar(body)
                self.grammars.append(which)
                out = self.llama.create_chat_completion(
                    messages=with_tools(body["messages"], body.get("tools")),
                    temperature=body.get("temperature", 0.8), top_p=body.get("top_p", 0.95),
                    top_k=body.get("top_k", 40), seed=body.get("seed"), grammar=grammar,
                    max_tokens=min(body.get("max_tokens") or self.max_new_tokens, self.max_new_tokens))
            except Exception as e:  # e.g. the context window exceeded: a client error, not retried
                self.errors.append(f"{e.__class__.__name__}: {e}")
                return 400, {"error": {"message": str(e)[:500], "type": "invalid_request_error"}}
            self.usages.append(dict(out.get("usage") or {}))
        out["model"] = body.get("model", MODEL)
        return 200, dict(out)

    def record(self) -> dict[str, Any]:
        with self.lock:
            return {"errors": list(self.errors), "grammars": list(self.grammars), "requests": list(self.requests),
                    "usages": list(self.usages)}


class _Handler(BaseHTTPRequestHandler):
    endpoint: ChatEndpoint

    def _send(self, status: int, answer: dict[str, Any]) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        if self.path == "/v1/chat/completions":
            self._send(*self.endpoint.complete(body))
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_GET(self) -> None:
        if self.path == "/v1/models":  # drsearch run's endpoint probe
            self._send(200, {"data": [self.endpoint.model_entry()], "object": "list"})
        elif self.path == "/record":
            self._send(200, self.endpoint.record())
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def log_message(self, *args: Any) -> None:
        pass


def _exit_with_parent(parent: int) -> None:
    """Exit when the test process is gone (killed before its fixture could stop us): the server
    runs in its own session, so nothing else would end it."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(0)


def serve(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--n-ctx", type=int, default=4096)
    ap.add_argument("--max-new-tokens", type=int, default=192)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--constrain", action="store_true",
                    help="decode under a grammar: well-formed tool calls, response_format's JSON schema")
    opts = ap.parse_args(argv)
    import llama_cpp  # only in the server process: the test process never loads llama.cpp

    # before the model loads, so the features are known even when loading already dies
    info = llama_cpp.llama_print_system_info()
    print(json.dumps({"llama_cpp": llama_cpp.__version__,
                      "system_info": (info.decode() if isinstance(info, bytes) else str(info)).strip()}),
          flush=True)
    llama = llama_cpp.Llama(model_path=opts.model, n_ctx=opts.n_ctx, n_threads=opts.threads, seed=0,
                            verbose=False)
    endpoint = ChatEndpoint(llama, opts.max_new_tokens, constrain=opts.constrain)
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("Handler", (_Handler,), {"endpoint": endpoint}))
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown).start())
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()
    print(json.dumps({"port": server.server_address[1]}), flush=True)
    server.serve_forever()
    server.server_close()
    llama.close()


def describe_exit(returncode: int) -> str:
    """``exited with status N`` or ``died with SIGNAME (description)``."""
    if returncode >= 0:
        return f"exited with status {returncode}"
    try:
        sig = signal.Signals(-returncode)
    except ValueError:
        return f"died with signal {-returncode}"
    return f"died with {sig.name} ({signal.strsignal(sig) or sig.name})"


class ModelProcess:
    """A model server subprocess that prints JSON lines (``system_info`` first, then ``port``)
    on stdout; its stderr goes to ``log``. Any death is a one-line test failure (``fail``)."""

    def __init__(self, cmd: list[str], log: Path, start_timeout_s: float = 300.0,
                 env: dict[str, str] | None = None) -> None:
        self.log = log
        self.system_info = "unknown (the server died before reporting it)"
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log.open("wb"), text=True,
                                     start_new_session=True, env=env)
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + start_timeout_s
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                self.stop()
                self.fail(f"did not report a port within {start_timeout_s:.0f} s")
            if line is None:
                self.proc.wait(30)
                self.fail("before it served")
            msg = json.loads(line)
            if "system_info" in msg:
                self.system_info = str(msg["system_info"])
            if "port" in msg:
                self.base_url = f"http://127.0.0.1:{msg['port']}"
                return

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.strip():
                self.lines.put(line)
        self.lines.put(None)

    def fail(self, when: str) -> NoReturn:
        """A one-line test failure: how the process ended (or ``when`` it stopped), the build's
        CPU features, the advice, the last line of its stderr."""
        rc = self.proc.poll()
        how = describe_exit(rc) if rc is not None else "stopped"
        advice = f"; {REBUILD}" if rc == -signal.SIGILL else ""
        tail = [ln for ln in self.log.read_text(errors="replace").splitlines() if ln.strip()][-1:]
        pytest.fail(f"model server (llama.cpp) {how} {when}; built with: {self.system_info}{advice}"
                    + (f"; last stderr line: {tail[0][:300]}" if tail else ""), pytrace=False)

    def check(self, when: str) -> None:
        """Fail the test at once if the server process has ended."""
        if self.proc.poll() is not None:
            self.fail(when)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(20)


def run_watched(cmd: list[str], model: ModelProcess, logs: Path, timeout_s: float) -> tuple[int, str, str]:
    """`drsearch run` as a subprocess, watched: if the model server dies meanwhile, the run is
    interrupted and the test fails at once with the server's one-line explanation."""
    stdout, stderr = logs / "run.stdout", logs / "run.stderr"
    with stdout.open("wb") as out, stderr.open("wb") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
    deadline = time.monotonic() + timeout_s
    try:
        while proc.poll() is None:
            if model.proc.poll() is not None:
                proc.send_signal(signal.SIGINT)
                proc.wait(30)
                model.check("during `drsearch run`")
            if time.monotonic() > deadline:
                pytest.fail(f"`drsearch run` did not finish within {timeout_s:.0f} s", pytrace=False)
            time.sleep(0.5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)
    model.check("during `drsearch run`")  # died with the last request: same one-line failure
    return proc.returncode, stdout.read_text(), stderr.read_text()


if __name__ == "__main__":
    serve(sys.argv[1:])
