"""`drsearch score --judge numeric`: no endpoint, verdicts with version and tolerance; bad options."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from drsearch.tools.cli import main

from ..helpers import DATA
from .test_cli_score import episode_record, write_run

QUESTIONS = DATA / "sample/questions.jsonl"
ROWS = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]


def test_numeric_scoring_of_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answers = {0: "30", 1: "about 28.5", 6: "30154", 8: "It is 65 percent, up from 60", 11: "Final answer: 14.3"}
    run = write_run(tmp_path / "run", [episode_record(ROWS[i]["metadata"]["qid"], i, "answered", a)
                                       for i, a in answers.items()])
    assert main(["score", str(run), "--questions", str(QUESTIONS), "--judge", "numeric"]) == 0
    graded = {g["index"]: g for g in map(json.loads, (run / "scores.graded.jsonl").read_text().splitlines())}
    assert {i: graded[i]["outcome"] for i in answers} == {0: "correct", 1: "correct", 6: "correct",
                                                         8: "incorrect", 11: "incorrect"}  # 14.3: 2.1 % off
    assert graded[8]["reason"] == "answer: several numbers (2)"
    assert all(graded[i]["judge"]["tolerance"] == 0.02 and graded[i]["judge"]["version"] == "numeric-v2"
               for i in answers)
    scores = json.loads((run / "scores.json").read_text())
    assert scores["accuracy"]["count"] == 3 and scores["grading"]["prompt"] == "numeric-v2"
    # a wider tolerance is another grading, recorded as such
    out = tmp_path / "wide.json"
    assert main(["score", str(run), "--questions", str(QUESTIONS), "--judge", "numeric", "--tolerance", "0.05",
                 "--out", str(out)]) == 0
    wide = json.loads(out.read_text())
    assert wide["accuracy"]["count"] == 4 and wide["grading"]["numeric"]["tolerance"] == 0.05
    assert wide["grading"]["prompt_sha256"] != scores["grading"]["prompt_sha256"]

    capsys.readouterr()
    for extra, message in [(["--judge-model", "m"], "takes no --judge-model"),
                           (["--dataset", "openbiorq"], "not checklists")]:
        bad = tmp_path / "bad.json"
        rc = main(["score", str(run), "--questions", str(QUESTIONS), "--judge", "numeric", "--out", str(bad),
                   *extra])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and not bad.exists() and len(err) == 1 and message in err[0], err


def test_the_numeric_path_reports_behaviour_and_the_leak_audit_as_the_llm_path_does(tmp_path: Path) -> None:
    """``behaviour`` (zero-tool, cite, non-attempt, wrong-paper rates) and ``leak_audit`` are in
    scores.json whatever the judge: the same run graded numerically and by an LLM judge reports
    the same blocks."""
    from drsearch.dev.judge import serve_judge

    episodes = [episode_record(ROWS[0]["metadata"]["qid"], 0, "answered", "30"),
                episode_record(ROWS[1]["metadata"]["qid"], 1, "answered", "about 28.5", tool_calls=0),
                episode_record(ROWS[6]["metadata"]["qid"], 6, "answered", "30154 (PMID: 12345)"),
                episode_record(ROWS[8]["metadata"]["qid"], 8, "answered", ""),
                episode_record(ROWS[9]["metadata"]["qid"], 9, "turn_cap", None)]
    run = write_run(tmp_path / "run", episodes)
    numeric, llm = tmp_path / "numeric.json", tmp_path / "llm.json"
    assert main(["score", str(run), "--questions", str(QUESTIONS), "--judge", "numeric", "--out", str(numeric)]) == 0
    scores = json.loads(numeric.read_text())
    b = scores["behaviour"]
    assert (b["non_attempt"]["count"], b["non_attempt"]["n"]) == (9, 12)  # empty, turn cap, 7 without an episode
    assert (b["zero_tool"]["count"], b["zero_tool"]["n"]) == (1, 3)
    assert (b["cite"]["count"], b["cite"]["n"]) == (1, 3)
    assert set(b["source_not_cited"]) == {"pmid", "nct", "arxiv"}
    assert scores["leak_audit"]["totals"]["episodes"] == 5
    with serve_judge() as judge:
        assert main(["score", str(run), "--questions", str(QUESTIONS), "--judge-model", "j", "--base-url", judge.url,
                     "--judge-cache-mode", "off", "--out", str(llm), "--quiet"]) == 0
    graded_by_llm = json.loads(llm.read_text())
    assert graded_by_llm["behaviour"] == scores["behaviour"]
    assert graded_by_llm["leak_audit"]["totals"]["episodes"] == 5


def _with_domains(path: Path, domains: dict[int, str], labels: dict[int, str]) -> Path:
    """The sample questions as DrBencher rows: ``metadata.category`` = the domain, new labels."""
    rows = []
    for row in ROWS:
        i = row["metadata"]["benchmark"]["index"]
        row = json.loads(json.dumps(row))
        if i in domains:
            row["metadata"]["category"] = domains[i]
            row["label"] = labels[i]
        rows.append(row)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_domain_reaches_grading_history_is_exact_and_accuracy_is_broken_down_by_it(
        tmp_path: Path) -> None:
    """18500 days against 18842 is 1.8 % off: right at 2 % in another domain, wrong in history
    (the DrBencher paper: "2% relative, exact match for history")."""
    domains = {0: "history", 1: "financial", 2: "history"}
    labels = {0: "18842 days", 1: "18842 days", 2: "18842 days"}
    questions = _with_domains(tmp_path / "q.jsonl", domains, labels)
    answers = {0: "18500 days", 1: "18500 days", 2: "18,842 days"}
    run = write_run(tmp_path / "run", [episode_record(ROWS[i]["metadata"]["qid"], i, "answered", a)
                                       for i, a in answers.items()])
    table = tmp_path / "table.txt"
    with table.open("w") as out:
        assert main(["score", str(run), "--questions", str(questions), "--judge", "numeric"], out=out) == 0
    graded = {g["index"]: g for g in map(json.loads, (run / "scores.graded.jsonl").read_text().splitlines())}
    assert {i: graded[i]["outcome"] for i in answers} == {0: "incorrect", 1: "correct", 2: "correct"}
    assert graded[0]["reason"] == "differs (exact match)" and graded[0]["category"] == "history"
    assert graded[0]["judge"]["verdict"]["exact"] is True and graded[1]["judge"]["verdict"]["exact"] is False
    by_domain = json.loads((run / "scores.json").read_text())["breakdowns"]["category"]
    assert {k: (v["n"], v["correct"]) for k, v in by_domain.items()} == {
        "(unknown)": (len(ROWS) - 3, 0), "financial": (1, 1), "history": (2, 1)}
    printed = table.read_text()
    assert "category" in printed and "history" in printed and "financial" in printed


def test_the_history_template_carries_no_tolerance() -> None:
    from drsearch.benchmark.generate.drbencher.templates import TEMPLATES

    history = [t for t in TEMPLATES.values() if "history" in t.domains]
    assert history and all(t.tolerance == "0" for t in history)
    assert all(t.tolerance == "0.02" for t in TEMPLATES.values() if "history" not in t.domains)


def test_an_ambiguous_separator_that_decides_a_verdict_is_reported(tmp_path: Path) -> None:
    """1.234 against 1234 is read as 1.234 (English) and graded wrong; `score` says the other
    reading would be right -- on stderr and in scores.json -- instead of deciding silently."""
    labels = {0: "1234", 1: "2962 m", 2: "1234567"}
    questions = _with_domains(tmp_path / "q.jsonl", dict.fromkeys(labels, "financial"), labels)
    answers = {0: "1.234", 1: "2,962 m", 2: "1.234.567"}
    run = write_run(tmp_path / "run", [episode_record(ROWS[i]["metadata"]["qid"], i, "answered", a)
                                       for i, a in answers.items()])
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["score", str(run), "--questions", str(questions), "--judge", "numeric"],
                    out=io.StringIO()) == 0
    graded = {g["index"]: g for g in map(json.loads, (run / "scores.graded.jsonl").read_text().splitlines())}
    assert {i: graded[i]["outcome"] for i in answers} == {0: "incorrect", 1: "correct", 2: "correct"}
    assert "read as 1234 it would be correct" in graded[0]["reason"]
    ambiguous = json.loads((run / "scores.json").read_text())["numeric_ambiguous"]
    assert ambiguous == {"count": 2, "correct_as_read": 1, "incorrect_as_read": 1,
                         "questions": sorted(f"{ROWS[i]['metadata']['qid']}#0" for i in (0, 1))}
    assert "2 numeric answer(s) hold an ambiguous separator" in err.getvalue()


def test_answers_that_are_not_numbers_are_counted_and_warned(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """A run of prose answers graded numerically: each is incorrect, and the grader says why
    (stderr, scores.json numeric_unparsed) instead of a silent 0 %."""
    answers = {0: "30", 1: "the Stadia launch", 6: "between 10 and 20", 8: "It is 65 percent, up from 60"}
    run = write_run(tmp_path / "run", [episode_record(ROWS[i]["metadata"]["qid"], i, "answered", a)
                                       for i, a in answers.items()])
    capsys.readouterr()
    assert main(["score", str(run), "--questions", str(QUESTIONS), "--judge", "numeric"]) == 0
    err = capsys.readouterr().err
    assert "3 of 4 answer(s) are not one number" in err and "--judge-model" in err, err
    scores = json.loads((run / "scores.json").read_text())
    assert scores["numeric_unparsed"] == {"answers": 4, "count": 3, "by_error": {
        "a range": 1, "no number": 1, "several numbers (2)": 1}}
    # every answer a number: no warning, no field
    run2 = write_run(tmp_path / "run2", [episode_record(ROWS[0]["metadata"]["qid"], 0, "answered", "30")])
    assert main(["score", str(run2), "--questions", str(QUESTIONS), "--judge", "numeric"]) == 0
    assert "not one number" not in capsys.readouterr().err
    assert "numeric_unparsed" not in json.loads((run2 / "scores.json").read_text())


def test_json_prints_the_scores_object_with_the_numeric_judge_too(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [episode_record(ROWS[0]["metadata"]["qid"], 0, "answered", "30")])
    buf = io.StringIO()
    assert main(["score", str(run), "--questions", str(QUESTIONS), "--judge", "numeric", "--json"], buf) == 0
    printed = json.loads(buf.getvalue())  # one JSON object, as with the LLM judge, not the table
    assert printed == json.loads((run / "scores.json").read_text())
    assert printed["grading"]["judge_model"] == "numeric" and printed["accuracy"]["count"] == 1
