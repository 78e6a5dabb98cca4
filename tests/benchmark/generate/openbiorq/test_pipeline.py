"""The pipeline end to end over data/openbiorq/sources.jsonl against the rule-based models on
127.0.0.1 (tests/benchmark/generate/openbiorq/rules.py): counts and reasons of every stage,
the audit's Wilson numbers and lift, dedup across sources, rubric redrafts and hashes, resume
of an interrupted stage, and record → delete → replay byte identity."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from drsearch.agents.canonical import sha256_json
from drsearch.benchmark import read_openbiorq
from drsearch.benchmark.datasets.openbiorq import rubric_sha256
from drsearch.benchmark.generate.openbiorq import STAGES, rubric_problems
from drsearch.benchmark.generate.openbiorq.dedupstage import dedup_items
from drsearch.benchmark.generate.openbiorq.textstages import audit_sample
from drsearch.benchmark.stats import wilson_interval
from drsearch.dev.chat import Rule, RuleResponder, serve_rules

from ..test_stages import assert_same_tree
from .conftest import generate, jsonl
from .rules import FIXTURE_COUNTS, RULES, criteria_judge

pytest.importorskip("onnxruntime")


def prompts_of(responder: RuleResponder, task: str) -> list[str]:
    return [str(b["messages"][-1]["content"]) for b in responder.requests if task in b["messages"][-1]["content"]]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("obrq") / "obrq"
    with serve_rules(RULES) as r:
        rc, summary, err = generate("rubric", out, "--baseline", "extracted", base_url=r.url)
    assert rc == 0, err
    assert summary is not None
    return out, summary


def test_every_stage_runs_and_counts_its_candidates(generated: tuple[Path, dict[str, Any]]) -> None:
    out, summary = generated
    assert summary["ran"] == list(STAGES[:STAGES.index("rubric") + 1]) and summary["generator"] == "openbiorq"
    counts = summary["counts"]
    assert counts["extract"] == {"in": 10, "out": 9, "rejected": {"unparseable": 1}, "rejected_total": 1}
    assert counts["refine"] == {"in": 14, "out": 13, "rejected": {"unparseable": 1}, "rejected_total": 1}
    assert counts["audit"] == {"in": 13, "out": 13, "rejected": {}, "rejected_total": 0}
    assert counts["dedup"] == {"in": 13, "out": 12, "rejected": {"near_duplicate": 1}, "rejected_total": 1}
    assert counts["rubric"] == {"in": 12, "out": 11, "rejected": {"rubric_invalid": 1}, "rejected_total": 1}
    lines = {name: len(jsonl(out / f"{name}.jsonl")) for name in ("extracted", "refined", "deduped", "rubrics")}
    assert lines == {k: v for k, v in FIXTURE_COUNTS.items() if k != "sources"}
    rejected = [(c["stage"], c["key"], c["check"], c["reason"]) for c in jsonl(out / "candidates.jsonl")]
    assert [r[:3] for r in rejected] == [
        ("extract", "arXiv:2302.00006", "unparseable"), ("refine", "PMID:31000007#1", "unparseable"),
        ("dedup", "PMID:31000002#0", "near_duplicate"), ("rubric", "PMID:31000009#0", "rubric_invalid")]
    assert rejected[0][3].startswith("extractor reply: not JSON (JSONDecodeError")
    assert rejected[1][3] == "refiner reply: taxonomy label 'longevity' is not a class of the taxonomy"
    assert rejected[2][3] == "cosine 1 >= 0.9 with PMID:31000001#0"  # another source: identity plays no part
    assert rejected[3][3] == ("3 redraft(s) and still: criterion 1: vague phrase 'adequately'; criterion 1: "
                              "vague phrase 'discusses'")


def test_extracted_task_ids_follow_the_extractors_order(generated: tuple[Path, dict[str, Any]]) -> None:
    out, _ = generated
    rows = jsonl(out / "extracted.jsonl")
    assert [r["task_id"] for r in rows][:3] == ["PMID:31000001#0", "PMID:31000001#1", "PMID:31000002#0"]
    first = rows[0]
    assert first["extracted_question"].startswith("Whether early anticoagulation lowers recurrent stroke")
    assert first["id_kind"] == "pmid" and first["track"] == "retrieval_verified" and first["year"] == 2021
    refined = {r["task_id"]: r for r in jsonl(out / "refined.jsonl")}
    assert refined["PMID:31000001#1"]["question"].startswith("In the setting of 'Timing of anticoagulation")
    assert refined["NCT04000003#1"]["taxonomy"] == "pharmacology" and len(refined["NCT04000003#1"]["difficulty_hints"]) == 3
    assert {r["initial_status"] for r in refined.values()} == {"open"}


def test_the_audit_reports_wilson_intervals_and_the_lift(generated: tuple[Path, dict[str, Any]]) -> None:
    out, _ = generated
    audit = json.loads((out / "audit.json").read_text())
    assert audit["sample"] == {"audited": 13, "drawn": 13, "population": 13, "seed": 15, "size": 500}
    assert (audit["refined"]["yes"], audit["refined"]["n"]) == (13, 13)
    assert (audit["extracted"]["yes"], audit["extracted"]["n"]) == (9, 13)  # four said 'this'/'these'
    assert audit["extracted"]["ci95"] == list(wilson_interval(9, 13))
    assert audit["extracted"]["rate_pct"] == 69.2 and audit["refined"]["rate_pct"] == 100.0
    assert audit["lift_pp"] == 30.8
    tracks = audit["extracted"]["per_track"]  # in the stated track order
    assert [(t["track"], t["yes"], t["n"]) for t in tracks] == [
        ("retrieval_verified", 8, 11), ("expert_consensus", 1, 2), ("priority_setting", 0, 0), ("expand", 0, 0)]
    assert tracks[0]["ci95"] == list(wilson_interval(8, 11))


def test_rubrics_are_valid_hashed_and_readable_for_grading(generated: tuple[Path, dict[str, Any]]) -> None:
    out, _ = generated
    rows = {r["task_id"]: r for r in jsonl(out / "rubrics.jsonl")}
    for row in rows.values():
        assert rubric_problems(row["checklist"]) == []
        assert row["rubric_sha256"] == rubric_sha256(row["checklist"]) == sha256_json(row["checklist"])
    assert rows["DOC:guideline-2024-08#0"]["rubric_drafts"] == [["no must_avoid criterion"]]
    assert rows["DOC:guideline-2024-08#1"]["rubric_drafts"] == [["criterion 4: not specific to this question"]]
    assert rows["NCT04000010#0"]["rubric_drafts"] == []
    tasks = read_openbiorq(out / "rubrics.jsonl")  # the grading reader accepts them as they are
    assert [t.question_id for t in tasks] == list(rows)


def test_redrafts_carry_every_problem_back_to_the_writer(responder: RuleResponder, tmp_path: Path) -> None:
    rc, _, err = generate("rubric", tmp_path / "o", base_url=responder.url)
    assert rc == 0, err
    vague = [p for p in prompts_of(responder, "Task: write a checklist rubric.") if "circulating tumour DNA" in p]
    assert len(vague) == 4  # the draft and 3 redrafts
    assert "Problems with your previous draft" not in vague[0]
    assert all("- criterion 1: vague phrase 'adequately'\n- criterion 1: vague phrase 'discusses'" in p
               for p in vague[1:])


def test_dedup_walks_tracks_in_order_and_collapses_exactly_at_tau() -> None:
    """(-3, 0, -1) and (-3, -1, 0) have cosine exactly 0.9 (float64 alone says 0.8999999999999999):
    they collapse; a vector at 0.8999 does not. b#0 comes first in the file but its track is
    walked last, so it is the duplicate, not the clinical item it matches."""
    items = [{"task_id": "b#0", "track": "computational"}, {"task_id": "a#0", "track": "clinical"},
             {"task_id": "a#1", "track": "clinical"}, {"task_id": "c#0", "track": "clinical"}]
    u = np.array([-3.0, -1.0, 0.0]) / np.sqrt(10.0)
    near = 0.8999 * u + np.sqrt(1 - 0.8999 ** 2) * np.array([0.0, 0.0, 1.0])
    vectors = [np.array([-3.0, 0.0, -1.0]), u, np.array([-6.0, 0.0, -2.0]), near]
    kept, result = dedup_items(items, vectors, ["clinical", "translational", "computational"], 0.90)
    assert [k["task_id"] for k in kept] == ["a#0", "c#0"]
    assert [(d.id, d.duplicate_of, d.cosine) for d in result.duplicates] == [("a#1", "a#0", 0.9), ("b#0", "a#0", 0.9)]
    assert ("c#0", "a#0", 0.8999) in result.review  # within ±0.01 of tau: listed for review


def test_the_audit_sample_is_seeded_and_sorted() -> None:
    assert audit_sample(5, 500, 1) == [0, 1, 2, 3, 4]
    drawn = audit_sample(1000, 10, 7)
    assert drawn == sorted(drawn) and len(set(drawn)) == 10 and drawn == audit_sample(1000, 10, 7)
    assert drawn != audit_sample(1000, 10, 8)


def test_an_interrupted_stage_resumes_with_only_its_unfinished_items(tmp_path: Path) -> None:
    out = tmp_path / "o"
    # the judge answers one item's rubric check only: the next item's check is HTTP 400 (no rule), a
    # call that fails for good, so the stage stops with exit 1 and keeps the item it finished
    one_judge = [r for r in RULES if r.reply is not criteria_judge] + [
        Rule("judge", ("Task: check rubric criteria.", "Is it known whether early"), criteria_judge)]
    with serve_rules(one_judge) as r:  # one server (the endpoint is part of each stage's key)
        rc, _, err = generate("rubric", out, base_url=r.url)
        assert rc == 1 and "model call failed" in err and err.count("\n") == 1
        journal = out / "stages/rubric.journal.jsonl"
        assert journal.is_file() and len(journal.read_text().splitlines()) == 2  # header + the first item
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["stage_order"] == ["extract", "refine", "audit", "dedup", "gold"]
        r.rules[:] = RULES
        r.requests.clear()
        rc, summary, err = generate("rubric", out, base_url=r.url)
        assert rc == 0, err
        assert summary is not None and summary["skipped"] == ["extract", "refine", "audit", "dedup", "gold"]
        assert summary["ran"] == ["rubric"]
        asked = prompts_of(r, "Task: write a checklist rubric.")
        assert len(asked) == 11 + 3 + 1 + 1  # 11 items not finished: one draft each; 3 + 1 + 1 redrafts
        assert not any("early anticoagulation lowers" in p for p in asked)  # the finished item is not asked again
        timings = json.loads((out / "timings.json").read_text())
        assert timings["stages"]["rubric"]["resumed_items"] == 1
        assert not journal.exists()


def test_an_unparseable_judge_reply_drops_the_item_with_its_reason(tmp_path: Path) -> None:
    broken = [Rule("judge", ("Task: check rubric criteria.", "injectable cabotegravir"), "{broken"), *RULES]
    with serve_rules(broken) as r:
        rc, summary, err = generate("rubric", tmp_path / "o", base_url=r.url)
    assert rc == 0 and summary is not None, err
    assert summary["counts"]["rubric"]["rejected"] == {"rubric_invalid": 1, "unparseable": 1}
    reasons = {c["key"]: c["reason"] for c in jsonl(tmp_path / "o/candidates.jsonl")}
    assert reasons["NCT04000010#0"].startswith("rubric judge reply: not JSON (JSONDecodeError")


def test_stages_run_one_at_a_time_and_skip_what_is_done(responder: RuleResponder, tmp_path: Path) -> None:
    out = tmp_path / "o"
    rc, summary, _ = generate("extract", out, base_url=responder.url)
    assert rc == 0 and summary is not None and summary["ran"] == ["extract"] and summary["stopped_after"] == "extract"
    assert not (out / "refined.jsonl").exists()
    rc, summary, _ = generate("refine", out, base_url=responder.url)
    assert summary is not None and summary["skipped"] == ["extract"] and summary["ran"] == ["refine"]
    rc, summary, _ = generate("refine", out, "--tracks", "retrieval_verified,expert_consensus,methods",
                              base_url=responder.url)
    assert summary is not None and summary["ran"] == ["extract", "refine"]  # a changed setting reruns


def test_record_delete_replay_regenerates_byte_identically(generated: tuple[Path, dict[str, Any]],
                                                          tmp_path: Path) -> None:
    recorded, _ = generated
    cache = tmp_path / "cache.sqlite3"
    shutil.copy(recorded / "cache.sqlite3", cache)
    replayed = tmp_path / "replayed"
    url = json.loads((recorded / "manifest.json").read_text())["stages"]["extract"]["models"][0]["base_url"]
    rc, summary, err = generate("rubric", replayed, "--baseline", "extracted", "--cache-mode", "replay",
                                "--cache", str(cache), base_url=url)  # its server is gone: offline
    assert rc == 0, err
    assert summary is not None and summary["ran"] == list(STAGES[:STAGES.index("rubric") + 1])
    assert not (replayed / "cache.sqlite3").exists()  # the cache given with --cache, not a new one
    assert_same_tree(recorded, replayed, ignore={"timings.json", "cache.sqlite3"})


def test_concurrency_changes_no_output_byte_and_reruns_nothing(generated: tuple[Path, dict[str, Any]],
                                                              tmp_path: Path) -> None:
    """--concurrency 8 writes the same bytes as 1 (rows in item order, whatever order the calls finish in),
    is not a stage setting (the manifest is the same), and rerunning with another level skips every stage."""
    recorded, _ = generated
    parallel = tmp_path / "parallel"
    with serve_rules(RULES) as r:
        rc, summary, err = generate("rubric", parallel, "--baseline", "extracted", "--concurrency", "8",
                                    base_url=r.url)
        assert rc == 0, err
        url = json.loads((recorded / "manifest.json").read_text())["stages"]["extract"]["models"][0]["base_url"]
        manifest = (parallel / "manifest.json").read_text().replace(r.url, url)  # the one server address
        assert manifest == (recorded / "manifest.json").read_text()
        assert_same_tree(recorded, parallel, ignore={"timings.json", "cache.sqlite3", "manifest.json"})
        assert json.loads((parallel / "timings.json").read_text())["last_invocation"]["concurrency"] == 8
        rc, summary, err = generate("rubric", parallel, "--baseline", "extracted", "--concurrency", "2",
                                    base_url=r.url)
    assert rc == 0 and summary is not None and summary["ran"] == [], err

