"""The benchmark layer: datasets, judges, grading and scoring (docs/GRADING.md).

Public API (pinned by tests/benchmark/test_grade.py::test_public_api)::

    load_tasks(kind, path) -> [GradingTask]      read_dr256 / read_deepsearchqa / read_openbiorq
    filter_tasks(tasks, categories=, answer_type=, ids=)
    LLMJudge(ChatClient, JudgeSettings, JudgeCache) -> CorrectnessJudge | DeepSearchQAJudge
                                                     | ChecklistJudge      (judge_for(kind, llm))
    NumericJudge(tolerance=0.02)                   deterministic numeric grading (no endpoint)
    CitationAuditor(resolver, SupportJudge)        extract_citations, citation_rates
    grade_run(run_dir, tasks, judge) -> [GradedQuestion]
    summarize(graded, expected_ids=) -> scores.json body; compare_runs; judge_agreement; render_table
    audit_runs(episodes per attempt, golds, grades) -> the leak_audit block (leak_audit.py)

Datasets and records need only the core install; judges, grading and citations need the
``agents`` extra (httpx), statistics and scoring the ``grading`` extra (scipy). Those are
imported on first use, so ``drsearch validate`` (which reads DR-256 rows) runs without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from .datasets import (
    ANSWER_TYPES,
    CRITERION_TYPES,
    DATASET_KINDS,
    AnswerType,
    Criterion,
    CriterionType,
    DatasetKind,
    DeepSearchQATask,
    GradingTask,
    OpenBioRQItem,
    QuestionRow,
    QuestionSet,
    filter_tasks,
    load_questions,
    load_tasks,
    read_deepsearchqa,
    read_dr256,
    read_openbiorq,
)
from .records import OUTCOMES, GradedQuestion, Outcome

if TYPE_CHECKING:
    from .citations import (
        Citation,
        CitationAuditor,
        CitationCheck,
        CitationResolver,
        CorpusResolver,
        HttpRecordResolver,
        Resolution,
        RoutingResolver,
        SupportJudge,
        citation_rates,
        extract_citations,
    )
    from .grade import RunEpisodes, grade_episode, grade_run, read_graded, read_run, write_graded
    from .judge_cache import JudgeCache
    from .judges import (
        EMPTY_RESPONSE,
        PROMPT_FILES,
        ChecklistJudge,
        CorrectnessJudge,
        DeepSearchQAJudge,
        Judge,
        JudgeParseError,
        JudgePrompt,
        JudgeSettings,
        JudgeUnavailableError,
        LLMJudge,
        Verdict,
        judge_for,
    )
    from .leak_audit import audit_episode, audit_runs, contains_answer, render_leak_audit
    from .numeric import NUMERIC_VERSION, NumericJudge
    from .scoring import compare_runs, judge_agreement, render_table, summarize
    from .stats import cohen_kappa, mcnemar_exact, mean_at_k, pass_at_k, spearman, wilson_interval

_LAZY: dict[str, str] = {
    **dict.fromkeys(("Citation", "CitationAuditor", "CitationCheck", "CitationResolver", "CorpusResolver",
                     "HttpRecordResolver", "Resolution", "RoutingResolver", "SupportJudge", "citation_rates",
                     "extract_citations"), "citations"),
    **dict.fromkeys(("RunEpisodes", "grade_episode", "grade_run", "read_graded", "read_run", "write_graded"),
                    "grade"),
    "JudgeCache": "judge_cache",
    **dict.fromkeys(("audit_episode", "audit_runs", "contains_answer", "render_leak_audit"), "leak_audit"),
    **dict.fromkeys(("EMPTY_RESPONSE", "PROMPT_FILES", "ChecklistJudge", "CorrectnessJudge",
                     "DeepSearchQAJudge", "Judge", "JudgeParseError", "JudgePrompt", "JudgeSettings",
                     "JudgeUnavailableError", "LLMJudge", "Verdict", "judge_for"), "judges"),
    **dict.fromkeys(("NUMERIC_VERSION", "NumericJudge"), "numeric"),
    **dict.fromkeys(("compare_runs", "judge_agreement", "render_table", "summarize"), "scoring"),
    **dict.fromkeys(("cohen_kappa", "mcnemar_exact", "mean_at_k", "pass_at_k", "spearman", "wilson_interval"),
                    "stats"),
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


__all__ = [
    "ANSWER_TYPES",
    "CRITERION_TYPES",
    "DATASET_KINDS",
    "EMPTY_RESPONSE",
    "NUMERIC_VERSION",
    "OUTCOMES",
    "PROMPT_FILES",
    "AnswerType",
    "ChecklistJudge",
    "Citation",
    "CitationAuditor",
    "CitationCheck",
    "CitationResolver",
    "CorpusResolver",
    "CorrectnessJudge",
    "Criterion",
    "CriterionType",
    "DatasetKind",
    "DeepSearchQAJudge",
    "DeepSearchQATask",
    "GradedQuestion",
    "GradingTask",
    "HttpRecordResolver",
    "Judge",
    "JudgeCache",
    "JudgeParseError",
    "JudgePrompt",
    "JudgeSettings",
    "JudgeUnavailableError",
    "LLMJudge",
    "NumericJudge",
    "OpenBioRQItem",
    "Outcome",
    "QuestionRow",
    "QuestionSet",
    "Resolution",
    "RoutingResolver",
    "RunEpisodes",
    "SupportJudge",
    "Verdict",
    "audit_episode",
    "audit_runs",
    "citation_rates",
    "cohen_kappa",
    "compare_runs",
    "contains_answer",
    "extract_citations",
    "filter_tasks",
    "grade_episode",
    "grade_run",
    "judge_agreement",
    "judge_for",
    "load_questions",
    "load_tasks",
    "mcnemar_exact",
    "mean_at_k",
    "pass_at_k",
    "read_deepsearchqa",
    "read_dr256",
    "read_graded",
    "read_openbiorq",
    "read_run",
    "render_leak_audit",
    "render_table",
    "spearman",
    "summarize",
    "wilson_interval",
    "write_graded",
]
