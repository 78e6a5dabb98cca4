"""Read graded run directories into the rows a report shows (``drsearch report``).

A run for the report is a run directory of ``drsearch run`` that ``drsearch score`` has graded:
``run.json``, ``trajectories.jsonl``, ``scores.json`` and ``scores.graded.jsonl``. Everything
shown comes from those files and the questions file the scores name (or ``questions=``): the
trajectories hold only what the agent was sent, so a document the server blocked can never
appear. Nothing here reads a clock: the same files give the same rows.

Errors are :class:`InvalidInputError` with one line: not a run directory, a run that was never
scored, a questions file that is not the one graded, or runs of different question sets.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...agents.canonical import sha256_hex
from ...contract import InvalidInputError
from ...contract.jsonfile import read_json_object
from ..datasets import DATASET_KINDS, DatasetKind, load_tasks
from ..grade import read_graded, read_run
from ..records import GradedQuestion

_HIT = re.compile(r"^\[\d+\] docid: (\S+)\ntitle: ([^\n]*)\nurl: ([^\n]*)", re.M)
_PAGE = re.compile(r"\Adocid: (\S+)\ntitle: ([^\n]*)\nurl: ([^\n]*)")
_RESPONSE = re.compile(r"<tool_response>\n(.*?)\n</tool_response>", re.S)
TEXT_CAP = 2000
"""Characters of an assistant message or of a document-less tool response kept in the report."""

STATUS_LABELS = ("answered", "empty", "turn cap", "budget", "model error", "infrastructure", "no episode",
                 "not run")
NOT_RUN = "not run"
"""A question ``drsearch run --max-cost`` never started: no answer, outside every denominator
(as scores.json counts it)."""
"""The status column's values, in the order the summary counts them."""


@dataclass
class Run:
    """One graded run as the report sees it."""

    label: str
    path: Path
    manifest: dict[str, Any]
    scores: dict[str, Any]
    episodes: list[dict[str, Any]]
    """One row per graded question (attempt 0), in benchmark order (see :func:`episode_row`)."""
    calls: list[dict[str, Any]]
    """One row per tool call of every episode."""
    trajectories: dict[str, list[dict[str, Any]]]
    """Per question id: the turns, each with its text and tool calls (documents returned)."""
    graded: list[GradedQuestion] = field(default_factory=list)
    cost: float | None = None
    warnings: list[str] = field(default_factory=list)


def _cap(text: str, limit: int = TEXT_CAP) -> str:
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more characters]"


def _cost(value: Any) -> float | None:
    """A cost given as a number, or an object with ``total`` / ``total_usd`` / ``usd``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        for key in ("total", "total_usd", "usd"):
            if isinstance(value.get(key), int | float) and not isinstance(value.get(key), bool):
                return float(value[key])
    return None


def status_label(graded: GradedQuestion) -> str:
    """The status column: how the episode ended, ``empty`` for a finished one without an answer."""
    status = graded.episode_status
    if graded.outcome == "not_run":
        return NOT_RUN
    if graded.outcome == "empty_answer":
        return "empty"
    return {"answered": "answered", "turn_cap": "turn cap", "budget": "budget", "model_error": "model error",
            "error": "model error", "infra_error": "infrastructure",
            "missing": "no episode", "not_run": NOT_RUN}.get(status, status)


def documents(tool: str, text: str) -> list[dict[str, str]]:
    """The documents a tool response showed the agent: ``{docid, title, url}`` per search hit, or
    the opened page's; none for other tools or an error."""
    if tool == "search":
        return [{"docid": m.group(1), "title": m.group(2), "url": m.group(3)} for m in _HIT.finditer(text)]
    if tool == "open" and (m := _PAGE.match(text)):
        return [{"docid": m.group(1), "title": m.group(2), "url": m.group(3)}]
    return []


def _responses(messages: list[dict[str, Any]]) -> dict[int, list[str]]:
    """Tool responses by assistant turn: ``tool`` messages (native calls) or the ``<tool_response>``
    blocks of the ``user`` message that follows a text-tag turn."""
    turn, out = -1, {}  # type: int, dict[int, list[str]]
    for m in messages:
        role, content = m.get("role"), m.get("content")
        if role == "assistant":
            turn += 1
        elif turn >= 0 and role == "tool" and isinstance(content, str):
            out.setdefault(turn, []).append(content)
        elif turn >= 0 and role == "user" and isinstance(content, str):
            out.setdefault(turn, []).extend(_RESPONSE.findall(content))
    return out


