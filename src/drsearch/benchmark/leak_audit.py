"""Trajectory leak audit: where, if anywhere, an episode was handed the gold answer.

For each episode of a run, walk the tool responses the model read, in order, and find the
first one whose text contains the gold answer (both normalised by :func:`normalise`: case
folded, whitespace collapsed, thousands separators between digits removed; matched as a
whole token, so ``30`` is not found in ``300`` or ``30.5``). A search response is searched
hit by hit (never its header, which echoes the model's own query) and names the hit's docid;
an ``open`` page names its document; a ``python`` output has no docid.

Per episode: the first leak (turn, tool, docid), whether the final answer came after it,
whether the very first search's results already held the answer, and — with the grade —
the answer's ``origin``:

- ``corpus``: correct, and a search or open response held the gold before the final answer;
- ``computed``: correct, and only a python output held it;
- ``prior``: correct without any tool response holding it ("knew it already");
- ``None``: not graded correct (or no grade given).

:func:`audit_runs` sums these into the ``leak_audit`` block of ``scores.json``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

_SEPARATOR = re.compile(r"(?<=\d)[,\u00a0\u2009\u202f](?=\d{3}(?!\d))")
_RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.S)
_HIT = re.compile(r"^\[\d+\] docid: (\S+)", re.M)
_DOCID = re.compile(r"^docid: (\S+)", re.M)
CORPUS_TOOLS = frozenset({"search", "open"})

NORMALISATION = ("casefold; ',', NBSP, thin and narrow spaces between digit groups removed; "
                 "whitespace collapsed; whole-token match")
"""Recorded in every audit, so a reader knows what "contains" meant."""


def normalise(text: str) -> str:
    """Case folded, whitespace runs collapsed to one space, thousands separators removed."""
    return " ".join(_SEPARATOR.sub("", text.casefold()).split())  # separators first: NBSP is whitespace


def contains_answer(text: str, gold: str) -> bool:
    """Whether ``text`` holds ``gold`` as a whole token after :func:`normalise` (an empty
    gold is never found)."""
    needle = normalise(gold)
    if not needle:
        return False
    pattern = rf"(?<!\w){re.escape(needle)}(?!\w)(?![.,]\d)"
    return re.search(pattern, normalise(text)) is not None


def tool_texts(episode: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every executed tool response of an episode, in order: ``{turn, tool, text, args}``.

    Native calls answer as ``tool`` messages after their assistant turn, text-tag calls as
    one ``user`` message of ``<tool_response>`` blocks; both are paired with the episode's
    ``tool_calls`` entries of that turn in order. Malformed calls (answered with an error,
    never executed) are left out.
    """
    calls_by_turn: dict[int, list[dict[str, Any]]] = {}
    for call in episode.get("tool_calls") or []:
        calls_by_turn.setdefault(int(call.get("turn", -1)), []).append(call)
    messages = episode.get("messages") or []
    turn = -1
    texts: dict[int, list[str]] = {}
    for m in messages:
        role, content = m.get("role"), m.get("content")
        if role == "assistant":
            turn += 1
        elif turn >= 0 and role == "tool" and isinstance(content, str):
            texts.setdefault(turn, []).append(content)
        elif turn >= 0 and role == "user" and isinstance(content, str):
            texts.setdefault(turn, []).extend(_RESPONSE.findall(content))
    out: list[dict[str, Any]] = []
    for t in sorted(texts):
        for call, text in zip(calls_by_turn.get(t, []), texts[t], strict=False):
            if call.get("malformed"):
                continue
            out.append({"args": call.get("arguments") or {}, "text": text, "tool": call.get("name"),
                        "turn": t})
    return out


def _delivering_docid(tool: str, text: str, args: Mapping[str, Any], gold: str) -> str | None:
    if tool == "search":
        hits = list(_HIT.finditer(text))
        ends = [m.start() for m in hits[1:]] + [len(text)]
        for m, end in zip(hits, ends, strict=True):  # the hit whose block holds the answer
            if contains_answer(text[m.start():end], gold):
                return m.group(1)
        return None
    if tool == "open":
        if isinstance(args.get("docid"), str):
            return str(args["docid"])
        found = _DOCID.search(text)
        return found.group(1) if found else None
    return None


def _leaks(tool: str, text: str, gold: str) -> bool:
    if tool == "search":  # the hits only: the header echoes the query the model wrote
        first = _HIT.search(text)
        return first is not None and contains_answer(text[first.start():], gold)
    return contains_answer(text, gold)


