"""OpenBioRQ's tables through the real ``drsearch score``: the per-domain/track tables in
scores.json and on stdout, Cohen's kappa of two support judges on the wrong-paper verdict
(``--agreement``), and ``--leaderboard`` over several graded runs (table, JSON, bad input)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from drsearch.dev.judge import checklist, serve_judge

from ..benchmark.record_server import serve_records
from .test_cli_score import BIO_CHECKLIST, cli, episode_record, write_run

DIFF = {"core": True, "discriminating": None, "easy": None}
ITEMS = [  # task id, domain, track, bucket, frozen
    ("PMID:31000001#0", "clinical_medicine", "retrieval_verified", "core", True),
    ("PMID:31000002#0", "oncology", "retrieval_verified", "core", False),
    ("NCT04000003#0", "oncology", "expert_consensus", "discriminating", None),
    ("NCT04000004#0", "neuroscience", "expand", "easy", None),
]
# the oracle judge marks a criterion met iff the answer holds its text (dose, uncertainty, trial,
# mechanism; "cure claim" is the must_avoid) and finds every cited record supporting, except where a
# rule says otherwise
ANSWERS = {
    "PMID:31000001#0": "The dose and the trial data leave uncertainty (PMID: 31000001).",
    "PMID:31000002#0": "MISATTRIBUTED: the dose and the trial data (PMID: 31000001).\nUncertainty remains.",
    "NCT04000003#0": "MISREAD: the dose alone decides (PMID: 31000001).",
    "NCT04000004#0": "I cannot answer this question.",
}


def both(support: str, *verdicts: str) -> str:
    """One reply that parses as a support verdict and as a checklist verdict (the rule matches both)."""
    return json.dumps({**json.loads(checklist(*verdicts)), "reasoning": "r", "support": support})


def write_items(path: Path) -> Path:
    path.write_text("".join(json.dumps({
        "checklist": BIO_CHECKLIST, "question": f"Is {q} settled?", "task_id": q, "track": track,
        "metadata": {"openbiorq": {"taxonomy": domain, "difficulty": {"bucket": bucket, "frozen_core": frozen}}},
    }) + "\n" for q, domain, track, bucket, frozen in ITEMS))
    return path


def score(run: Path, items: Path, out: Path, records: str, rules: list[Any]) -> tuple[dict[str, Any], str]:
    with serve_judge(rules) as judge:
        rc, text = cli("score", str(run), "--dataset", "openbiorq", "--questions", str(items), "--judge-model",
                       "judge-m", "--base-url", judge.url, "--backoff", "0", "--audit-citations", "--record-url",
                       f"pmid={records}/pmid/{{id}}", "--judge-cache", str(out.with_suffix(".sqlite3")),
                       "--out", str(out))
    assert rc == 0, text
    return json.loads(out.read_text()), text


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("obrq")
    items = write_items(tmp / "items.jsonl")
    run = write_run(tmp / "run", [episode_record(q, i, "answered", ANSWERS[q], tool_calls=0 if "0004" in q else 2)
                                  for i, (q, *_rest) in enumerate(ITEMS)])
    # judge A: the misattributed line's record does not support it; judge B: neither does the misread one's
    wrong_a = [("MISATTRIBUTED", [both("no", "met", "met", "met", "not_met", "not_met")])]
    # B also finds the misread answer making the cure claim: (0 + 0) / 9, not solved
    wrong_b = [*wrong_a, ("MISREAD", [both("no", "not_met", "not_met", "not_met", "not_met", "met")])]
    with serve_records() as records:
        a, text = score(run, items, tmp / "a.json", records.url, [
            *wrong_a, ("MISREAD", [both("yes", "met", "not_met", "not_met", "not_met", "not_met")])])
        b, _ = score(run, items, tmp / "b.json", records.url, wrong_b)
    return {"a": a, "b": b, "items": items, "run": run, "text": text, "tmp": tmp}


def test_scores_json_and_stdout_carry_the_tables(graded: dict[str, Any]) -> None:
    t = graded["a"]["openbiorq"]
    onc = t["domains"]["oncology"]
    # oncology: both answered with two tools and solved: PMID:31000002 (dose 3 + uncertainty 2 + trial 1 + no cure
    # claim 2) / 9, NCT04000003 (dose 3 + no cure claim 2) / 9
    assert (onc["items"], onc["response_coverage"]["count"], onc["solve_rate"]["count"]) == (2, 2, 2)
    assert (onc["wrong_paper"]["count"], onc["wrong_paper"]["n"]) == (1, 2)
    assert (onc["frozen_core_share"]["count"], onc["frozen_core_share"]["n"]) == (0, 1)
    neuro = t["domains"]["neuroscience"]  # the written refusal: no coverage, a zero-tool answer
    assert (neuro["response_coverage"]["count"], neuro["zero_tool"]["count"], neuro["zero_tool"]["n"]) == (0, 1, 1)
    assert t["tracks"]["retrieval_verified"]["items"] == 2
    assert (t["wrong_paper_by_kind"]["pmid"]["count"], t["wrong_paper_by_kind"]["pmid"]["n"]) == (1, 3)
    # must_ground ("trial") met in both PMID items, one of them with the wrong paper; NCT3 has neither
    assert t["wrong_paper_vs_must_ground"]["table"] == {"a": 1, "b": 1, "c": 0, "d": 1}
    assert graded["a"]["behaviour"]["non_attempt"]["refusal"] == 1
    text = graded["text"]
    assert "Clinical Medicine" in text and "wrong paper by identifier: pmid 1/3" in text
    assert "wrong paper vs must_ground met: a=1 b=1 c=0 d=1" in text


def test_agreement_reports_kappa_on_the_wrong_paper_verdict(graded: dict[str, Any]) -> None:
    tmp = graded["tmp"]
    rc, text = cli("score", "--agreement", str(tmp / "a.json"), str(tmp / "b.json"), "--json")
    wp = json.loads(text)["wrong_paper"]
    # three citations judged by both: A (no, yes, yes) against B (no, no, yes) → both 1, B only 1, neither 1
    assert rc == 0 and (wp["n"], wp["both"], wp["a_only"], wp["b_only"], wp["neither"]) == (3, 1, 0, 1, 1)
    # by hand: p_o = 2/3, p_e = 1/3·2/3 + 2/3·1/3 = 4/9, κ = (2/3 − 4/9) / (5/9) = 0.4
    assert wp["kappa"] == pytest.approx(0.4)
    assert wp["kappa"] == pytest.approx(cohens_kappa(np.array([[1, 0], [1, 1]])).kappa)
    assert wp["judges"] == {"a": ["judge-m"], "b": ["judge-m"]}
    rc, text = cli("score", "--agreement", str(tmp / "a.json"), str(tmp / "b.json"))
    assert rc == 0 and "wrong-paper verdicts on 3 citation(s) judged by both" in text and "kappa 0.4" in text


def test_leaderboard_table_json_and_out(graded: dict[str, Any], tmp_path: Path) -> None:
    tmp, items = graded["tmp"], graded["items"]
    run_b = tmp_path / "run-b"
    run_b.mkdir()
    for name in ("run.json", "trajectories.jsonl", "timings.jsonl"):
        (run_b / name).write_bytes((graded["run"] / name).read_bytes())
    (run_b / "scores.json").write_bytes((tmp / "b.json").read_bytes())
    (run_b / "scores.graded.jsonl").write_bytes((tmp / "b.graded.jsonl").read_bytes())
    (graded["run"] / "scores.json").write_bytes((tmp / "a.json").read_bytes())
    (graded["run"] / "scores.graded.jsonl").write_bytes((tmp / "a.graded.jsonl").read_bytes())
    out = tmp_path / "leaderboard.json"
    rc, text = cli("leaderboard", str(graded["run"]), str(run_b), "--questions", str(items), "--json",
                   "--out", str(out))
    body = json.loads(text)
    assert rc == 0 and json.loads(out.read_text()) == body
    assert body["items"] == {"core": 2, "frozen_core": 1, "whole": 4}
    solved = {r["run"]: (r["whole"]["count"], r["core"]["count"], r["frozen_core"]["count"]) for r in body["rows"]}
    assert solved == {str(graded["run"]): (3, 2, 1), str(run_b): (2, 2, 1)}
    assert [r["run"] for r in body["rows"]] == [str(graded["run"]), str(run_b)]
    onc = body["domains"]["oncology"]["wrong_paper"]  # A 1 of 2, B 2 of 2
    assert (onc["micro"]["count"], onc["micro"]["n"], onc["macro"]) == (3, 4, 0.75)
    rc, text = cli("leaderboard", str(graded["run"]), str(run_b), "--questions", str(items))
    assert rc == 0 and "whole (4)" in text and "frozen core (1)" in text and "Oncology" in text
    # the former spelling: the same table, and one note naming the verb
    rc, old = cli("score", "--leaderboard", str(graded["run"]), str(run_b), "--questions", str(items))
    assert rc == 0 and old == text


def test_leaderboard_bad_input_is_one_line_exit_2(graded: dict[str, Any], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.jsonl"
    other.write_text(graded["items"].read_text().replace("NCT04000004", "NCT04000005"))
    cases = [
        ([str(graded["tmp"] / "a.json")], "leaderboard needs --questions"),
        ([str(tmp_path), "--questions", str(graded["items"])], "not a scores.json"),
        ([str(graded["tmp"] / "a.json"), "--questions", str(other)], "task ids differ"),
        ([str(graded["tmp"] / "a.json"), str(graded["tmp"] / "a.json"), "--questions",
          str(graded["items"])], "the same run given twice"),
    ]
    for argv, message in cases:
        rc, _ = cli("leaderboard", *argv)
        err = capsys.readouterr().err.strip().splitlines()
        assert rc == 2 and len(err) == 1 and message in err[0], (argv, err)
