"""The prompts of the pipeline's model calls (their text is part of every stage's settings
hash through the package hash, so editing a prompt reruns the stages that use it).

Each builder returns the chat ``messages``; the stage adds ``seed`` and ``temperature``.
The first line of each user message names the task, so a log (or a test responder) can
tell the calls apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

Messages = list[dict[str, str]]

SYSTEM = ("You help build a benchmark of open biomedical research questions. Answer with one JSON object "
          "and nothing else.")


def _user(text: str) -> Messages:
    return [{"content": SYSTEM, "role": "system"}, {"content": text, "role": "user"}]


def extract(source: dict[str, Any]) -> Messages:
    return _user(
        "Task: extract every open research question.\n"
        "List every distinct research question that this source states is still open (unanswered, "
        "untested or uncertain), in the order the source raises them, each as one sentence. Do not invent "
        "questions the source does not raise; list none if it raises none.\n"
        'Reply as {"questions": ["...", ...]}.\n\n'
        f"Source id: {source['source_id']}\nTitle: {source['title']}\nText: {source['text']}")


def refine(item: dict[str, Any], taxonomy: Sequence[str]) -> Messages:
    return _user(
        "Task: refine an extracted open question.\n"
        "Rewrite the question so that it is self-contained: a reader who has not seen the source must "
        "understand it (name the population, intervention, comparison and outcome instead of 'this' or "
        "'these'). Label it with exactly one taxonomy class, give three hints on what makes it hard, the "
        "tools a researcher would use, and your initial view of its status (open, partially_answered, "
        "answered or unknown) with your reasoning; the status is checked against evidence later.\n"
        f"Taxonomy: {json.dumps(list(taxonomy))}\n"
        'Reply as {"self_contained_question": "...", "taxonomy": "...", "difficulty_hints": ["...", "...", '
        '"..."], "tool_hints": ["..."], "initial_status": "...", "status_reasoning": "..."}.\n\n'
        f"Source id: {item['source_id']}\nSource title: {item['title']}\nSource text: {item['source_text']}\n"
        f"Extracted question: {item['extracted_question']}")


def self_containment(question: str) -> Messages:
    return _user(
        "Task: judge self-containment.\n"
        "Can a reader who has seen nothing else understand exactly what this question asks, without "
        "guessing what 'this', 'these' or 'the study' refer to?\n"
        'Reply as {"self_contained": "yes" | "no", "reason": "..."}.\n\n'
        f"Question: {question}")


def gold(item: dict[str, Any]) -> Messages:
    return _user(
        "Task: write a reference answer.\n"
        "Write the best answer you can to this open research question: what is known, what is not, and "
        "the studies, trials or records you rely on, each cited by its identifier (PMID, NCT number, DOI or "
        "arXiv id).\n"
        'Reply as {"answer": "..."}.\n\n'
        f"Question: {item['question']}")


def rubric(item: dict[str, Any], feedback: Sequence[str] = (), reference: str | None = None) -> Messages:
    text = (
        "Task: write a checklist rubric.\n"
        "Write 5 to 8 criteria an expert would use to grade an answer to this open research question. Each "
        "criterion has a type (must_mention: a fact or study the answer names; must_acknowledge: an "
        "uncertainty or gap it admits; must_ground: a claim it supports with a cited source; must_avoid: a "
        "claim it must not make), an integer weight 1 to 3, and a text that a grader can check with yes or "
        "no for this question only. Include at least one must_acknowledge and one must_avoid.\n"
        'Reply as {"criteria": [{"type": "...", "weight": 1, "text": "..."}, ...]}.\n\n'
        f"Question: {item['question']}")
    if reference is not None:  # the gold stage's answer: drafting context, never a target (the paper's §4.2)
        text += ("\n\nReference answer (context for drafting only: it is not the answer to match, and its "
                 f"citations are not evidence):\n{reference}")
    if feedback:
        listed = "\n".join(f"- {f}" for f in feedback)
        text += f"\n\nProblems with your previous draft (fix every one):\n{listed}"
    return _user(text)


def specificity(question: str, criteria: Sequence[dict[str, Any]]) -> Messages:
    listed = [{"id": i, "text": c["text"], "type": c["type"]} for i, c in enumerate(criteria, 1)]
    return _user(
        "Task: check rubric criteria.\n"
        "For each criterion say whether a grader can decide it with a plain yes or no (binary) and whether "
        "it is specific to this question rather than true of any answer on any topic (specific).\n"
        'Reply as {"criteria": [{"id": 1, "binary": true, "specific": true}, ...]} with every id.\n\n'
        f"Question: {question}\nCriteria: {json.dumps(listed, sort_keys=True)}")


def openness(item: dict[str, Any], evidence: Sequence[dict[str, Any]]) -> Messages:
    listed = [{"id": e["id"], "snippet": e["snippet"], "title": e["title"]} for e in evidence]
    return _user(
        "Task: judge openness from evidence.\n"
        "Using only the evidence below, say whether this research question is still open, partially "
        "answered or answered, and cite the ids of the evidence you rely on. If the evidence does not "
        "decide it, say unknown. Cite no id that is not listed.\n"
        'Reply as {"status": "open" | "partially_answered" | "answered" | "unknown", "evidence_ids": '
        '["..."], "reasoning": "..."}.\n\n'
        f"Question: {item['question']}\nSource: {item['source_id']} ({item['title']})\n"
        f"Evidence: {json.dumps(listed, sort_keys=True)}")


__all__ = ["SYSTEM", "Messages", "extract", "gold", "openness", "refine", "rubric", "self_containment",
           "specificity"]