def audit_episode(episode: Mapping[str, Any], gold: str, correct: bool | None = None) -> dict[str, Any]:
    """The audit of one episode against its gold answer (see the module doc)."""
    responses = tool_texts(episode)
    first_leak: dict[str, Any] | None = None
    first_corpus_leak = False
    first_search = next((r for r in responses if r["tool"] == "search"), None)
    for r in responses:
        if _leaks(r["tool"], r["text"], gold):
            if first_leak is None:
                first_leak = {"docid": _delivering_docid(r["tool"], r["text"], r["args"], gold),
                              "tool": r["tool"], "turn": r["turn"]}
            if r["tool"] in CORPUS_TOOLS:
                first_corpus_leak = True
                break
    answered = episode.get("status") == "answered" and episode.get("final_answer") is not None
    answer_turn = len(episode.get("turns") or []) - 1 if answered else None
    origin: str | None = None
    if correct:
        origin = "corpus" if first_corpus_leak else "computed" if first_leak is not None else "prior"
    return {
        "answer_turn": answer_turn,
        "answered_after_leak": (answer_turn > first_leak["turn"]) if (first_leak and answer_turn is not None)
        else None,
        "correct": correct,
        "final_answer_has_gold": contains_answer(str(episode.get("final_answer") or ""), gold),
        "first_leak": first_leak,
        "first_search_has_gold": first_search is not None and _leaks("search", first_search["text"], gold),
        "origin": origin,
        "tool_responses": len(responses),
    }


def audit_runs(runs: Sequence[Mapping[str, Mapping[str, Any]]], golds: Mapping[str, str | None],
               correct: Mapping[tuple[str, int], bool] | None = None) -> dict[str, Any]:
    """The ``leak_audit`` block: ``runs[a]`` is attempt ``a``'s episodes by question id,
    ``golds`` the gold answer of every question (None: nothing to look for), ``correct`` the
    grades by (question id, attempt).

    ``questions``: per question id, one audit per attempt that has an episode (with its
    ``attempt``); ``totals``: sums over those episodes; ``first_search_answerable``: the
    sorted question ids whose first search already held the answer in some attempt.
    """
    questions: dict[str, list[dict[str, Any]]] = {}
    totals: Counter[str] = Counter()
    by_tool: Counter[str] = Counter()
    origins: Counter[str] = Counter()
    no_gold: list[str] = []
    for qid in sorted(golds):
        gold = golds[qid]
        if not gold:
            no_gold.append(qid)
            continue
        for attempt, episodes in enumerate(runs):
            episode = episodes.get(qid)
            if episode is None:
                continue
            grade = None if correct is None else correct.get((qid, attempt))
            record = {"attempt": attempt, **audit_episode(episode, gold, grade)}
            questions.setdefault(qid, []).append(record)
            totals["episodes"] += 1
            leak = record["first_leak"]
            if leak is not None:
                totals["with_leak"] += 1
                by_tool[leak["tool"]] += 1
            totals["answered_after_leak"] += bool(record["answered_after_leak"])
            totals["first_search_has_gold"] += record["first_search_has_gold"]
            totals["final_answer_has_gold"] += record["final_answer_has_gold"]
            if record["origin"] is not None:
                origins[record["origin"]] += 1
    answerable = sorted(q for q, recs in questions.items() if any(r["first_search_has_gold"] for r in recs))
    keys = ("answered_after_leak", "episodes", "final_answer_has_gold", "first_search_has_gold", "with_leak")
    return {
        "first_search_answerable": answerable,
        "normalisation": NORMALISATION,
        "questions": questions,
        "questions_without_gold": no_gold,
        "totals": {**{k: totals[k] for k in keys},
                   "correct_by_origin": {k: origins[k] for k in ("computed", "corpus", "prior")},
                   "first_leak_by_tool": dict(sorted(by_tool.items()))},
    }


def render_leak_audit(audit: Mapping[str, Any]) -> str:
    """One paragraph for the score report."""
    t = audit["totals"]
    o = t["correct_by_origin"]
    return (f"leak audit: {t['with_leak']}/{t['episodes']} episodes read the gold answer in a tool response "
            f"({', '.join(f'{k} {v}' for k, v in t['first_leak_by_tool'].items()) or 'none'}); "
            f"{t['answered_after_leak']} answered after it\n"
            f"correct answers by origin: corpus {o['corpus']}, computed {o['computed']}, prior knowledge "
            f"{o['prior']}; first search already held it: {len(audit['first_search_answerable'])} "
            "question(s)")


__all__ = ["CORPUS_TOOLS", "NORMALISATION", "audit_episode", "audit_runs", "contains_answer",
           "normalise", "render_leak_audit", "tool_texts"]