def trajectory(episode: dict[str, Any]) -> list[dict[str, Any]]:
    """The turns of an episode: ``{turn, text, calls: [{name, arguments, malformed, documents, text}]}``.

    ``text`` of a call is kept only when it returned no document (an error, a python output)."""
    texts = _responses(episode.get("messages") or [])
    by_turn: dict[int, list[dict[str, Any]]] = {}
    for call in episode.get("tool_calls") or []:
        by_turn.setdefault(int(call.get("turn", -1)), []).append(call)
    turns = []
    for t, turn in enumerate(episode.get("turns") or []):
        message = turn.get("message") or {}
        content = message.get("content")
        calls = []
        answers = texts.get(t, [])
        for i, call in enumerate(by_turn.get(t, [])):
            name = str(call.get("name"))
            text = answers[i] if i < len(answers) else ""
            docs = [] if call.get("malformed") else documents(name, text)
            calls.append({"arguments": call.get("arguments"), "documents": docs,
                          "malformed": bool(call.get("malformed")), "name": name,
                          "text": "" if docs else _cap(text, 600)})
        turns.append({"calls": calls, "text": _cap(content) if isinstance(content, str) else "", "turn": t})
    return turns


def _obj(row: dict[str, Any], *keys: str) -> dict[str, Any]:
    """``row[k1][k2]…`` when every step is an object, else ``{}``."""
    value: Any = row
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def _facets(row: dict[str, Any]) -> dict[str, Any]:
    """What a question row carries to group by: tier, domain, bucket, difficulty, CCI (E, P)."""
    bench, drb = _obj(row, "metadata", "benchmark"), _obj(row, "metadata", "drbencher")
    obrq, cci = _obj(row, "metadata", "openbiorq"), _obj(row, "metadata", "drbencher", "cci")
    difficulty = _obj(row, "metadata", "openbiorq", "difficulty")
    domain = obrq.get("taxonomy") or drb.get("domain") or row.get("category") or row.get("track")
    bucket = bench.get("selection_bucket") or difficulty.get("bucket") or row.get("bucket")
    return {"bucket": bucket, "cci": cci.get("total"), "cci_E": cci.get("E"), "cci_P": cci.get("P"),
            "domain": domain, "tier": bench.get("calibration_tier") or row.get("tier")}


def _row_id(row: dict[str, Any]) -> str | None:
    meta = _obj(row, "metadata")
    for value in (meta.get("qid"), row.get("task_id"), row.get("qid"), row.get("id")):
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
    return None


@dataclass
class Questions:
    """The questions file as the report uses it: text, gold and facets by question id."""

    path: Path | None
    text: dict[str, str] = field(default_factory=dict)
    gold: dict[str, str] = field(default_factory=dict)
    facets: dict[str, dict[str, Any]] = field(default_factory=dict)


