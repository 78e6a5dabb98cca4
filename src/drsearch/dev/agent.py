"""The demo agent of ``drsearch dev model --script agent``: a scripted *reader* that needs no
model weights yet does the job an agent does, through the real tool protocol.

Per question (a request's turn is the number of assistant messages in it):

- turn 0: a native ``search`` call with the question as the query (k = 3);
- turn 1: a native ``open`` of the first docid the search returned (none: "I do not know.");
- turn 2 on: the answer, read from the opened page: the sentence sharing the most words with
  the question, then in it the first number the question does not contain (for "how many",
  "how much", "what year", "when" questions) or else the first run of capitalised words the
  question does not contain.

A pure function of the request, so a run against it is byte-identical when repeated. It is
right on some of the sample's questions and wrong on the others, which is what a demo of
grading needs. A completion without a ``seed`` is ``drsearch run``'s endpoint probe ("OK").
"""

from __future__ import annotations

import json
import re
from typing import Any

from .chat import Completion, completion

NUMERIC_CUES = ("how many", "how much", "what year", "in what year", "which year", "when ")
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'’-]*")
_NUMBER = re.compile(r"\d[\d,]*(?:\.\d+)?")
_CAPITALISED = re.compile(r"[A-Z][\w'’-]*(?:\s+(?:(?:of|the|de|von|am|la|le)\s+)?[A-Z][\w'’-]*)*")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_STOP = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "by", "did", "does", "for", "from", "had", "has", "have",
    "how", "in", "is", "it", "its", "of", "on", "or", "that", "the", "their", "this", "to", "was",
    "were", "what", "when", "where", "which", "who", "whom", "whose", "why", "with"
])
UNKNOWN = "I do not know."


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text) if w.casefold() not in _STOP}


def question_of(messages: list[dict[str, Any]]) -> str:
    """The question: the first line of the first user message, without its ``Question:``."""
    first_user = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
    return first_user.removeprefix("Question: ").split("\n")[0]


def answer_from(question: str, page: str) -> str:
    """The answer the reader gives to ``question`` after reading ``page`` (see the module)."""
    body = page.split("\n\n", 1)[1] if "\n\n" in page else page
    asked = _words(question)
    sentences = [s.strip() for s in _SENTENCE.split(body) if s.strip()]
    if not sentences:
        return UNKNOWN
    # the most overlapping sentence; ties go to the earliest (stable max over the index)
    best = max(range(len(sentences)), key=lambda i: (len(_words(sentences[i]) & asked), -i))
    sentence = sentences[best]
    numeric = any(cue in question.casefold() for cue in NUMERIC_CUES)
    if numeric:
        for n in _NUMBER.findall(sentence):
            if n not in question:
                return str(n)
    for span in _CAPITALISED.findall(sentence):
        if not _words(span) <= asked and span.casefold() not in _STOP:
            return str(span)
    return UNKNOWN


def _call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {"function": {"arguments": json.dumps(arguments, sort_keys=True), "name": name},
            "id": call_id, "type": "function"}


class ReaderAgent:
    """The responder of ``--script agent`` (see the module)."""

    def __init__(self) -> None:
        self.url = ""

    def list_models(self) -> tuple[int, dict[str, Any]]:
        return 200, {"data": [{"id": "scripted-reader", "object": "model"}], "object": "list"}

    def respond(self, body: dict[str, Any]) -> tuple[int, Completion]:
        model = str(body.get("model", "scripted-reader"))
        if "seed" not in body:  # drsearch run's endpoint probe
            return 200, completion("OK", model)
        messages: list[dict[str, Any]] = list(body.get("messages", []))
        turn = sum(m.get("role") == "assistant" for m in messages)
        question = question_of(messages)
        prompt = "\n".join(str(m.get("content") or "") for m in messages)
        if turn == 0:
            return 200, completion(None, model, [_call("search", {"k": 3, "query": question}, "c0")], prompt)
        last = str(messages[-1].get("content") or "") if messages else ""
        if turn == 1:
            hit = re.search(r"docid: (\S+)", last)
            if hit is None:
                return 200, completion(UNKNOWN, model, prompt=prompt)
            return 200, completion(None, model, [_call("open", {"docid": hit.group(1)}, "c1")], prompt)
        return 200, completion(answer_from(question, last), model, prompt=prompt)


__all__ = ["NUMERIC_CUES", "UNKNOWN", "ReaderAgent", "answer_from", "question_of"]
