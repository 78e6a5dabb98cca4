"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1 (a real HTTP server).

Deterministic: the question is identified by its seed and the turn by the number of
assistant messages in the request, so a script step is a pure function of the request (plus
a try counter per (seed, turn) for injected 429/5xx). ``drsearch run --attempt N`` moves
every seed by N x 1,000,000, so ``attempt = (seed - 20260811) // 1_000_000`` and the
benchmark index is the remainder (:func:`attempt_and_index`).

Scripts are looked up by ``(attempt, index)`` first (so one attempt can solve a question
and another fail it), then by ``seed - 20260811`` (scripts keyed by seed, for presets with
their own ``seed_base``), then by ``index`` (every attempt), else :data:`DEFAULT_SCRIPT`.
In ``content``, ``INDEX`` becomes the benchmark index and ``ATTEMPT`` the attempt.

Script steps (dicts):
- ``{"errors": [429, 503], ...}``: answer those statuses on the first tries, then the rest;
- ``{"status": 400}``: always that status;
- ``{"call": [(name, arguments)]}``: native tool calls (arguments: dict, or a raw string);
- ``{"open_first_hit": True}``: a native ``open`` of the first docid in the last tool reply;
- ``{"content": text}``: an assistant message (a final answer or text-tag tool calls);
- ``{"hang": n, ...}``: the first n tries of that step send nothing until the server stops
  (or ``fake.release`` is set), then answer as the rest of the step says.
A script's last step repeats for later turns.

``drsearch dev model`` serves these responders as a command (``--script agent|judge|drbencher``).

``GET /v1/models`` lists ``fake.models`` (answered with ``fake.models_status``); a
completion without a ``seed`` is ``drsearch run``'s endpoint probe: recorded in
``fake.probes`` (not ``fake.requests``) and answered with ``fake.probe_status``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

Completion = dict[str, Any]
"""A chat-completions answer body (OpenAI's JSON shape)."""

SEED_BASE = 20260811
ATTEMPT_STRIDE = 1_000_000  # drsearch.agents.preset.ATTEMPT_SEED_STRIDE
ScriptKey = int | tuple[int, int]
DEFAULT_SCRIPT: list[dict[str, Any]] = [
    {"call": [("search", {"query": "QUESTION", "k": 3})]},
    {"open_first_hit": True},
    {"content": "<think>done reading</think>answer-INDEX"},
]


def attempt_and_index(seed: int) -> tuple[int, int]:
    """``(attempt, benchmark index)`` of a request's seed; a seed below the dr256 base (a
    preset with its own ``seed_base``) is attempt 0 with index ``seed - 20260811``."""
    offset = seed - SEED_BASE
    if offset < 0:
        return 0, offset
    attempt, index = divmod(offset, ATTEMPT_STRIDE)
    return attempt, index


