"""One episode: the tool-calling loop of one question.

Contract: the question's frozen prompt messages are sent as given, with the preset's
sampling fields and ``seed = seed_base + index`` on every call. The episode ends with a
status and a reason. Final statuses (:data:`FINAL_STATUSES`: the model's outcome, graded):

- ``answered``: an assistant message without tool calls (its text, ``<think>`` removed,
  is the final answer; possibly empty); with a closed-book preset (no tools) the first
  reply, whatever it holds (no tools, so nothing in it is executed);
- ``turn_cap``: ``max_turns`` model calls without a final answer;
- ``budget``: the tool-call, token or time budget ran out (the reason says which);
- ``model_error``: the endpoint refused a request for good (a plain LLMError, e.g. a 400
  for a prompt over the context length) or sent something that is not a chat completion.

Not final: ``not_run`` (the run's ``--max-cost`` was spent before the episode could start;
written by the runner, never by this loop) and ``infra_error`` (an
:class:`~drsearch.agents.errors.InfrastructureError`: model endpoint unreachable, 429/5xx
after the retries or 401/403/404, search backend down, replay miss, a local write that
failed). Such an episode is not the model's result: the run store does not count it as
finished, so a rerun asks again.

The returned record is deterministic given the model's responses (no clocks in it);
wall times and retry counts go to the separate ``timing`` dict.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from .biocalls import BioCalls
from .canonical import sha256_hex
from .errors import AgentError, CacheError, InfrastructureError, LLMError
from .llm import CachedChat
from .preset import Preset
from .pytool import PythonRunner
from .questions import Question
from .searcher import Searcher
from .toolcalls import ParsedCall, parse_tool_calls, strip_think
from .tools import execute, tool_error, tool_schemas

FINAL_STATUSES = ("answered", "turn_cap", "budget", "model_error")
"""Outcomes the model caused: a finished episode (kept on resume, graded)."""
INFRA_STATUS = "infra_error"
"""An infrastructure failure: recorded with its reason, never a finished episode."""
NOT_RUN_STATUS = "not_run"
"""A question ``--max-cost`` left unstarted: recorded, never an answer nor a finished episode
(a rerun with a larger budget runs it)."""
STATUSES = (*FINAL_STATUSES, INFRA_STATUS, NOT_RUN_STATUS)


@dataclass
class Accounting:
    """Per-episode counters (deterministic: tokens as reported, calls, bytes)."""

    llm_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    tool_calls: dict[str, int] = field(default_factory=lambda: {"open": 0, "search": 0})
    malformed_tool_calls: int = 0
    tool_errors: int = 0
    tool_response_bytes: int = 0

    def add_usage(self, usage: Any) -> dict[str, int]:
        usage = usage if isinstance(usage, dict) else {}
        details = usage.get("completion_tokens_details") or {}
        got = {"prompt_tokens": int(usage.get("prompt_tokens") or 0),
               "completion_tokens": int(usage.get("completion_tokens") or 0),
               "reasoning_tokens": int(details.get("reasoning_tokens") or 0)}
        self.prompt_tokens += got["prompt_tokens"]
        self.completion_tokens += got["completion_tokens"]
        self.reasoning_tokens += got["reasoning_tokens"]
        return got

    def as_dict(self) -> dict[str, Any]:
        return {"completion_tokens": self.completion_tokens, "llm_calls": self.llm_calls,
                "malformed_tool_calls": self.malformed_tool_calls, "prompt_tokens": self.prompt_tokens,
                "reasoning_tokens": self.reasoning_tokens,
                "tool_calls": dict(sorted(self.tool_calls.items())),
                "tool_errors": self.tool_errors, "tool_response_bytes": self.tool_response_bytes}


@dataclass
class Episode:
    """``record``: the trajectories.jsonl line (as a dict); ``timing``: wall clock facts."""

    record: dict[str, Any]
    timing: dict[str, Any]


class _Run:
    """State of one episode while it runs (kept small: see :func:`run_episode`)."""

    def __init__(self, q: Question, preset: Preset, model: str, chat: CachedChat, searcher: Searcher,
                 python: PythonRunner | None, biotools: BioCalls | None = None) -> None:
        self.q, self.preset, self.model, self.chat, self.searcher = q, preset, model, chat, searcher
        self.python, self.biotools = python, biotools
        self.messages: list[dict[str, Any]] = q.prompt_messages()
        # every request of the episode is these fields plus the messages so far (closed-book:
        # no tools and no tool_choice, which some servers refuse without tools)
        tools = {"tool_choice": "auto", "tools": tool_schemas(preset)} if preset.tools else {}
        self.request = {"model": model, **tools, **preset.sampling(q.index)}
        self.acc = Accounting()
        for name in preset.tools:  # every offered tool counted, from 0 (search/open always were)
            if name not in ("search", "open"):
                self.acc.tool_calls[name] = 0
        self.turns: list[dict[str, Any]] = []
        self.calls: list[dict[str, Any]] = []
        self.timing: dict[str, Any] = {"llm_calls": []}
        self.started = time.monotonic()

    def budget_left(self) -> str | None:
        p, a = self.preset, self.acc
        if p.max_tool_calls is not None and sum(a.tool_calls.values()) >= p.max_tool_calls:
            return f"tool-call budget of {p.max_tool_calls} spent"
        if p.max_total_tokens is not None and a.prompt_tokens + a.completion_tokens >= p.max_total_tokens:
            return f"token budget of {p.max_total_tokens} spent"
        if p.max_episode_seconds is not None and time.monotonic() - self.started >= p.max_episode_seconds:
            return f"time budget of {p.max_episode_seconds} s spent"
        return None

    def ask(self, turn: int) -> dict[str, Any]:
        body = {"messages": self.messages, **self.request}
        t0 = time.monotonic()
        out = self.chat.complete(self.model, body, f"chat completion {self.q.qid} turn {turn}")
        self.timing["llm_calls"].append({"attempts": out.attempts, "cached": out.cached,
                                         "turn": turn, "wall_s": round(time.monotonic() - t0, 6)})
        self.acc.llm_calls += 1
        response = json.loads(out.body)
        if not out.ok:
            err = response["error"]  # a recorded refusal (only plain LLMErrors are recorded)
            raise LLMError(str(err["message"]))
        return dict(response)

    def run_call(self, turn: int, call: ParsedCall) -> str:
        entry: dict[str, Any] = {"arguments": call.arguments, "dialect": call.dialect, "id": call.call_id,
                                 "name": call.name, "turn": turn}
        if call.error is not None or call.arguments is None:
            self.acc.malformed_tool_calls += 1
            entry.update(error=call.error, malformed=True, raw=call.raw)
            self.calls.append(entry)
            return tool_error("malformed_tool_call", f"{call.error}; the call was not executed")
        result = execute(call.name, call.arguments, self.searcher, self.preset, self.python, self.biotools)
        self.acc.tool_calls[call.name] += 1
        self.acc.tool_errors += 0 if result.response.ok else 1
        self.acc.tool_response_bytes += len(result.response.body)
        entry.update(malformed=False, ok=result.response.ok, response_bytes=len(result.response.body),
                     response_sha256=sha256_hex(result.response.body))
        self.calls.append(entry)
        return result.text

    def step(self, turn: int) -> tuple[str, str, str | None] | None:
        """One model call and its tool calls; a (status, reason, answer) when the episode ends."""
        response = self.ask(turn)
        choice = response["choices"][0]
        message = choice["message"]
        usage = self.acc.add_usage(response.get("usage"))
        self.turns.append({"finish_reason": choice.get("finish_reason"), "message": message,
                           "turn": turn, "usage": usage})
        content = message.get("content") if isinstance(message.get("content"), str) else ""
        assistant: dict[str, Any] = {"content": content, "role": "assistant"}
        if message.get("tool_calls"):
            assistant["tool_calls"] = message["tool_calls"]
        self.messages.append(assistant)
        if self.preset.closed_book:
            return "answered", f"closed-book reply (finish_reason={choice.get('finish_reason')})", \
                strip_think(content).strip()
        calls = parse_tool_calls(message, turn, self.preset)
        if not calls:
            return "answered", f"final answer (finish_reason={choice.get('finish_reason')})", \
                strip_think(content).strip()
        texts = [self.run_call(turn, c) for c in calls]
        if calls[0].dialect == "native":
            self.messages.extend({"content": t, "role": "tool", "tool_call_id": c.call_id}
                                 for c, t in zip(calls, texts, strict=True))
        else:  # no tool parser on the server: answer in the same text dialect, as a user turn
            wrapped = "\n".join(f"<tool_response>\n{t}\n</tool_response>" for t in texts)
            self.messages.append({"content": wrapped, "role": "user"})
        return None


def run_episode(q: Question, preset: Preset, model: str, chat: CachedChat, searcher: Searcher,
                python: PythonRunner | None = None, biotools: BioCalls | None = None) -> Episode:
    """Run question ``q`` to a status; never raises for model, backend or replay failures
    (CallCancelled, CacheError, and bugs, pass through).

    ``python`` runs the python tool's calls (needed when the preset offers it), ``biotools``
    the biomedical tools' (needed when it offers any)."""
    run = _Run(q, preset, model, chat, searcher, python, biotools)
    status, reason, answer = "turn_cap", f"no final answer within {preset.max_turns} turns", None
    try:
        for turn in range(preset.max_turns):
            budget = run.budget_left()
            if budget is not None:
                status, reason = "budget", budget
                break
            end = run.step(turn)
            if end is not None:
                status, reason, answer = end
                break
    except CacheError:  # an untrustworthy cache ends the run: neither the model's outcome nor retried
        raise
    except InfrastructureError as e:  # before AgentError: an EndpointError is an LLMError too
        status, reason = INFRA_STATUS, f"{e.error_type}: {e.message}"
    except AgentError as e:
        status, reason = "model_error", f"{e.error_type}: {e.message}"
    record = {"accounting": run.acc.as_dict(), "final_answer": answer, "index": q.index,
              "messages": run.messages, "prompt_sha256": q.prompt_sha256, "qid": q.qid, "reason": reason,
              "seed": preset.seed_for(q.index), "status": status, "tool_calls": run.calls, "turns": run.turns}
    run.timing.update(qid=q.qid, wall_s=round(time.monotonic() - run.started, 6))
    return Episode(record, run.timing)


__all__ = ["FINAL_STATUSES", "INFRA_STATUS", "STATUSES", "Accounting", "Episode", "run_episode"]
