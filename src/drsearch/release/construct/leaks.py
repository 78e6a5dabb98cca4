"""The leak audit of every calibration rollout: what the reference agent was sent.

A calibration tier is only as good as its rollouts: a rollout that was *given* an answer
document's docid, or read a leak artifact, measured nothing. For each rollout episode of
each kept question this reads every byte the model was sent (the episode's ``messages``:
the frozen prompt, any harness message, every tool response) and checks three things:

- ``answer_docid_supplied``: a message the harness wrote (the prompt, or any user/system
  text outside ``<tool_response>`` blocks) names one of the pool's independent answer
  docids. Those are construction metadata, never shown to an agent; the question is
  **excluded** with this reason code (its rollouts were handed a pointer to the answer).
- ``answer_from_artifact``: the first tool response holding the question's answer came
  from an artifact candidate (``POOL/artifacts/artifact_candidates.jsonl``) that the
  reviewed blocklist left unblocked. The question is **excluded** with this reason code:
  the reviewer's decision stands for the corpus, but this question's tier was measured
  through a dump, not research.
- a blocked docid in a tool response: the rollout was served without the audit's
  blocklist (the run's recorded ``blocklist_sha256`` notwithstanding), so none of the
  calibration can be trusted: **exit 2** naming the run, question and docid, before
  anything is written. The fix is rerunning the rollouts against the right server.

Search results naming an answer docid are not leaks: that is the agent finding the
document by searching, as it should. ``leak_audit.jsonl`` has one line per kept question
with every rollout's findings (and the trajectory audit's first leak,
:func:`drsearch.benchmark.leak_audit.audit_episode`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ...benchmark.leak_audit import audit_episode, tool_texts
from ...contract import InvalidInputError

LEAK_CODES = ("answer_docid_supplied", "answer_from_artifact")
_SHOWN = re.compile(r"(?:^|\s)docid: (\S+)", re.M)
_RESPONSE = re.compile(r"<tool_response>.*?</tool_response>", re.S)


def supplied_text(episode: Mapping[str, Any]) -> str:
    """Everything the harness (not a tool, not the model) sent: system and user messages,
    with text-tag tool responses cut out."""
    parts = []
    for m in episode.get("messages") or []:
        content = m.get("content")
        if m.get("role") in ("system", "user") and isinstance(content, str):
            parts.append(_RESPONSE.sub("", content))
    return "\n".join(parts)


def shown_docids(episode: Mapping[str, Any]) -> list[str]:
    """Every docid a tool response showed the model, sorted."""
    return sorted({d for r in tool_texts(episode) for d in _SHOWN.findall(r["text"])})


def audit_rollout(episode: Mapping[str, Any], gold: str, answer_docids: Iterable[str],
                  artifacts: set[str]) -> dict[str, Any]:
    """One rollout episode's findings (see the module doc); blocked docids are checked by
    :func:`leak_audit`, which knows the run."""
    supplied = supplied_text(episode)
    first = audit_episode(episode, gold)["first_leak"]
    via_artifact = first["docid"] if first is not None and first.get("docid") in artifacts else None
    return {"answer_from_artifact": via_artifact, "first_leak": first, "shown_docids": shown_docids(episode),
            "supplied_answer_docids": sorted(d for d in set(answer_docids) if d in supplied),
            "tool_responses": len(tool_texts(episode))}


def leak_audit(kept: Sequence[str], runs: Sequence[Any], golds: Mapping[str, str],
               answer_docids: Iterable[str], blocked: set[str], artifacts: set[str]) -> list[dict[str, Any]]:
    """One line per kept question: ``{qid, code, reason, rollouts: [...]}`` (``code`` one of
    :data:`LEAK_CODES` or None). ``runs``: the three rollouts in attempt order; ``artifacts``:
    the artifact candidates not blocked. InvalidInputError (exit 2) when a tool response
    showed a blocked docid."""
    every_answer_doc = sorted(set(answer_docids))
    lines = []
    for qid in kept:
        rollouts = []
        code = reason = None
        for attempt, run in enumerate(runs):
            episode = run.episodes.get(qid)
            if episode is None:
                rollouts.append({"attempt": attempt, "episode": None})
                continue
            found = audit_rollout(episode, golds[qid], every_answer_doc, artifacts)
            shown_blocked = [d for d in found["shown_docids"] if d in blocked]
            if shown_blocked:
                raise InvalidInputError(f"{run.path}: {qid}'s episode was shown blocked docid "
                                        f"{shown_blocked[0]}: the rollouts were not served with the audit's "
                                        "blocklist; rerun them "
                                        "against `drsearch serve --blocked-docids` of the audited list")
            rollouts.append({"attempt": attempt, **{k: v for k, v in found.items() if k != "shown_docids"}})
            if code is None and found["supplied_answer_docids"]:
                first = found["supplied_answer_docids"][0]
                code, reason = LEAK_CODES[0], (f"rollout {attempt} was sent answer docid {first} outside a "
                                               "tool response")
            elif code is None and found["answer_from_artifact"] is not None:
                artifact = found["answer_from_artifact"]
                code, reason = LEAK_CODES[1], (f"rollout {attempt} read the answer first in unblocked "
                                               f"artifact candidate {artifact}")
        lines.append({"code": code, "qid": qid, "reason": reason, "rollouts": rollouts})
    return lines


__all__ = ["LEAK_CODES", "audit_rollout", "leak_audit", "shown_docids", "supplied_text"]
