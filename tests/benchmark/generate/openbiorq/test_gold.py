"""The gold-answer slice: the optional gold stage (reference answers as rubric-drafting context,
recorded, never a filter) against the rule-based models, and the gold-citation audit through the
CLI against the tests' record service and the scripted judge (drsearch.dev.judge)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drsearch.dev.chat import serve_rules
from drsearch.dev.judge import serve_judge

from ...record_server import serve_records
from .conftest import generate, jsonl
from .rules import RULES

pytest.importorskip("onnxruntime")


def prompts(requests: list[dict[str, Any]], task: str) -> list[str]:
    return [str(b["messages"][-1]["content"]) for b in requests if task in str(b["messages"][-1]["content"])]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("gold")
    with serve_rules(RULES) as r:
        rc, off, err = generate("rubric", tmp / "off", base_url=r.url)
        assert rc == 0, err
        off_prompts = prompts(r.requests, "Task: write a checklist rubric.")
        r.requests.clear()
        rc, on, err = generate("rubric", tmp / "on", "--gold-model", "gold", base_url=r.url)
        assert rc == 0, err
        on_prompts = prompts(r.requests, "Task: write a checklist rubric.")
    return {"off": (tmp / "off", off, off_prompts), "on": (tmp / "on", on, on_prompts), "url": r.url, "tmp": tmp}


def test_without_a_gold_model_the_stage_writes_nothing_and_rubrics_get_no_reference(runs: dict[str, Any]) -> None:
    out, summary, rubric_prompts = runs["off"]
    assert summary["counts"]["gold"] == {"in": 0, "out": 0, "rejected": {}, "rejected_total": 0}
    assert (out / "gold.jsonl").read_text() == ""
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stages"]["gold"]["settings"]["gold_model"] is None and manifest["stages"]["gold"]["models"] == []
    assert rubric_prompts and not any("Reference answer" in p for p in rubric_prompts)


def test_the_gold_stage_records_answers_and_the_rubric_writer_sees_them_as_context(runs: dict[str, Any]) -> None:
    out, summary, rubric_prompts = runs["on"]
    off_out = runs["off"][0]
    # every deduplicated item is asked; the prose reply leaves its item without a reference, not dropped
    assert summary["counts"]["gold"] == {"in": 12, "out": 11, "rejected": {"unparseable": 1}, "rejected_total": 1}
    assert summary["counts"]["rubric"] == json.loads((off_out / "manifest.json").read_text())["stages"]["rubric"][
        "counts"]
    rows = jsonl(out / "gold.jsonl")
    assert len(rows) == 11 and rows[0]["citations"] == [{"kind": "pmid", "value": "31000001"},
                                                        {"kind": "pmid", "value": "39999999"}]
    gold_stage = json.loads((out / "manifest.json").read_text())["stages"]["gold"]
    assert gold_stage["settings"]["gold_model"] == "gold" and gold_stage["models"][0]["model"] == "gold"
    with_reference = [p for p in rubric_prompts if "Reference answer (context for drafting only" in p]
    assert len(with_reference) == len([p for p in rubric_prompts if "delivered remotely" not in p]) > 0
    assert any(rows[0]["answer"] in p for p in with_reference)
    # context only: the rule-based writer ignores it, so the rubrics are the same bytes
    assert (out / "rubrics.jsonl").read_bytes() == (off_out / "rubrics.jsonl").read_bytes()


def test_the_gold_citation_audit_through_the_cli(runs: dict[str, Any]) -> None:
    out = runs["on"][0]
    # the judge finds the "established" line's record unsupporting; PMID 39999999 does not exist
    with serve_records() as records, serve_judge([("A cohort established", ['{"support": "no", "reasoning": '
                                                                            '"another study"}'])]) as judge:
        rc, _, err = generate("gold-audit", out, "--record-url", f"pmid={records.url}/pmid/{{id}}",
                              "--judge-model", "judge-m", "--base-url", judge.url, "--json", sources=None)
    assert rc == 0, err
    report = json.loads((out / "gold_audit.json").read_text())
    assert (report["answers"], report["answers_citing"]) == (11, 11)
    c = report["citations"]
    assert c["cited"] == 22 and (c["existence"]["found"], c["existence"]["notfound"]) == (11, 11)
    # every found record is PMID 31000001 on the "no completed trial" line: supported, so no misattribution
    assert (c["wrong_paper"]["count"], c["wrong_paper"]["n"]) == (0, 11)
    assert report["support_judge"]["model"] == "judge-m"


def test_gold_audit_bad_input_is_one_line_exit_2(runs: dict[str, Any], tmp_path: Path) -> None:
    off = runs["off"][0]
    for out, args, message in [
        (tmp_path / "none", ("--record-url", "pmid=http://x/{id}", "--judge-model", "j", "--base-url", "http://x/v1"),
         "gold.jsonl: no such file"),
        (off, ("--judge-model", "j", "--base-url", "http://x/v1"), "gold-audit needs --record-url"),
        (off, ("--record-url", "pmid=http://x/{id}"), "gold-audit needs --judge-model J and --base-url URL"),
        (off, ("--record-url", "pmid=http://x/", "--judge-model", "j", "--base-url", "http://x/v1"),
         "expected pmid|doi|nct|arxiv=URL with {id}"),
    ]:
        rc, _, err = generate("gold-audit", out, *args, sources=None)
        assert rc == 2 and message in err and err.count("\n") == 1, (args, err)
