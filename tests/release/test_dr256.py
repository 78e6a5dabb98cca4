"""DR-256 question rows: schema, numbering and qid checks name the file and line."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from drsearch.release.dr256 import DR256_V1_1_0, load_questions, normalise_question, pinned_for, pins_named

from ..helpers import DATA

ROWS = [json.loads(line) for line in (DATA / "sample/questions.jsonl").read_text(encoding="utf-8").splitlines()]


def write(tmp_path: Path, rows: list[Any]) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def edited(index: int, edit: Any) -> list[Any]:
    rows = copy.deepcopy(ROWS)
    edit(rows[index])
    return rows


def test_sample_questions_are_valid() -> None:
    qs = load_questions(DATA / "sample/questions.jsonl")
    assert qs.problems == [] and len(qs.rows) == qs.lines == 12
    assert qs.tiers == {"challenge": 6, "frontier": 6} and set(qs.difficulties) == {"1", "2", "3"}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.pop("label"), ":4: label: Field required"),
        (lambda r: r.update(label=""), ":4: label: String should have at least 1 character"),
        (lambda r: r.update(label=42), ":4: label: Input should be a valid string"),
        (lambda r: r["metadata"].update(difficulty=4), ":4: metadata.difficulty: Input should be 1, 2 or 3"),
        (lambda r: r["metadata"]["benchmark"].update(calibration_tier="hard"),
         ":4: metadata.benchmark.calibration_tier: Input should be 'frontier' or 'challenge'"),
        (lambda r: r["metadata"]["benchmark"].update(index=-1), ":4: metadata.benchmark.index"),
        (lambda r: r["metadata"]["benchmark"].update(index="3"), ":4: metadata.benchmark.index"),
        (lambda r: r["metadata"]["benchmark"].pop("clean_provenance_answer_docids"),
         "clean_provenance_answer_docids: Field required"),
        (lambda r: r["metadata"].pop("teacher_correct"), "metadata.teacher_correct: Field required"),
        (lambda r: r["metadata"].pop("qid"), "metadata.qid: Field required"),
        (lambda r: r.update(prompt=[]), ":4: prompt: List should have at least 1 item"),
        (lambda r: r.update(prompt=[{"role": "assistant", "content": "x"}]), ":4: prompt.0.role"),
        (lambda r: r.update(prompt=[{"role": "system", "content": "x"}]), ":4: prompt: no user message"),
    ],
)
def test_schema_problems_name_line_and_field(tmp_path: Path, edit: Any, message: str) -> None:
    path = write(tmp_path, edited(3, edit))
    qs = load_questions(path)
    assert len(qs.problems) == 1 and message in qs.problems[0] and qs.problems[0].startswith(str(path))


def test_extra_keys_are_allowed(tmp_path: Path) -> None:
    rows = edited(0, lambda r: r.update(data_source="dr256", extra_info={"a": 1}))
    assert load_questions(write(tmp_path, rows)).problems == []


def test_invalid_json_line(tmp_path: Path) -> None:
    rows: list[Any] = [*ROWS[:2], "{not json", *ROWS[3:]]
    (problem,) = load_questions(write(tmp_path, rows)).problems
    assert ":3: not valid JSON" in problem


def test_indices_must_be_0_to_n_minus_1_and_unique(tmp_path: Path) -> None:
    rows = edited(5, lambda r: r["metadata"]["benchmark"].update(index=0))
    problems = load_questions(write(tmp_path, rows)).problems
    assert any("duplicate benchmark.index [0]" in p for p in problems)
    assert any("must be 0..11; missing [5]" in p for p in problems)


def test_qids_must_be_unique(tmp_path: Path) -> None:
    rows = edited(7, lambda r: r["metadata"].update(qid=ROWS[2]["metadata"]["qid"]))
    (problem,) = load_questions(write(tmp_path, rows)).problems
    assert f"duplicate qid ['{ROWS[2]['metadata']['qid']}']" in problem


def test_problem_list_is_capped(tmp_path: Path) -> None:
    assert len(load_questions(write(tmp_path, ["[]"] * 50)).problems) == 20


def test_pins_are_found_by_loose_name_and_revision() -> None:
    for name, rev in [("DR-256", "v1.1.0"), ("dr256", "1.1.0"), ("Dr_256", "V1.1.0")]:
        assert pinned_for(name, rev) is DR256_V1_1_0
    assert pinned_for("DR-256", "v1.0.0") is None and pins_named("dr-256") == [DR256_V1_1_0]
    assert DR256_V1_1_0.tiers == {"challenge": 128, "frontier": 128} and DR256_V1_1_0.questions == 256


def test_normalised_question() -> None:
    assert normalise_question("  What  IS\tthe ﬁle?\n") == "what is the file?"