class FakeLLM:
    def __init__(self, scripts: dict[ScriptKey, list[dict[str, Any]]], delay_s: float = 0.0) -> None:
        self.scripts = scripts
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self.attempts: Counter[tuple[int, int]] = Counter()
        self.lock = threading.Lock()
        self.url = ""
        self.release = threading.Event()  # ends every "hang" step
        self.hanging = 0  # requests waiting in a "hang" step now
        self.models = ["fake-model"]
        self.model_meta: dict[str, Any] = {}  # more fields of each /models entry (a server's metadata)
        self.models_status = 200
        self.probe_status = 200
        self.probes: list[dict[str, Any]] = []  # GET /models (as {"path": ...}) and probe completions

    def list_models(self) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.probes.append({"path": "/v1/models"})
        if self.models_status != 200:
            return self.models_status, {"error": {"message": "injected", "type": "injected"}}
        return 200, {"data": [{"id": m, "object": "model", **self.model_meta} for m in self.models],
                     "object": "list"}

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        time.sleep(self.delay_s)
        if "seed" not in body:  # the endpoint probe: one minimal request
            with self.lock:
                self.probes.append(body)
            if self.probe_status != 200:
                return self.probe_status, {"error": {"message": "injected", "type": "injected"}}
            return 200, {"choices": [{"finish_reason": "length", "index": 0,
                                      "message": {"content": "OK", "role": "assistant"}}],
                         "object": "chat.completion", "usage": {"completion_tokens": 1, "prompt_tokens": 5}}
        offset = body["seed"] - SEED_BASE
        run_attempt, index = attempt_and_index(body["seed"])
        messages = body["messages"]
        turn = sum(m["role"] == "assistant" for m in messages)
        with self.lock:
            self.requests.append(body)
            self.attempts[(offset, turn)] += 1
            attempt = self.attempts[(offset, turn)]
        script = self.script_for(run_attempt, index, offset)
        step = script[min(turn, len(script) - 1)]
        if attempt <= step.get("hang", 0):
            with self.lock:
                self.hanging += 1
            self.release.wait(300)
            with self.lock:
                self.hanging -= 1
        errors = step.get("errors", [])
        if attempt <= len(errors):
            return errors[attempt - 1], {"error": {"message": "injected", "type": "injected"}}
        if "status" in step:
            return step["status"], {"error": {"message": "bad request", "type": "invalid_request_error"}}
        # a system message is optional
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        question = first_user.removeprefix("Question: ").split("\n")[0]
        message: dict[str, Any] = {"content": None, "role": "assistant"}
        if "content" in step:
            content = step["content"].replace("INDEX", str(index))
            message["content"] = content.replace("ATTEMPT", str(run_attempt))
        calls = step.get("call", [])
        if step.get("open_first_hit"):
            last_tool = [m["content"] for m in messages if m["role"] in ("tool", "user")][-1]
            hit = re.search(r"docid: (\S+)", last_tool)
            if hit is None:  # no hit to open: the connection drops (an infrastructure failure)
                raise LookupError("open_first_hit: no docid in the last tool reply")
            calls = [("open", {"docid": hit.group(1)})]
        if calls:
            def arguments(a: str | dict[str, Any]) -> str:
                return a if isinstance(a, str) else json.dumps(a).replace("QUESTION", question)

            message["tool_calls"] = [
                {"function": {"arguments": arguments(a), "name": n}, "id": f"c{index}-{turn}-{i}",
                 "type": "function"}
                for i, (n, a) in enumerate(calls)]
        usage = {"completion_tokens": 7, "completion_tokens_details": {"reasoning_tokens": 2},
                 "prompt_tokens": 10 * len(messages), "total_tokens": 10 * len(messages) + 7}
        return 200, {"choices": [{"finish_reason": "tool_calls" if calls else "stop", "index": 0,
                                  "message": message}],
                     "id": f"cmpl-{index}-{turn}", "model": body["model"], "object": "chat.completion",
                     "usage": usage}


    def script_for(self, attempt: int, index: int, offset: int) -> list[dict[str, Any]]:
        """The script of one request: by (attempt, index), else seed offset, else index."""
        for key in ((attempt, index), offset, index):
            if key in self.scripts:
                return self.scripts[key]
        return DEFAULT_SCRIPT


class Responder(Protocol):
    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]: ...


def error_body(message: str, kind: str) -> dict[str, Any]:
    """An OpenAI-shaped error body."""
    return {"error": {"message": message, "type": kind}}


class _Handler(BaseHTTPRequestHandler):
    fake: Responder

    def do_GET(self) -> None:
        list_models = getattr(self.fake, "list_models", None)
        if self.path == "/v1/models" and list_models is not None:
            status, answer = list_models()
        else:
            status, answer = 404, {"error": "no such path"}
        self._send(status, answer)

    def do_POST(self) -> None:
        try:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
        except ValueError as e:  # a client's mistake is a 400 with its reason, never a dropped connection
            self._send(400, error_body(f"body is not JSON ({e})", "invalid_request_error"))
            return
        if self.path != "/v1/chat/completions":
            status, answer = 404, {"error": "no such path"}
        elif not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            status, answer = 400, error_body("a chat completion needs a JSON object with 'messages'",
                                         "invalid_request_error")
        else:  # a responder that raises drops the connection: the tests' way to inject a transport failure
            status, answer = self.fake.respond(body)
        self._send(status, answer)

    def _send(self, status: int, answer: dict[str, Any]) -> None:
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if status == 429:
            self.send_header("retry-after", "0")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client killed mid-request (the kill -9 test) is expected, not news


