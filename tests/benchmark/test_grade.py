"""grade_run: every dataset question graded, outcomes classified before any judge call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drsearch.agents import ChatClient, RetryPolicy
from drsearch.agents.canonical import canonical_json
from drsearch.benchmark import (
    CitationAuditor,
    CorrectnessJudge,
    GradingTask,
    JudgeSettings,
    LLMJudge,
    Resolution,
    RoutingResolver,
    grade_run,
    judge_for,
    load_tasks,
    read_graded,
    read_run,
    summarize,
    write_graded,
)
from drsearch.contract import InvalidInputError
from drsearch.dev.judge import FakeJudge, serve_judge

from ..helpers import DATA

TASKS = load_tasks("dr256", DATA / "sample/questions.jsonl")


def episode(task: GradingTask, status: str, answer: str | None, **acc: Any) -> dict[str, Any]:
    """A trajectories.jsonl record as drsearch.agents.runstore writes it."""
    accounting = {"completion_tokens": 7, "llm_calls": 2, "malformed_tool_calls": 0, "prompt_tokens": 100,
                  "reasoning_tokens": 0, "tool_calls": {"open": 1, "search": 2}, "tool_errors": 0,
                  "tool_response_bytes": 10, **acc}
    return {"accounting": accounting, "final_answer": answer, "index": task.index, "messages": [],
            "prompt_sha256": "0" * 64, "qid": task.question_id, "reason": f"reason of {status}",
            "seed": 20260811 + task.index, "status": status, "tool_calls": [], "turns": []}


def write_run(root: Path, episodes: list[dict[str, Any]], torn: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "run.json").write_text(json.dumps({"model": "agent-m", "preset": "dr256"}))
    (root / "trajectories.jsonl").write_text("".join(canonical_json(e) + "\n" for e in episodes) + torn)
    (root / "timings.jsonl").write_text("".join(canonical_json({"qid": e["qid"], "wall_s": 1.5}) + "\n"
                                                for e in episodes))
    return root


def judged(fake_rules: list[Any] | None = None) -> Any:
    return serve_judge(fake_rules)


def llm_of(fake: FakeJudge) -> LLMJudge:
    return LLMJudge(ChatClient.connect(fake.url, retry=RetryPolicy(max_attempts=1)),
                    JudgeSettings(model="judge-m", parse_attempts=1))


def test_every_question_gets_an_honest_outcome(tmp_path: Path) -> None:
    t = TASKS
    run = write_run(tmp_path / "run", [
        episode(t[5], "answered", "wrong"),  # out of order on purpose
        episode(t[0], "answered", "30"),
        episode(t[1], "answered", "  "),
        episode(t[2], "error", None),
        episode(t[3], "turn_cap", None),
        episode(t[4], "budget", None),
        episode(t[0], "answered", "a later duplicate is ignored"),
        episode(t[6], "answered", "judge breaks"),
    ], torn='{"qid": "q-torn')
    with judged([("judge breaks", ["{not json"])]) as fake:
        graded = grade_run(run, TASKS, CorrectnessJudge(llm_of(fake)))
        assert len(fake.requests) == 3  # 0, 5 and 6 only: no judge for empty, unfinished, errors
    assert [g.index for g in graded] == list(range(12))
    outcomes = [g.outcome for g in graded]
    assert outcomes == ["correct", "empty_answer", "agent_error", "unfinished", "unfinished", "incorrect",
                        "judge_failed"] + ["missing_episode"] * 5
    assert [g.episode_status for g in graded[:8]] == ["answered", "answered", "error", "turn_cap", "budget",
                                                      "answered", "answered", "missing"]
    assert graded[1].reason == "empty_model_response" and graded[2].reason == "reason of error"
    g0 = graded[0]
    assert (g0.tool_calls, g0.prompt_tokens, g0.completion_tokens, g0.wall_s) == (3, 100, 7, 1.5)
    assert g0.tier == TASKS[0].tier and g0.difficulty == TASKS[0].difficulty and g0.judge is not None
    assert graded[11].wall_s is None and graded[11].tool_calls == 0
    summary = summarize(graded, expected_ids=[t.question_id for t in TASKS])
    assert summary["n"] == 12 and summary["accuracy"]["count"] == 1 and summary["accuracy"]["n"] == 12
    assert summary["outcomes"]["missing_episode"]["count"] == 5
    assert summary["outcomes"]["judge_failed"]["count"] == 1


def test_graded_records_round_trip(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [episode(TASKS[0], "answered", "30")])
    with judged() as fake:
        graded = grade_run(run, TASKS[:3], CorrectnessJudge(llm_of(fake)), concurrency=3)
    write_graded(tmp_path / "g.jsonl", graded)
    assert read_graded(tmp_path / "g.jsonl") == graded


def test_checklist_runs_carry_scores(tmp_path: Path) -> None:
    checklist = [{"type": "must_mention", "weight": 2, "text": f"point {i}"} for i in range(3)] + \
                [{"type": "must_acknowledge", "weight": 2, "text": "point 3"},
                 {"type": "must_avoid", "weight": 1, "text": "cure claim"}]
    rows = [{"task_id": f"src{i}#0", "question": f"q{i}", "track": "t", "checklist": checklist} for i in range(2)]
    path = tmp_path / "bio.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tasks = load_tasks("openbiorq", path)
    run = write_run(tmp_path / "run", [episode(tasks[0], "answered", "point 0, point 1 and point 2")])
    with judged() as fake:
        graded = grade_run(run, tasks, judge_for("openbiorq", llm_of(fake)))
    assert graded[0].score == pytest.approx(7 / 9) and graded[0].outcome == "correct"
    assert graded[1].outcome == "missing_episode" and graded[1].score is None


def test_citations_are_audited_for_answers(tmp_path: Path) -> None:
    class Resolver:
        def resolve(self, citation: Any) -> Resolution:
            return Resolution("found" if citation.value == "1" else "notfound", "record")

    run = write_run(tmp_path / "run", [episode(TASKS[0], "answered", "30 (PMID 1, PMID 2)"),
                                       episode(TASKS[1], "error", None)])
    with judged([("PMID", [json.dumps({"correct": "no"})])]) as fake:
        graded = grade_run(run, TASKS[:2], CorrectnessJudge(llm_of(fake)),
                           auditor=CitationAuditor(RoutingResolver({"pmid": Resolver()})))
    assert [(c["value"], c["existence"]) for c in graded[0].judge["citations"]] == [("1", "found"),
                                                                                     ("2", "notfound")]
    assert graded[1].judge is None


def test_bad_run_directories(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="not a run directory"):
        read_run(tmp_path)
    run = write_run(tmp_path / "run", [episode(TASKS[0], "answered", "30")])
    with open(run / "trajectories.jsonl", "a") as fh:
        fh.write("{broken\n")
    with pytest.raises(InvalidInputError, match=r"trajectories\.jsonl:2: not valid JSON"):
        read_run(run)
    (run / "trajectories.jsonl").write_text('{"qid": 3}\n')
    with pytest.raises(InvalidInputError, match=r":1: an episode needs string 'qid' and 'status'"):
        read_run(run)


def test_run_without_trajectories_is_all_missing(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    with judged() as fake:
        graded = grade_run(run, TASKS, CorrectnessJudge(llm_of(fake)))
    assert {g.outcome for g in graded} == {"missing_episode"} and len(graded) == 12


def test_public_api() -> None:
    import drsearch.benchmark as benchmark

    assert set(benchmark.__all__) == {
        "ANSWER_TYPES", "CRITERION_TYPES", "DATASET_KINDS", "EMPTY_RESPONSE", "NUMERIC_VERSION", "OUTCOMES",
        "PROMPT_FILES", "NumericJudge",
        "AnswerType", "ChecklistJudge", "Citation", "CitationAuditor", "CitationCheck", "CitationResolver",
        "CorpusResolver", "CorrectnessJudge", "Criterion", "CriterionType", "DatasetKind", "DeepSearchQAJudge",
        "DeepSearchQATask", "GradedQuestion", "GradingTask", "HttpRecordResolver", "Judge", "JudgeCache",
        "JudgeParseError", "JudgePrompt", "JudgeSettings", "JudgeUnavailableError", "LLMJudge", "OpenBioRQItem", "Outcome", "QuestionRow",
        "QuestionSet", "Resolution", "RoutingResolver", "RunEpisodes", "SupportJudge", "Verdict", "audit_episode",
        "audit_runs", "citation_rates", "contains_answer", "render_leak_audit",
        "cohen_kappa", "compare_runs", "extract_citations", "filter_tasks", "grade_episode", "grade_run",
        "judge_agreement", "judge_for", "load_questions", "load_tasks", "mcnemar_exact", "mean_at_k", "pass_at_k",
        "read_deepsearchqa", "read_dr256", "read_graded", "read_openbiorq", "read_run", "render_table", "spearman",
        "summarize", "wilson_interval", "write_graded"}
    for name in benchmark.__all__:
        assert getattr(benchmark, name) is not None


def test_release_tooling_imports_rows_without_the_extras() -> None:
    """`drsearch validate` reads DR-256 rows: that must not need httpx (agents) or scipy (grading)."""
    import subprocess
    import sys

    rows = "import sys; import drsearch.benchmark; sys.exit(bool({'httpx', 'scipy'} & set(sys.modules)))"
    assert subprocess.run([sys.executable, "-c", rows], check=False).returncode == 0
    tools = "import sys; import drsearch.release.dr256; sys.exit('scipy' in sys.modules)"  # corpus brings httpx
    assert subprocess.run([sys.executable, "-c", tools], check=False).returncode == 0


def test_an_infrastructure_failure_is_missing_never_the_models_error(tmp_path: Path) -> None:
    """Status infra_error (endpoint or search backend down, replay miss, disk full) grades as
    ``missing``, not ``agent_error``, with no judge call; a rerun's finished episode replaces it
    (whatever the line order), and of two failures the latest stands."""
    t = TASKS
    retried = episode(t[1], "answered", str(t[1].reference))
    run = write_run(tmp_path / "run", [
        episode(t[0], "infra_error", None),
        episode(t[1], "infra_error", None),
        episode(t[2], "model_error", None),
        episode(t[3], "answered", str(t[3].reference)),
        retried,  # the rerun of question 1 finished
        {**episode(t[3], "infra_error", None)},  # a finished episode is never replaced
        {**episode(t[0], "infra_error", None), "reason": "the latest failure"},
    ])
    with open(run / "timings.jsonl", "a") as fh:  # the retried question's last timing line wins
        fh.write(canonical_json({"qid": t[1].question_id, "wall_s": 4.0}) + "\n")
    with judged() as fake:
        graded = grade_run(run, TASKS[:4], CorrectnessJudge(llm_of(fake)))
        assert len(fake.requests) == 2  # questions 1 and 3 only
    assert [(g.episode_status, g.outcome) for g in graded] == [
        ("infra_error", "missing"), ("answered", "correct"), ("model_error", "agent_error"),
        ("answered", "correct")]
    assert graded[0].reason == "the latest failure" and graded[1].wall_s == 4.0
    summary = summarize(graded, expected_ids=[x.question_id for x in TASKS[:4]])
    assert summary["outcomes"]["missing"]["count"] == 1 and summary["outcomes"]["agent_error"]["count"] == 1
    assert summary["accuracy"]["count"] == 2 and summary["accuracy"]["n"] == 4
    assert summary["per_question"]["n"] == 3  # the cut-short attempt is no per-question spending