def read_questions(path: Path | None, dataset: str, sha256: str | None) -> Questions:
    """The questions graded (``path``); its SHA-256 must be the one the scores recorded."""
    if path is None:
        return Questions(None)
    if not path.is_file():
        raise InvalidInputError(f"--questions {path}: no such file")
    data = path.read_bytes()
    if sha256 and sha256_hex(data) != sha256:
        raise InvalidInputError(f"--questions {path}: not the questions file the run was graded "
                                f"against (SHA-256 {sha256_hex(data)[:12]}…, scores.json says "
                                f"{sha256[:12]}…)")
    kind: DatasetKind = next((k for k in DATASET_KINDS if k == dataset), "dr256")
    tasks = load_tasks(kind, path)
    q = Questions(path)
    for task in tasks:
        q.text[task.question_id] = task.question
        if task.reference is not None:
            q.gold[task.question_id] = task.reference
    for line in data.decode("utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if isinstance(row, dict) and (qid := _row_id(row)) is not None:
                q.facets[qid] = _facets(row)
    return q


def _leaks(scores: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The leak audit's first leak (turn, tool, docid) of each question's attempt 0."""
    out = {}
    for qid, records in ((scores.get("leak_audit") or {}).get("questions") or {}).items():
        for record in records:
            if record.get("attempt") == 0 and record.get("first_leak"):
                out[qid] = record["first_leak"]
    return out


def _reason(g: GradedQuestion) -> str:
    verdict = (g.judge or {}).get("verdict")
    reasoning = verdict.get("reasoning") if isinstance(verdict, dict) else None
    parts = [p for p in (g.reason, reasoning if isinstance(reasoning, str) else None) if p]
    return " — ".join(parts)


def episode_row(run: str, g: GradedQuestion, q: Questions, leak: dict[str, Any] | None,
                episode: dict[str, Any] | None) -> dict[str, Any]:
    """One row of the episodes table (the CSV/Parquet columns, in order)."""
    f = q.facets.get(g.question_id, {})
    acc = (episode or {}).get("accounting") or {}
    return {
        "run": run, "qid": g.question_id, "index": g.index, "question": q.text.get(g.question_id, ""),
        "status": status_label(g), "episode_status": g.episode_status, "outcome": g.outcome,
        "correct": g.correct, "score": g.score, "final_answer": g.final_answer or "",
        "gold": q.gold.get(g.question_id, ""), "tier": f.get("tier") or g.tier or "",
        "domain": f.get("domain") or g.category or "", "bucket": f.get("bucket") or "",
        "difficulty": g.difficulty or "", "cci": f.get("cci"), "cci_E": f.get("cci_E"),
        "cci_P": f.get("cci_P"),
        "tool_calls": g.tool_calls, "malformed_tool_calls": int(acc.get("malformed_tool_calls") or 0),
        "prompt_tokens": g.prompt_tokens, "completion_tokens": g.completion_tokens,
        "total_tokens": g.prompt_tokens + g.completion_tokens,
        "turns": len((episode or {}).get("turns") or []), "wall_s": g.wall_s,
        "cost": _cost((episode or {}).get("cost")),
        "leak_turn": None if leak is None else leak.get("turn"),
        "leak_tool": None if leak is None else leak.get("tool"),
        "leak_docid": None if leak is None else leak.get("docid"),
        "judge_reason": _reason(g),
    }


def call_rows(run: str, qid: str, turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per tool call of an episode (the tool-calls CSV/Parquet columns, in order)."""
    rows, n = [], 0
    for turn in turns:
        for call in turn["calls"]:
            rows.append({"run": run, "qid": qid, "turn": turn["turn"], "call": n, "tool": call["name"],
                         "arguments": json.dumps(call["arguments"], sort_keys=True, ensure_ascii=False),
                         "malformed": call["malformed"], "n_documents": len(call["documents"]),
                         "docids": " ".join(d["docid"] for d in call["documents"])})
            n += 1
    return rows


def _scores(root: Path) -> dict[str, Any]:
    scores = root / "scores.json"
    if not scores.is_file() or not (root / "scores.graded.jsonl").is_file():
        raise InvalidInputError(f"{root}: run not scored (no scores.json / scores.graded.jsonl): "
                                f"run `drsearch score {root} --questions FILE ...` first")
    return read_json_object(scores)


def _questions_path(root: Path, scores: dict[str, Any], given: Path | None) -> Path | None:
    if given is not None:
        return given
    named = (scores.get("grading") or {}).get("questions")
    if not isinstance(named, str):
        return None
    for candidate in (Path(named), root / named):
        if candidate.is_file():
            return candidate
    return None


def read_run_for_report(root: Path, label: str, questions: Path | None = None) -> Run:
    """One graded run directory (InvalidInputError: not a run, not scored, wrong questions)."""
    if not root.is_dir() or not (root / "run.json").is_file():
        raise InvalidInputError(f"{root}: not a run directory (no run.json)")
    episodes = read_run(root)
    scores = _scores(root)
    graded = [g for g in read_graded(root / "scores.graded.jsonl") if g.attempt == 0]
    grading = scores.get("grading") or {}
    path = _questions_path(root, scores, questions)
    q = read_questions(path, str(grading.get("dataset") or "dr256"), grading.get("questions_sha256"))
    warnings = [] if path is not None else [
        f"{root}: the questions file scores.json names ({grading.get('questions')}) is not there: no gold "
        "answers, question text or groups beyond the graded tier and difficulty; give --questions FILE"]
    leaks = _leaks(scores)
    rows, calls, trajectories = [], [], {}
    for g in sorted(graded, key=lambda g: (g.index, g.question_id)):
        episode = episodes.episodes.get(g.question_id)
        turns = trajectory(episode) if episode is not None else []
        trajectories[g.question_id] = turns
        rows.append(episode_row(label, g, q, leaks.get(g.question_id), episode))
        calls += call_rows(label, g.question_id, turns)
    summary = read_json_object(root / "summary.json") if (root / "summary.json").is_file() else {}
    cost = next((c for c in (_cost(d.get("cost")) for d in (episodes.manifest, summary, scores))
                 if c is not None), None)
    return Run(label, root, episodes.manifest, scores, rows, calls, trajectories, graded, cost, warnings)


def labels(paths: list[Path]) -> list[str]:
    """Short unique names for runs: the directory's name, with its parents' where two clash."""
    parts = [p.resolve().parts for p in paths]
    depth = 1
    while True:
        names = ["/".join(p[-depth:]) for p in parts]
        if len(set(names)) == len(names) or depth > max(len(p) for p in parts):
            return names
        depth += 1


def read_runs(paths: list[Path], questions: Path | None = None) -> list[Run]:
    """Every run, checked to answer one question set (InvalidInputError otherwise)."""
    if len({p.resolve() for p in paths}) != len(paths):
        raise InvalidInputError("the same run given twice")
    runs = [read_run_for_report(p, name, questions) for p, name in zip(paths, labels(paths), strict=True)]
    first = {r["qid"] for r in runs[0].episodes}
    for run in runs[1:]:
        ids = {r["qid"] for r in run.episodes}
        if ids != first:
            raise InvalidInputError(f"{runs[0].path} and {run.path} graded different question sets "
                                    f"({len(first - ids)} only in the first, {len(ids - first)} only in the "
                                    "second): a comparison needs the same questions")
    return runs


__all__ = ["NOT_RUN", "STATUS_LABELS", "Questions", "Run", "call_rows", "documents", "episode_row", "labels",
           "read_questions", "read_run_for_report", "read_runs", "status_label", "trajectory"]