def completion(content: str | None, model: str, tool_calls: list[dict[str, Any]] | None = None,
               prompt: str = "") -> Completion:
    """A one-choice chat completion: ``content`` and, when given, native ``tool_calls``. Its
    usage counts words as tokens (``prompt``: the request's text), so runs show plausible sizes."""
    message: dict[str, Any] = {"content": content, "role": "assistant"}
    if tool_calls:
        message["tool_calls"] = tool_calls
    calls = tool_calls or []
    out = len((content or "").split()) + sum(len(c["function"]["arguments"].split()) for c in calls)
    read = len(prompt.split())
    finish = "tool_calls" if tool_calls else "stop"
    return {"choices": [{"finish_reason": finish, "index": 0, "message": message}], "id": "cmpl-scripted",
            "model": model, "object": "chat.completion",
            "usage": {"completion_tokens": out, "prompt_tokens": read, "total_tokens": out + read}}


def make_server(fake: Responder, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A bound (not yet serving) HTTP server answering with ``fake``; ``base_url`` gives its URL."""
    return _Server((host, port), type("Handler", (_Handler,), {"fake": fake}))


def base_url(server: ThreadingHTTPServer) -> str:
    """``http://HOST:PORT/v1`` of a bound server (IPv6 hosts in brackets)."""
    host, port = server.server_address[:2]
    shown = f"[{host!s}]" if ":" in str(host) else str(host)
    return f"http://{shown}:{port}/v1"


@contextmanager
def serve_chat(fake: Responder, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve ``fake.respond`` as ``POST /v1/chat/completions`` on 127.0.0.1; yields the base URL."""
    server = make_server(fake, host, port)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield base_url(server)
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serve_fake(scripts: dict[ScriptKey, list[dict[str, Any]]], delay_s: float = 0.0) -> Iterator[FakeLLM]:
    fake = FakeLLM(scripts, delay_s)
    with serve_chat(fake) as url:
        fake.url = url
        try:
            yield fake
        finally:
            fake.release.set()  # before the server stops: no handler is left hanging


# --- A rule-based responder, for the generators' LLM stages ---------------------------------


class Rule:
    """Answer requests for ``model`` (``"*"``: any) whose prompt contains every ``needles``
    string with ``reply``: a text, or a function of the request body giving the text or a
    whole assistant message (a dict, e.g. with native ``tool_calls``)."""

    def __init__(self, model: str, needles: tuple[str, ...] | str, reply: Any) -> None:
        self.model = model
        self.needles = (needles,) if isinstance(needles, str) else tuple(needles)
        self.reply = reply

    def matches(self, model: str, prompt: str) -> bool:
        return self.model in ("*", model) and all(n in prompt for n in self.needles)


class RuleResponder:
    """An OpenAI-compatible responder dispatching on the request's ``model`` and on needles in
    its prompt (every message's text, joined): the first matching rule answers. A request no
    rule matches is answered HTTP 400 ``no_rule`` naming the model (never a made-up reply),
    which the client does not retry. Deterministic: the reply is a function of the request."""

    def __init__(self, rules: list[Rule], delay_s: float = 0.0) -> None:
        self.rules = rules
        self.delay_s = delay_s
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.url = ""

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(body)
        time.sleep(self.delay_s)
        model = str(body.get("model"))
        prompt = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
        rule = next((r for r in self.rules if r.matches(model, prompt)), None)
        if rule is None:
            reason = f"no rule for model {model!r} and this prompt"
            return 400, {"error": {"message": reason, "type": "no_rule"}}
        reply = rule.reply(body) if callable(rule.reply) else str(rule.reply)
        message = reply if isinstance(reply, dict) else {"content": reply, "role": "assistant"}
        text = str(message.get("content") or "")
        usage = {"completion_tokens": len(text.split()), "prompt_tokens": len(prompt.split()),
                 "total_tokens": len(text.split()) + len(prompt.split())}
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return 200, {"choices": [{"finish_reason": finish, "index": 0, "message": message}],
                     "id": "cmpl-rule", "model": model, "object": "chat.completion", "usage": usage}


@contextmanager
def serve_rules(rules: list[Rule], delay_s: float = 0.0) -> Iterator[RuleResponder]:
    """Serve a :class:`RuleResponder` on 127.0.0.1 (real HTTP); ``.url`` is its base URL."""
    responder = RuleResponder(rules, delay_s)
    with serve_chat(responder) as url:
        responder.url = url
        yield responder


__all__ = ["ATTEMPT_STRIDE", "DEFAULT_SCRIPT", "SEED_BASE", "Completion", "FakeLLM", "Responder", "Rule",
           "RuleResponder", "ScriptKey", "attempt_and_index", "base_url", "completion", "error_body",
           "make_server", "serve_chat", "serve_fake", "serve_rules"]
