"""A scripted OpenAI-compatible judge on 127.0.0.1 (a real HTTP server), and run helpers.

The judge reads the graded text from the request (between its ``<<<BEGIN RESPONSE-…>>>``
marker lines) and answers by rule: the first rule whose needle occurs in that text gives
its replies, one per try of the same request (the last one repeats). A reply is a string
(the assistant content) or an int (an HTTP error status). Without a matching rule the
judge is an *oracle*: for the correctness prompt it says yes iff the response equals the
reference answer (case-insensitively); for DeepSearchQA it hits each item the response
contains; for checklists it marks every criterion whose text the response contains met;
a citation's support is "yes". A request without a delimited response (the judge's
reachability probe) is answered "OK" and recorded in ``probes``, not ``requests``.
"""

from __future__ import annotations

import json
import re
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .chat import serve_chat

Reply = str | int

_BLOCK = re.compile(r"<<<BEGIN (RESPONSE-[0-9a-f]{16})>>>\n(.*?)\n<<<END \1>>>", re.S)


def correctness(correct: str = "yes", answer: str = "x", confidence: int = 90, reasoning: str = "ok") -> str:
    return json.dumps({"extracted_final_answer": answer, "reasoning": reasoning, "correct": correct,
                       "confidence": confidence})


def dsqa(details: dict[str, bool], excessive: list[str] | None = None, explanation: str = "ok") -> str:
    return json.dumps({"Correctness Details": details, "Excessive Answers": excessive or [],
                       "Explanation": explanation})


def checklist(*verdicts: str) -> str:
    criteria = [{"id": i, "verdict": v, "reason": "r"} for i, v in enumerate(verdicts, 1)]
    return json.dumps({"criteria": criteria})


def response_of(body: dict[str, Any]) -> str:
    """The graded text of a judge request (the response block of its user message)."""
    m = _BLOCK.search(body["messages"][-1]["content"])
    assert m is not None, "no delimited response in the judge request"
    return m.group(2)


def _oracle(user: str, response: str) -> str:
    if "Decide whether the record supports the claim" in user:
        return json.dumps({"support": "yes", "reasoning": "default"})
    if "[reference answer]:" in user:
        reference = user.split("[reference answer]: ", 1)[1].split("\n", 1)[0]
        ok = " ".join(response.casefold().split()) == " ".join(reference.casefold().split())
        return correctness("yes" if ok else "no", response)
    if "[expected items]" in user:
        items = json.loads(user.split("every item must be found in the response):\n", 1)[1].split("\n", 1)[0])
        return dsqa({i: i.casefold() in response.casefold() for i in items})
    criteria = json.loads(user.split("[criteria] (a JSON list of {\"id\", \"type\", \"text\"}):\n", 1)[1]
                          .split("\n", 1)[0])
    return checklist(*("met" if c["text"].casefold() in response.casefold() else "not_met" for c in criteria))


class FakeJudge:
    def __init__(self, rules: list[tuple[str, list[Reply]]] | None = None) -> None:
        self.rules = rules or []
        self.requests: list[dict[str, Any]] = []
        self.probes: list[dict[str, Any]] = []
        self.tries: Counter[str] = Counter()
        self.lock = threading.Lock()
        self.url = ""

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        user = body["messages"][-1]["content"]
        if not _BLOCK.search(user):  # the judge's reachability probe: nothing to grade
            with self.lock:
                self.probes.append(body)
            return 200, _completion("OK", body["model"])
        response = response_of(body)
        with self.lock:
            self.requests.append(body)
            self.tries[user] += 1
            attempt = self.tries[user]
        reply: Reply | None = None
        for needle, replies in self.rules:
            if needle in response:
                reply = replies[min(attempt, len(replies)) - 1]
                break
        if reply is None:
            reply = _oracle(user, response)
        if isinstance(reply, int):
            return reply, {"error": {"message": "injected", "type": "injected"}}
        return 200, _completion(reply, body["model"])


def _completion(content: str, model: str) -> dict[str, Any]:
    message = {"content": content, "role": "assistant"}
    return {"choices": [{"finish_reason": "stop", "index": 0, "message": message}],
            "id": "judge-1", "model": model, "object": "chat.completion",
            "usage": {"completion_tokens": 5, "prompt_tokens": 50, "total_tokens": 55}}


@contextmanager
def serve_judge(rules: list[tuple[str, list[Reply]]] | None = None) -> Iterator[FakeJudge]:
    fake = FakeJudge(rules)
    with serve_chat(fake) as url:
        fake.url = url
        yield fake
