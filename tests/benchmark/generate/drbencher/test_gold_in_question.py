"""Validate rejects a composed question that states its own gold (``gold_in_question``): the
compose prompt hands the model the reference answer, and a plain reply (no structured-output
schema to stop it) can write it into the question, as a small model did ("…? 4778.7")."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from drsearch.dev.chat import Rule, serve_rules
from drsearch.dev.drbencher import MODEL, RULES, compose

from .kgserver import kg_serve
from .test_kg_stages import generate, rows, write_config

TEMPLATES = ["pendulum_drift", "population_density", "date_difference"]


def leaking_compose(body: dict[str, Any]) -> str:
    """The scripted compose reply with the reference answer appended, grouped in thousands
    (``1296.4`` → ``1,296.4``): a number the question states, in another format than the gold's."""
    prompt = "\n".join(str(m.get("content") or "") for m in body["messages"])
    gold = prompt.split("Reference answer (do not reveal): ", 1)[1].strip()
    number, _, unit = gold.partition(" ")
    written = f"{Decimal(number):,}" + (f" {unit}" if unit else "")
    question = json.loads(compose(body))["question"]
    return json.dumps({"question": f"{question} (It comes to {written}.)"})


LEAKING = [Rule(MODEL, "Write one question.", leaking_compose) if r.needles == ("Write one question.",) else r
           for r in RULES]


@pytest.fixture(scope="module")
def kg() -> Iterator[str]:
    with kg_serve() as url:
        yield url


def validate_run(tmp: Path, kg: str, rules: list[Rule]) -> tuple[dict[str, Any], Path]:
    tmp.mkdir()
    with serve_rules(rules) as llm:
        config = write_config(tmp, kg, templates=TEMPLATES,
                              generator={"base_url": llm.url, "model": MODEL, "seed": 7, "temperature": 0.0})
        rc, summary, err = generate(config, tmp / "gen", "--until", "validate")
    assert rc == 0, err
    assert summary is not None
    return summary, tmp / "gen"


def test_a_question_stating_its_gold_is_rejected_and_the_same_question_without_it_passes(
        kg: str, tmp_path: Path) -> None:
    clean, clean_out = validate_run(tmp_path / "clean", kg, RULES)
    leaking, leak_out = validate_run(tmp_path / "leak", kg, LEAKING)
    passed = {c["cid"]: c["question"] for c in rows(clean_out / "validated.jsonl")}
    assert "Q513:pendulum_drift" in passed and clean["counts"]["validate"]["out"] == len(passed) == 3
    # the parameters and the task's own numbers (R = 6,371,000 m, 9.81) are stated in every
    # clean question and pass; the gold, stated, is the first failure after the value checks
    assert "6,371,000" in passed["Q513:pendulum_drift"]
    counts = leaking["counts"]["validate"]
    assert (counts["in"], counts["out"], counts["rejected"]) == (7, 0, {"gold_in_question": 7})
    rejected = {c["key"]: c for c in rows(leak_out / "candidates.jsonl") if c["stage"] == "validate"}
    everest = rejected["Q513:pendulum_drift"]
    assert everest["check"] == "gold_in_question"
    assert everest["reason"] == ("the question states '120.00 s/day', which the numeric grader accepts for the "
                                 "gold 120.00 s/day")
    composed = {c["cid"]: c["question"] for c in rows(leak_out / "composed.jsonl")}
    for cid, question in passed.items():  # each is the clean question plus the stated gold
        assert re.fullmatch(re.escape(question) + r" \(It comes to [\d,.]+( [^)]+)?\.\)", composed[cid]), cid
