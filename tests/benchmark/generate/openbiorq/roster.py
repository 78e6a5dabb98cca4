"""The three rule-based roster models of the end-to-end run (served by drsearch.dev.chat
beside the writer and judge of rules.py), and what their answers score under the checklist
judge of drsearch.dev.judge (a criterion is met iff the answer contains its text).

Every exported rubric is ``rules._criteria(clause)``: must_mention 3, must_acknowledge 2,
must_ground 2, must_mention 1, must_avoid 3 (weights, total 11). An answer is one of

- ``full``: every criterion but the must_avoid one → 11/11 = 1.0 (solved);
- ``boundary``: the must_acknowledge text → (2 + 3)/11 = 0.4545 (fails, within 0.15 of 0.5);
- ``deep``: the second must_mention text → (1 + 3)/11 = 0.3636 (fails, in [0.35, 0.40));
- ``none``: neither → 3/11 = 0.2727 (the must_avoid claim is avoided).

The plan, by benchmark index (the row's position in ``items.jsonl``; the agent reads it from the
request's seed, ``seed_base + index``): indexes 0–1 are solved by all three (easy); 2–4 by
``roster-a`` only (discriminating); 5–10 by none at the roster temperature (core; 10 is a deep
failure, every model ``deep`` or ``none``). At temperature 0 (the freeze runs) ``roster-a``
solves 5 and 6, so the frozen core is 7–10. ``roster-a`` and ``roster-b`` search the follow-up
corpus first; ``roster-a`` cites the first hit's URL, ``roster-b`` always cites PMID 31000001 and the arXiv
paper 2301.00005 (by a versioned abstract link; each the right paper only for that source's
items: the PMID and arXiv wrong-paper rates); ``roster-c`` answers without a tool call (the
zero-tool rate).
"""

from __future__ import annotations

import json
import re
from typing import Any

from drsearch.agents import DR256
from drsearch.dev.chat import Rule

from .rules import _criteria

ROSTER = ("roster-a", "roster-b", "roster-c")
ATTEMPT_STRIDE = 1_000_000
EASY, DISCRIMINATING, CORE = range(0, 2), range(2, 5), range(5, 11)
THAWED_AT_T0 = (5, 6)
"""Core items ``roster-a`` solves at temperature 0: not in the frozen core."""
DEEP = (10,)
"""A core item whose best roster score is a deep failure (in [0.35, 0.40))."""
CITED_BY_B = "PMID: 31000001; https://arxiv.org/abs/2301.00005v2"


def kind(model: str, index: int, temperature: float) -> str:
    """Which answer ``model`` gives the item at ``index`` (see the module docstring)."""
    if index in EASY:
        return "full"
    if index in DISCRIMINATING:
        return {"roster-a": "full", "roster-b": "boundary"}.get(model, "none")
    if model == "roster-a" and index not in DEEP:
        return "full" if temperature == 0 and index in THAWED_AT_T0 else "boundary"
    return "deep" if model == "roster-b" else "none"


def answer_text(question: str, answer: str) -> str:
    clause = question.split("whether ", 1)[1].rstrip("?")
    criteria = _criteria(clause)
    if answer == "full":
        return " ".join(f"{c['text']}." for c in criteria if c["type"] != "must_avoid")
    if answer == "boundary":
        return f"{criteria[1]['text']}."
    if answer == "deep":
        return f"{criteria[3]['text']}."
    return "I could not establish what is known about this."


def roster_agent(body: dict[str, Any]) -> Any:
    model, temperature = str(body["model"]), float(body["temperature"])
    index = (int(body["seed"]) - DR256.seed_base) % ATTEMPT_STRIDE
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    question = user.removeprefix("Question: ").removesuffix("\nAnswer:")
    tool_replies = [str(m["content"]) for m in body["messages"] if m["role"] == "tool"]
    if model != "roster-c" and not tool_replies:
        return {"content": None, "role": "assistant", "tool_calls": [
            {"function": {"arguments": json.dumps({"k": 3, "query": question}), "name": "search"},
             "id": "call-0", "type": "function"}]}
    text = answer_text(question, kind(model, index, temperature))
    if model == "roster-a" and (url := re.search(r"https://followups\.example/\S+", "".join(tool_replies))):
        text += f" Source: {url.group(0).rstrip('.,;)')}"
    if model == "roster-b":
        text += f" ({CITED_BY_B})"
    return text


RULES = [Rule(model, "Answer:", roster_agent) for model in ROSTER]
