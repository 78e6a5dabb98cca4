"""A synthetic graded run of N questions (DR-256 rows, numeric labels) for the report's size and
speed checks: episodes shaped as `drsearch run` writes them (a search, an open, an answer; native
tool calls), graded by `drsearch score --judge numeric` (no endpoint). Deterministic in N."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from drsearch.tools.cli import main

from ...helpers import DATA


def _row(template: dict[str, Any], i: int, drbencher: bool) -> dict[str, Any]:
    row = json.loads(json.dumps(template))
    qid = f"q-synthetic-{i:05d}"
    question = f"How many widgets did factory {i} make in year {1900 + i % 100}?"
    row["label"] = str(i % 97)
    row["metadata"].update(qid=qid, question=question, difficulty=1 + i % 3)
    row["metadata"]["benchmark"].update(index=i, calibration_tier=("challenge", "frontier")[i % 2],
                                        selection_bucket=f"bucket-{i % 4}")
    row["prompt"][1]["content"] = f"Question: {question}\nAnswer:"
    if drbencher:  # DrBencher's row metadata: the CCI (entities E + properties P) and the domain
        e, p = 1 + i % 3, 1 + i % 2
        row["metadata"]["drbencher"] = {"cci": {"E": e, "P": p, "total": e + p}, "domain": ("geo", "bio")[i % 2],
                                       "entities": [{"aliases": [], "label": f"factory {i}", "qid": f"Q{i}"}],
                                       "template": f"t{e}{p}", "topic": f"topic {i % 5}"}
    return row


def _episode(i: int, answer: str) -> dict[str, Any]:
    hits = "\n\n".join(f"[{r}] docid: d-{i:05d}-{r}\ntitle: Widget report {i}.{r}\nurl: https://example.org/{i}/{r}\n"
                       f"text: factory {i} made {(i + r) % 97} widgets" for r in range(1, 4))
    search = {"k": 3, "query": f"factory {i} widgets"}
    calls = [{"arguments": search, "dialect": "native", "id": f"c{i}-0", "name": "search", "turn": 0},
             {"arguments": {"docid": f"d-{i:05d}-1"}, "dialect": "native", "id": f"c{i}-1", "name": "open", "turn": 1}]
    page = f"docid: d-{i:05d}-1\ntitle: Widget report {i}.1\nurl: https://example.org/{i}/1\ncharacters 0-40 of 40; " \
           f"end of document\n\nfactory {i} made {(i + 1) % 97} widgets"

    def assistant(call: dict[str, Any] | None, content: str | None) -> dict[str, Any]:
        tc = [] if call is None else [{"function": {"arguments": json.dumps(call["arguments"]), "name": call["name"]},
                                       "id": call["id"], "type": "function"}]
        return {"content": content, "role": "assistant", **({"tool_calls": tc} if tc else {})}

    messages = [{"content": "system", "role": "system"}, {"content": f"Question {i}", "role": "user"},
                assistant(calls[0], None), {"content": f"3 result(s)\n\n{hits}", "role": "tool", "tool_call_id": f"c{i}-0"},
                assistant(calls[1], None), {"content": page, "role": "tool", "tool_call_id": f"c{i}-1"},
                assistant(None, answer)]
    turns = [{"finish_reason": "tool_calls" if t < 2 else "stop", "message": messages[2 + 2 * t], "turn": t,
              "usage": {"completion_tokens": 20 + i % 50, "prompt_tokens": 500 + 10 * i % 3000}} for t in range(3)]
    return {"accounting": {"completion_tokens": 3 * (20 + i % 50), "llm_calls": 3, "malformed_tool_calls": 0,
                           "prompt_tokens": 3 * (500 + 10 * i % 3000), "reasoning_tokens": 0,
                           "tool_calls": {"open": 1, "search": 1}, "tool_errors": 0, "tool_response_bytes": 0},
            "final_answer": answer, "index": i, "messages": messages, "prompt_sha256": "0" * 64,
            "qid": f"q-synthetic-{i:05d}", "reason": None, "seed": i, "status": "answered", "tool_calls": calls,
            "turns": turns}


def synthetic_run(root: Path, n: int, *, drbencher: bool = False,
                  endings: dict[int, str] | None = None) -> tuple[Path, Path]:
    """``(run_dir, questions)``: ``n`` answered, graded episodes (about half correct); with
    ``drbencher``, the rows carry DrBencher's CCI and domain. ``endings`` ends question i
    otherwise: ``empty`` (answered, no answer), ``missing`` (no episode line) or a status
    (``budget``, ``turn_cap``, ``model_error``, ``infra_error``: no answer, a reason)."""
    template = json.loads((DATA / "sample/questions.jsonl").read_text().splitlines()[0])
    root.mkdir(parents=True, exist_ok=True)
    questions = root / "questions.jsonl"
    questions.write_text("".join(json.dumps(_row(template, i, drbencher), sort_keys=True) + "\n" for i in range(n)))
    run = root / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"model": "synthetic"}))
    episodes = [_episode(i, str((i + (i % 2)) % 97)) for i in range(n)]
    for i, ending in sorted((endings or {}).items()):
        if ending == "empty":
            episodes[i]["final_answer"] = ""
        elif ending != "missing":
            episodes[i].update(status=ending, final_answer=None, reason=f"ended: {ending}")
    episodes = [e for i, e in enumerate(episodes) if (endings or {}).get(i) != "missing"]
    (run / "trajectories.jsonl").write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in episodes))
    assert main(["score", str(run), "--questions", str(questions), "--judge", "numeric", "--quiet"]) == 0
    return run, questions


def _item(i: int) -> dict[str, Any]:
    kinds = ("must_mention", "must_mention", "must_ground", "must_acknowledge", "must_avoid")
    checklist = [{"text": f"point {i}-{k}", "type": t, "weight": 1 + k % 3} for k, t in enumerate(kinds)]
    task_id = f"src{i}#1"
    return {"checklist": checklist, "question": f"What is known about mechanism {i}?", "task_id": task_id,
            "track": "open", "metadata": {"qid": task_id, "openbiorq": {
                "taxonomy": ("oncology", "immunology", "neurology")[i % 3],
                "difficulty": {"bucket": ("core", "easy")[i % 2], "frozen_core": None}}}}


def openbiorq_run(root: Path, n: int, judge_url: str) -> Path:
    """A graded OpenBioRQ run of ``n`` items (OpenBioRQ export's metadata: taxonomy label and
    difficulty bucket), graded by the checklist judge at ``judge_url`` (the scripted oracle: a
    criterion is met when the answer quotes its text)."""
    root.mkdir(parents=True, exist_ok=True)
    items = [_item(i) for i in range(n)]
    questions = root / "items.jsonl"
    questions.write_text("".join(json.dumps(item, sort_keys=True) + "\n" for item in items))
    run = root / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"model": "synthetic"}))
    episodes = []
    for i, item in enumerate(items):
        met = item["checklist"][: 1 + i % 5]  # the first 1..5 criteria quoted
        episode = _episode(i, "; ".join(c["text"] for c in met))
        episode["qid"] = item["task_id"]
        episodes.append(episode)
    (run / "trajectories.jsonl").write_text("".join(json.dumps(e, sort_keys=True) + "\n" for e in episodes))
    assert main(["score", str(run), "--questions", str(questions), "--dataset", "openbiorq", "--judge-model",
                 "oracle", "--base-url", judge_url, "--quiet"]) == 0
    return run
