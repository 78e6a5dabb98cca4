"""Trajectory leak audit: unit cases of the matcher and episode walk, and end to end through
`drsearch run` (fake model, sample corpus without its blocklist) and `drsearch score`."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drsearch.benchmark.leak_audit import audit_episode, audit_runs, contains_answer, normalise, tool_texts
from drsearch.dev.chat import serve_fake
from drsearch.dev.judge import serve_judge
from drsearch.tools.cli import main

from ..helpers import DATA

QUESTIONS = DATA / "sample/questions.jsonl"
QIDS = [json.loads(line)["metadata"]["qid"] for line in QUESTIONS.read_text().splitlines()]


@pytest.mark.parametrize("text,gold,found", [
    ("dealers sold 30154 vehicles", "30,154", True),
    ("dealers sold 30,154 vehicles", "30154", True),
    ("sold 30\u202f154 cars", "30,154", True),
    ("The Town Of  BRAUNAU\nam inn", "Braunau am Inn", True),
    ("ordered 300 jets", "30", False),
    ("a 30.5% rise", "30", False),
    ("rose 30%, then", "30", True),
    ("on April 26, 2016 the", "April 26, 2016", True),
    ("Sashas", "Sasha", False),
    ("anything", "", False),
])
def test_contains_answer(text: str, gold: str, found: bool) -> None:
    assert contains_answer(text, gold) is found


@given(st.integers(min_value=1000, max_value=10**12))
def test_thousands_separators_never_matter(n: int) -> None:
    assert contains_answer(f"there were {n:,} of them", str(n))
    assert contains_answer(f"there were {n} of them", f"{n:,}")
    assert normalise(f"{n:,}") == str(n)


def _episode(turns: list[tuple[str, list[tuple[str, dict[str, Any], str]]]], final: str | None) -> dict[str, Any]:
    """An episode record as the loop writes it: per turn, the tool calls and their responses."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "Question: q"}]
    calls: list[dict[str, Any]] = []
    for t, (dialect, tool_calls) in enumerate(turns):
        messages.append({"role": "assistant", "content": ""})
        for i, (name, args, _) in enumerate(tool_calls):
            calls.append({"arguments": args, "dialect": dialect, "id": f"c{t}-{i}", "malformed": False,
                          "name": name, "turn": t})
        if dialect == "native":
            messages += [{"role": "tool", "content": text, "tool_call_id": f"c{t}-{i}"}
                         for i, (_, _, text) in enumerate(tool_calls)]
        else:
            messages.append({"role": "user", "content": "\n".join(f"<tool_response>\n{text}\n</tool_response>"
                                                                  for _, _, text in tool_calls)})
    messages.append({"role": "assistant", "content": final or ""})
    return {"final_answer": final, "messages": messages, "status": "answered" if final is not None else "turn_cap",
            "tool_calls": calls, "turns": [{}] * (len(turns) + 1)}


SEARCH = ('2 result(s) for "how many jets 30"\n\n[1] docid: web-a\ntitle: A\nurl: u\ntext: nothing here\n\n'
          "[2] docid: web-b\ntitle: B\nurl: u\ntext: Emirates ordered 30 jets")


def test_the_first_leak_names_turn_tool_and_docid() -> None:
    ep = _episode([("native", [("search", {"query": "how many jets 30"}, SEARCH)])], "30")
    audit = audit_episode(ep, "30", correct=True)
    assert audit["first_leak"] == {"docid": "web-b", "tool": "search", "turn": 0}
    assert audit["first_search_has_gold"] and audit["answered_after_leak"] and audit["origin"] == "corpus"


def test_the_query_echo_is_not_a_leak_and_prior_knowledge_is_told_apart() -> None:
    header_only = '1 result(s) for "jets 30"\n\n[1] docid: web-a\ntitle: A\nurl: u\ntext: none'
    ep = _episode([("native", [("search", {"query": "jets 30"}, header_only)])], "30")
    audit = audit_episode(ep, "30", correct=True)
    assert audit["first_leak"] is None and not audit["first_search_has_gold"] and audit["origin"] == "prior"
    assert audit_episode(ep, "30", correct=False)["origin"] is None


