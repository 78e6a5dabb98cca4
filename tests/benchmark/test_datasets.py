"""Dataset loaders: DR-256 rows (exact types, answer docids never supplied to an agent), DeepSearchQA, OpenBioRQ."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from drsearch.agents import (
    DR256,
    CachedChat,
    ChatClient,
    EngineSearcher,
    ReplayCache,
    read_questions,
    run_episode,
)
from drsearch.benchmark import (
    GradingTask,
    filter_tasks,
    load_tasks,
    read_deepsearchqa,
    read_dr256,
    read_openbiorq,
)
from drsearch.contract import InvalidInputError
from drsearch.dev.chat import serve_fake
from drsearch.index import BlockList, Engine
from drsearch.release import dr256 as release_dr256

from ..helpers import DATA

QUESTIONS = DATA / "sample/questions.jsonl"
BLOCKED = DATA / "sample/blocked_docids.txt"
ROWS = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


# -- DR-256 ---------------------------------------------------------------------------------


def test_release_reexports_the_benchmark_row_model() -> None:
    from drsearch.benchmark.datasets import dr256

    assert release_dr256.__all__ == dr256.__all__ and "QuestionRow" in dr256.__all__
    assert all(getattr(release_dr256, name) is getattr(dr256, name) for name in dr256.__all__)


def test_sample_rows_become_tasks_without_answer_docids() -> None:
    qs = read_dr256(QUESTIONS)
    tasks = qs.tasks()
    assert [t.index for t in tasks] == list(range(12)) and tasks[0].reference == "30"
    assert {t.tier for t in tasks} == {"frontier", "challenge"} and {t.difficulty for t in tasks} == {"1", "2", "3"}
    dumped = json.dumps([t.model_dump() for t in tasks])
    assert qs.answer_docids and not any(d in dumped for d in qs.answer_docids)
    assert load_tasks("dr256", QUESTIONS) == tasks


@pytest.mark.parametrize(("edit", "message"), [
    (lambda m: m.update(difficulty=True), "metadata.difficulty: Input should be 1, 2 or 3"),
    (lambda m: m.update(difficulty="2"), "metadata.difficulty: Input should be 1, 2 or 3"),
    (lambda m: m.update(teacher_correct="yes"), "metadata.teacher_correct"),
    (lambda m: m.pop("dataset_rows"), "metadata.dataset_rows: Field required"),
    (lambda m: m.update(row_fingerprints="abc"), "metadata.row_fingerprints"),
    (lambda m: m.update(row_fingerprints=[""]), "metadata.row_fingerprints.0"),
    (lambda m: m.update(row_fingerprints=[7]), "metadata.row_fingerprints.0"),
    (lambda m: m["benchmark"].pop("base_pilot"), "metadata.benchmark.base_pilot: Field required"),
    (lambda m: m["benchmark"].update(index=-1), "metadata.benchmark.index"),
    (lambda m: m["benchmark"].update(index="2"), "metadata.benchmark.index"),
    (lambda m: m["benchmark"].update(index=True), "metadata.benchmark.index"),
    (lambda m: m["benchmark"].update(index=2.0), "metadata.benchmark.index"),
    (lambda m: m["benchmark"].update(calibration_tier="hard"), "metadata.benchmark.calibration_tier"),
    (lambda m: m["benchmark"].update(calibration_tier="Frontier"), "metadata.benchmark.calibration_tier"),
    (lambda m: m["benchmark"].update(selection_bucket=""), "metadata.benchmark.selection_bucket"),
    (lambda m: m["benchmark"].update(selection_bucket=7), "metadata.benchmark.selection_bucket"),
])
def test_dr256_fields_are_typed_exactly(tmp_path: Path, edit: Any, message: str) -> None:
    rows = copy.deepcopy(ROWS)
    edit(rows[2]["metadata"])
    path = write(tmp_path / "q.jsonl", rows)
    with pytest.raises(InvalidInputError, match=f"^{path}:3: {message}"):
        read_dr256(path)


@pytest.mark.parametrize(("edit", "message"), [
    (lambda r: r.update(label=5), "label: Input should be a valid string"),
    (lambda r: r.update(label=""), "label"),
    (lambda r: r.update(prompt=[]), "prompt"),
    (lambda r: r["prompt"][0].update(role="assistant"), "prompt.0.role"),
    (lambda r: r["prompt"][0].update(content=""), "prompt.0.content"),
])
def test_dr256_row_fields_the_card_fixes_are_exact(tmp_path: Path, edit: Any, message: str) -> None:
    rows = copy.deepcopy(ROWS)
    edit(rows[2])
    path = write(tmp_path / "q.jsonl", rows)
    with pytest.raises(InvalidInputError, match=f"^{path}:3: {message}"):
        read_dr256(path)


def test_dr256_accepted_variants(tmp_path: Path) -> None:
    rows = copy.deepcopy(ROWS)
    rows[0]["metadata"].update(teacher_correct=True, dataset_rows=[{"dataset": "x", "row": 4}], extra="kept")
    rows[1]["metadata"]["benchmark"].update(base_pilot=True, more={"a": 1})
    assert len(read_dr256(write(tmp_path / "q.jsonl", rows)).rows) == 12


def test_dr256_rows_as_the_card_describes_them_validate(tmp_path: Path) -> None:
    """The card calls ``dataset_rows`` "source row identifiers", ``row_fingerprints``
    "source-row fingerprints" and ``base_pilot`` the reference agent's "calibration behavior",
    without fixing a type: rows using any such value are a valid release (release/validate too)."""
    rows = copy.deepcopy(ROWS)
    variants: list[tuple[Any, Any, Any]] = [
        ([17, 4023], ["row:17", "row:4023"], "solved"),                       # integer identifiers
        (["hotpotqa/train/5a8b57f25542995d1e6f1371"], ["md5:0cc175b9c0f1b6a8"], {"runs": 3, "correct": 1}),
        ([3, "x-7", {"dataset": "nq", "row": 9}], ["ABC", "Z"], None),        # mixed; non-hex fingerprints
        ([], [], False),                                                      # nothing upstream
        ("musique:2hop__13548", ["0xDEADBEEF"], 0.5),                         # one bare identifier
        (12, ["fp"], [True, False, True]),
    ]
    for row, (dataset_rows, fingerprints, pilot) in zip(rows, variants, strict=False):
        row["metadata"].update(dataset_rows=dataset_rows, row_fingerprints=fingerprints)
        row["metadata"]["benchmark"]["base_pilot"] = pilot
    qs = read_dr256(write(tmp_path / "q.jsonl", rows))
    assert len(qs.rows) == 12
    assert qs.rows[0].metadata.dataset_rows == [17, 4023]
    assert qs.rows[1].metadata.benchmark.base_pilot == {"runs": 3, "correct": 1}
    assert [r.agent_question() for r in qs.rows] == [r.agent_question() for r in read_dr256(QUESTIONS).rows]


def test_agent_view_is_what_the_harness_reads() -> None:
    harness, _ = read_questions(QUESTIONS)
    assert [r.agent_question() for r in read_dr256(QUESTIONS).rows] == harness


def test_agents_see_answer_documents_by_search_never_by_construction_nor_artifacts(sample_index: Path) -> None:
    """Run every sample question through the real agent loop (fake model, sample engine with the
    release's blocklist): the model is sent the frozen prompt, searches the question and its
    answer, opens the top hit of the question. The construction answer docids are never
    *supplied* (no prompt names one), but the answer documents stay searchable (search
    results name them); no byte the model receives names a blocked leak artifact. Without
    the blocklist the same searches do surface the artifacts, so the check is not vacuous."""
    docids = read_dr256(QUESTIONS).answer_docids
    artifacts = BlockList.from_file(BLOCKED).docids
    questions = [r.agent_question() for r in read_dr256(QUESTIONS).rows]
    scripts = {i: [{"call": [("search", {"query": ROWS[i]["label"], "k": 20})]},
                   {"call": [("search", {"query": "QUESTION", "k": 20})]},
                   {"open_first_hit": True}, {"content": "done"}] for i in range(12)}

    def seen_by_model(blocklist: BlockList | None) -> tuple[str, str]:
        """(the first request of every episode: prompt and tools, everything the harness
        supplies; everything the model receives)."""
        with serve_fake(scripts) as fake, Engine.open(sample_index, blocklist) as engine:
            client = ChatClient.connect(fake.url)
            chat = CachedChat(client, ReplayCache(None, "off"))
            episodes = [run_episode(q, DR256, "m", chat, EngineSearcher(engine)) for q in questions]
            client.close()
        assert all(e.record["status"] == "answered" for e in episodes)
        assert all(e.record["accounting"]["tool_calls"] == {"open": 1, "search": 2} for e in episodes)
        first = [r for r in fake.requests if not any(m["role"] == "tool" for m in r["messages"])]
        assert len(first) == 12
        return json.dumps(first), json.dumps(fake.requests) + json.dumps([e.record["messages"] for e in episodes])

    supplied, received = seen_by_model(BlockList.from_file(BLOCKED))
    assert not [d for d in docids | artifacts if d in supplied]
    assert not [d for d in artifacts if d in received]
    assert [d for d in docids if d in received]  # found by searching, as an agent should
    _, unblocked = seen_by_model(None)
    assert sorted(d for d in artifacts if d in unblocked) == sorted(artifacts)


# -- DeepSearchQA ---------------------------------------------------------------------------

DSQA = [
    {"problem": "Which planets have rings?", "problem_category": "Science", "answer": "Jupiter, Saturn, Uranus",
     "answer_type": "Set Answer"},
    {"id": "dq-2", "question": "Capital of France?", "category": "Geography", "answer": "Paris",
     "answer_type": "Single Answer"},
    {"problem": "Name two cities", "problem_category": "Geography", "answer": "Washington, D.C.; Paris",
     "answer_type": "Set Answer"},
    {"problem": "Two firms", "problem_category": "Finance", "answer": "x", "answer_items": ["A, Inc.", "B"],
     "answer_type": "Set Answer"},
]


def test_deepsearchqa_rows(tmp_path: Path) -> None:
    tasks = read_deepsearchqa(write(tmp_path / "d.jsonl", DSQA))
    assert [t.question_id for t in tasks] == ["dsqa-0", "dq-2", "dsqa-2", "dsqa-3"]
    assert tasks[0].expected_items == ("Jupiter", "Saturn", "Uranus")
    assert tasks[1].expected_items == ("Paris",) and tasks[1].answer_type == "Single Answer"
    assert tasks[2].expected_items == ("Washington, D.C.", "Paris")
    assert tasks[3].expected_items == ("A, Inc.", "B") and tasks[3].category == "Finance"


def test_deepsearchqa_filters(tmp_path: Path) -> None:
    tasks = read_deepsearchqa(write(tmp_path / "d.jsonl", DSQA))
    ids = lambda ts: [t.question_id for t in ts]  # noqa: E731
    assert ids(filter_tasks(tasks, categories="Geography")) == ["dq-2", "dsqa-2"]
    assert ids(filter_tasks(tasks, categories=["Science", "Finance"])) == ["dsqa-0", "dsqa-3"]
    assert ids(filter_tasks(tasks, answer_type="Single Answer")) == ["dq-2"]
    assert ids(filter_tasks(tasks, categories="Geography", answer_type="Set Answer")) == ["dsqa-2"]
    assert ids(filter_tasks(tasks, ids=["dsqa-3", "dq-2"])) == ["dq-2", "dsqa-3"]
    with pytest.raises(InvalidInputError, match="unknown categories"):
        filter_tasks(tasks, categories="Sciense")
    with pytest.raises(InvalidInputError, match="ids not among"):
        filter_tasks(tasks, ids=["nope"])


@pytest.mark.parametrize(("row", "message"), [
    ({"problem": "q", "problem_category": "c", "answer": "a", "answer_type": "List"}, ":2: answer_type"),
    ({"problem_category": "c", "answer": "a", "answer_type": "Set Answer"}, ":2: question"),
    ({"problem": "q", "problem_category": "c", "answer": "a", "answer_type": "Single Answer",
      "answer_items": ["a", "b"]}, ":2: row: a Single Answer has exactly one answer item"),
    ("[1, 2]", ":2: a line must be a JSON object"),
    ("{oops", ":2: not valid JSON"),
])
def test_deepsearchqa_errors_name_file_and_line(tmp_path: Path, row: Any, message: str) -> None:
    path = write(tmp_path / "d.jsonl", [DSQA[0], row])
    with pytest.raises(InvalidInputError, match=f"^{path}{message}"):
        read_deepsearchqa(path)


def test_deepsearchqa_duplicate_ids(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match=r"duplicate ids \['dq-2'\]"):
        read_deepsearchqa(write(tmp_path / "d.jsonl", [DSQA[1], DSQA[1]]))


# -- OpenBioRQ ------------------------------------------------------------------------------

CHECKLIST = [{"type": t, "weight": w, "text": f"criterion {i}"} for i, (t, w) in enumerate(
    [("must_mention", 3), ("must_acknowledge", 2), ("must_ground", 1), ("must_avoid", 2), ("must_mention", 1)])]
BIO = {"task_id": "pmc123#0", "question": "Does X treat Y?", "track": "clinical", "checklist": CHECKLIST}


def test_openbiorq_items(tmp_path: Path) -> None:
    (task,) = read_openbiorq(write(tmp_path / "b.jsonl", [BIO]))
    assert isinstance(task, GradingTask) and task.question_id == "pmc123#0" and task.category == "clinical"
    assert [c.weight for c in task.checklist] == [3, 2, 1, 2, 1] and task.checklist[3].type == "must_avoid"


@pytest.mark.parametrize(("edit", "message"), [
    (lambda r: r.update(task_id="pmc123"), ":1: task_id"),
    (lambda r: r.update(checklist=r["checklist"][:4]), ":1: checklist: Tuple should have at least 5 items"),
    (lambda r: r.update(checklist=r["checklist"] * 2), ":1: checklist: Tuple should have at most 8 items"),
    (lambda r: r["checklist"][0].update(weight=4), ":1: checklist.0.weight"),
    (lambda r: r["checklist"][0].update(weight=0), ":1: checklist.0.weight"),
    (lambda r: r["checklist"][1].update(type="must_praise"), ":1: checklist.1.type"),
    (lambda r: r["checklist"][1].update(text=""), ":1: checklist.1.text"),
])
def test_openbiorq_errors_name_file_and_line(tmp_path: Path, edit: Any, message: str) -> None:
    row = copy.deepcopy(BIO)
    edit(row)
    path = write(tmp_path / "b.jsonl", [row])
    with pytest.raises(InvalidInputError, match=f"^{path}{message}"):
        read_openbiorq(path)


def test_missing_file_is_invalid_input(tmp_path: Path) -> None:
    for kind in ("dr256", "deepsearchqa", "openbiorq"):
        with pytest.raises(InvalidInputError, match=r"nope\.jsonl"):
            load_tasks(kind, tmp_path / "nope.jsonl")  # type: ignore[arg-type]


def test_uncalibrated_rows_are_gradable_but_never_a_release(tmp_path: Path) -> None:
    """A construction pool's questions before calibration (tier null) are read for grading,
    with no tier in their tasks; the release checks (load_questions) refuse them naming file:line."""
    rows = copy.deepcopy(ROWS[:3])
    for row in rows:
        row["metadata"]["benchmark"]["calibration_tier"] = None
    path = write(tmp_path / "kept.jsonl", rows)
    tasks = read_dr256(path).tasks()
    assert [t.tier for t in tasks] == [None, None, None] and [t.reference for t in tasks] == [r["label"] for r in rows]
    problems = release_dr256.load_questions(path).problems
    assert len(problems) == 3 and problems[0].startswith(f"{path}:1: metadata.benchmark.calibration_tier: null")
    assert not release_dr256.load_questions(path, uncalibrated=True).problems
    rows[0]["metadata"]["benchmark"]["calibration_tier"] = "hard"  # any other value is still refused
    with pytest.raises(InvalidInputError, match=r"kept.jsonl:1: .*calibration_tier"):
        read_dr256(write(tmp_path / "kept.jsonl", rows))
