"""The rubric rules, one by one, and the acknowledge/avoid rule of ``read_openbiorq``."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from drsearch.benchmark import read_openbiorq
from drsearch.benchmark.datasets.openbiorq import rubric_sha256
from drsearch.benchmark.generate.openbiorq import VAGUE_PHRASES, rubric_problems
from drsearch.contract import InvalidInputError

GOOD = [{"text": "Names the ENRICH-AF trial", "type": "must_mention", "weight": 3},
        {"text": "States that recurrence at 90 days is not yet known", "type": "must_acknowledge", "weight": 2},
        {"text": "Cites a registry for its bleeding rate", "type": "must_ground", "weight": 1},
        {"text": "Names the 48-hour start window", "type": "must_mention", "weight": 1},
        {"text": "Claims that early anticoagulation is proven to prevent stroke", "type": "must_avoid", "weight": 2}]


def edited(edit: Any) -> list[dict[str, Any]]:
    rows = copy.deepcopy(GOOD)
    edit(rows)
    return rows


def test_a_good_rubric_has_no_problem() -> None:
    assert rubric_problems(GOOD) == []
    assert rubric_problems([*GOOD, {"text": "Names the comparator", "type": "must_mention", "weight": 1},
                            {"text": "Names the dose", "type": "must_mention", "weight": 1},
                            {"text": "Names the drug class", "type": "must_mention", "weight": 1}]) == []


@pytest.mark.parametrize(("edit", "problems"), [
    (lambda r: r.pop(4), ["4 criteria; write 5 to 8", "no must_avoid criterion"]),
    (lambda r: r[4].update(type="must_mention"), ["no must_avoid criterion"]),
    (lambda r: r[1].update(type="must_ground"), ["no must_acknowledge criterion"]),
    (lambda r: r.extend(copy.deepcopy(r[:4])), ["9 criteria; write 5 to 8", "criterion 6: same text as criterion 1",
                                                "criterion 7: same text as criterion 2",
                                                "criterion 8: same text as criterion 3",
                                                "criterion 9: same text as criterion 4"]),
    (lambda r: r[3].update(text="  names the ENRICH-AF   TRIAL "), ["criterion 4: same text as criterion 1"]),
    (lambda r: r[0].update(weight=0), ["criterion 1: weight 0 is not an integer 1 to 3"]),
    (lambda r: r[0].update(weight=4), ["criterion 1: weight 4 is not an integer 1 to 3"]),
    (lambda r: r[0].update(weight=2.0), ["criterion 1: weight 2.0 is not an integer 1 to 3"]),
    (lambda r: r[0].update(weight=True), ["criterion 1: weight True is not an integer 1 to 3"]),
    (lambda r: r[0].update(weight="2"), ["criterion 1: weight '2' is not an integer 1 to 3"]),
    (lambda r: r[2].update(type="must_praise"), ["criterion 3: type 'must_praise' is not one of must_mention, "
                                                 "must_acknowledge, must_ground, must_avoid"]),
    (lambda r: r[2].update(text=" "), ["criterion 3: empty text"]),
    (lambda r: r[0].update(text="Discusses the trials"), ["criterion 1: vague phrase 'discusses'"]),
    (lambda r: r[0].update(text="Gives a COMPREHENSIVE review in depth"),
     ["criterion 1: vague phrase 'comprehensive'", "criterion 1: vague phrase 'in depth'"]),
])
def test_each_broken_rule_is_named(edit: Any, problems: list[str]) -> None:
    assert rubric_problems(edited(edit)) == problems


def test_vague_phrases_are_whole_words_and_configurable() -> None:
    assert "discusses" in VAGUE_PHRASES
    assert rubric_problems(edited(lambda r: r[0].update(text="Names the indepth-study cohort"))) == []
    assert rubric_problems(edited(lambda r: r[0].update(text="Names the ENRICH-AF trial broadly")),
                           ("broadly",)) == ["criterion 1: vague phrase 'broadly'"]
    assert rubric_problems(edited(lambda r: r[0].update(text="Discusses X")), ()) == []


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


ITEM = {"task_id": "PMID:1#0", "question": "Does early anticoagulation lower recurrence?", "track": "clinical",
        "checklist": GOOD}


@pytest.mark.parametrize(("drop", "message"), [
    ("must_avoid", "checklist has no must_avoid criterion"),
    ("must_acknowledge", "checklist has no must_acknowledge criterion"),
])
def test_read_openbiorq_needs_acknowledge_and_avoid(tmp_path: Path, drop: str, message: str) -> None:
    row = copy.deepcopy(ITEM)
    for c in row["checklist"]:
        if c["type"] == drop:
            c["type"] = "must_mention"
    path = write(tmp_path / "b.jsonl", [ITEM, row])
    with pytest.raises(InvalidInputError, match=f"^{path}:2: row: {message}$"):
        read_openbiorq(path)


def test_read_openbiorq_refuses_a_checklist_edited_after_it_was_frozen(tmp_path: Path) -> None:
    frozen = {**ITEM, "rubric_sha256": rubric_sha256(GOOD)}
    (task,) = read_openbiorq(write(tmp_path / "ok.jsonl", [frozen]))
    assert task.checklist[0].text == "Names the ENRICH-AF trial"
    edited_row = copy.deepcopy(frozen)
    edited_row["checklist"][0]["weight"] = 2
    path = write(tmp_path / "edited.jsonl", [edited_row])
    with pytest.raises(InvalidInputError, match=rf"^{path}:1: row: checklist changed after it was frozen"):
        read_openbiorq(path)
    assert rubric_sha256(GOOD) == rubric_sha256(task.checklist)  # dicts and Criterion values hash alike