def test_text_dialect_open_and_python_leaks() -> None:
    page = "docid: web-z\ntitle: Z\nurl: u\ncharacters 0-40 of 40; end of document\n\nthe town of Braunau am Inn"
    ep = _episode([("text", [("python", {"code": "print('Braunau am Inn')"}, "python: exit code 0\nBraunau am Inn\n"),
                             ("open", {"url": "u"}, page)])], "Braunau am Inn")
    assert [r["tool"] for r in tool_texts(ep)] == ["python", "open"]
    audit = audit_episode(ep, "Braunau am Inn", correct=True)
    assert audit["first_leak"] == {"docid": None, "tool": "python", "turn": 0}
    assert audit["origin"] == "corpus"  # the page held it too
    only_python = _episode([("native", [("python", {"code": "x"}, "python: exit code 0\n42\n")])], "42")
    assert audit_episode(only_python, "42", correct=True)["origin"] == "computed"


def test_malformed_calls_are_not_responses() -> None:
    ep = _episode([("native", [("search", {"query": "x"}, SEARCH)])], "30")
    ep["tool_calls"][0]["malformed"] = True
    assert tool_texts(ep) == [] and audit_episode(ep, "30", correct=True)["origin"] == "prior"


def test_audit_runs_sums_per_attempt() -> None:
    leak = _episode([("native", [("search", {"query": "q"}, SEARCH)])], "30")
    none = _episode([], "30")
    audit = audit_runs([{"q1": leak, "q2": none}, {"q1": none}], {"q1": "30", "q2": "30", "q3": None},
                       {("q1", 0): True, ("q2", 0): True, ("q1", 1): False})
    assert audit["totals"]["episodes"] == 3 and audit["totals"]["with_leak"] == 1
    assert audit["totals"]["correct_by_origin"] == {"computed": 0, "corpus": 1, "prior": 1}
    assert [r["attempt"] for r in audit["questions"]["q1"]] == [0, 1]
    assert audit["first_search_answerable"] == ["q1"] and audit["questions_without_gold"] == ["q3"]


SCRIPTS: dict[int, list[dict[str, Any]]] = {
    0: [{"call": [("search", {"query": "QUESTION", "k": 3})]}, {"content": "30"}],  # found by the first search
    1: [{"content": "28"}],  # answers at once: prior knowledge
    2: [{"call": [("search", {"query": "QUESTION", "k": 3})]}, {"content": "Tom"}],  # read it, answered wrong
    3: [{"call": [("search", {"query": "QUESTION", "k": 3})]},  # the first search misses it; the page has it
        {"call": [("open", {"docid": "d-043c589551fc53f2"})]}, {"content": "Martin Taylor"}],
}


def cli(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(list(argv), out=buf)
    return rc, buf.getvalue()


def test_leak_audit_end_to_end_in_scores_json(sample_index: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    with serve_fake(SCRIPTS) as fake:
        rc, text = cli("run", "--questions", str(QUESTIONS), "--database", str(sample_index), "--model", "m",
                       "--base-url", fake.url, "--out", str(run), "--quiet", "--ids", *QIDS[:4],
                       "--blocked-docids", str(DATA / "sample/blocked_docids.txt"))
    assert rc == 0, text
    with serve_judge([]) as judge:
        rc, table = cli("score", str(run), "--questions", str(QUESTIONS), "--judge-model", "j",
                        "--base-url", judge.url, "--backoff", "0")
    assert rc == 0, table
    audit = json.loads((run / "scores.json").read_text())["leak_audit"]
    q = {qid: recs[0] for qid, recs in audit["questions"].items()}
    assert q[QIDS[0]]["first_leak"] == {"docid": "d-52f3fe3674432ddf", "tool": "search", "turn": 0}
    assert q[QIDS[0]]["origin"] == "corpus" and q[QIDS[0]]["answered_after_leak"] is True
    assert q[QIDS[1]]["first_leak"] is None and q[QIDS[1]]["origin"] == "prior"
    assert q[QIDS[2]]["first_leak"]["tool"] == "search" and q[QIDS[2]]["correct"] is False
    assert q[QIDS[2]]["origin"] is None and not q[QIDS[2]]["final_answer_has_gold"]
    assert q[QIDS[3]]["first_leak"] == {"docid": "d-043c589551fc53f2", "tool": "open", "turn": 1}
    assert not q[QIDS[3]]["first_search_has_gold"] and q[QIDS[3]]["origin"] == "corpus"
    assert audit["first_search_answerable"] == sorted([QIDS[0], QIDS[2]])
    assert audit["totals"]["correct_by_origin"] == {"computed": 0, "corpus": 2, "prior": 1}
    assert audit["totals"]["first_leak_by_tool"] == {"open": 1, "search": 2}
    assert audit["totals"]["episodes"] == 4 and len(audit["questions"]) == 4
    assert "leak audit: 3/4 episodes read the gold answer" in table
