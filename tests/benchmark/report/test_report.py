"""``drsearch report RUN [RUN …] --out DIR``: the page, its rows as CSV/Parquet, the checks on its
input (one line, exit 2), and what it must never show (a blocked document)."""

from __future__ import annotations

import csv
import json
import shutil
import sys
from pathlib import Path

import pytest

from drsearch.benchmark import compare_runs, read_graded
from drsearch.benchmark.report import CALL_COLUMNS, EPISODE_COLUMNS, write_report
from drsearch.contract import InvalidInputError
from drsearch.dev.judge import serve_judge
from drsearch.tools.cli import main

from .conftest import QUESTIONS, Runs, blocked_docids
from .synthetic import openbiorq_run, synthetic_run


def _report(capsys: pytest.CaptureFixture[str], out: Path, *runs: Path | str) -> tuple[int, str, str]:
    rc = main(["report", *map(str, runs), "--out", str(out)])
    got = capsys.readouterr()
    return rc, got.out, got.err


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _page_data(html: str) -> dict:
    blob = html.split('<script type="application/json" id="report-data">', 1)[1].split("</script>", 1)[0]
    return json.loads(blob)


def test_two_runs_give_the_page_the_rows_and_the_paired_comparison(graded_runs: Runs, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _report(capsys, tmp_path / "rep", graded_runs.blocked, graded_runs.open)
    assert rc == 0, err
    assert f"wrote {tmp_path / 'rep/index.html'} (24 episode(s)" in out
    html = (tmp_path / "rep/index.html").read_text()
    # self-contained: no address the browser would fetch (the CSP forbids any as well)
    assert "<link" not in html and "src=" not in html and "@import" not in html and "url(" not in html
    assert "default-src 'none'" in html
    # the summary: accuracy with its Wilson interval, every status, tokens, tool calls, time, cost
    for line in ("accuracy (Wilson 95%)", "status: answered", "status: empty", "status: budget",
                 "status: model error", "status: infrastructure", "tool calls (total)", "prompt tokens",
                 "time (s, episodes summed)", "<td>cost</td><td class=n>—</td>"):
        assert line in html, line
    scores = json.loads((graded_runs.blocked / "scores.json").read_text())
    acc = scores["accuracy"]
    assert f"{acc['rate']:.3f} [{acc['ci'][0]:.3f}, {acc['ci'][1]:.3f}] ({acc['count']}/{acc['n']})" in html
    # groups the sample's questions carry: tier, bucket, difficulty (as plots and tables)
    assert "Accuracy by tier" in html and "Accuracy by bucket" in html and "Accuracy by difficulty" in html
    assert html.count("<svg") >= 5
    # the paired comparison is drsearch compare's
    paired = compare_runs(read_graded(graded_runs.blocked / "scores.graded.jsonl"),
                          read_graded(graded_runs.open / "scores.graded.jsonl"))
    assert f"exact McNemar p = {paired['mcnemar_p']:.4g}" in html
    for qid in paired["flips"]["correct_to_incorrect"] + paired["flips"]["incorrect_to_correct"]:
        assert qid in html.split("Paired comparison", 1)[1].split("<h2>Questions", 1)[0]
    # one row per episode, one per tool call; CSV and Parquet hold the same rows
    episodes, calls = _csv(tmp_path / "rep/episodes.csv"), _csv(tmp_path / "rep/tool_calls.csv")
    assert list(episodes[0]) == list(EPISODE_COLUMNS) and list(calls[0]) == list(CALL_COLUMNS)
    assert len(episodes) == 24 and {e["run"] for e in episodes} == {"run-a", "run-b"}
    assert len(calls) == sum(int(e["tool_calls"]) for e in episodes)
    gold = {json.loads(line)["metadata"]["qid"]: json.loads(line)["label"]
            for line in QUESTIONS.read_text().splitlines()}
    assert all(e["gold"] == gold[e["qid"]] for e in episodes)
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(tmp_path / "rep/episodes.parquet")
    assert table.num_rows == 24 and table.column_names == list(EPISODE_COLUMNS)
    assert table.column("correct").to_pylist() == [e["correct"] == "True" for e in episodes]
    assert pq.read_table(tmp_path / "rep/tool_calls.parquet").num_rows == len(calls)


def test_a_trajectory_has_each_turn_call_document_the_leak_turn_and_the_verdict(
        graded_runs: Runs, tmp_path: Path) -> None:
    write_report([graded_runs.open], tmp_path)
    data = _page_data((tmp_path / "index.html").read_text())
    scores = json.loads((graded_runs.open / "scores.json").read_text())
    graded = {g.question_id: g for g in read_graded(graded_runs.open / "scores.graded.jsonl")}
    episodes = {json.loads(line)["qid"]: json.loads(line)
                for line in (graded_runs.open / "trajectories.jsonl").read_text().splitlines()}
    leaked = 0
    for row, turns in zip(data["episodes"], data["trajectories"], strict=True):
        episode = episodes[row["qid"]]
        assert len(turns) == len(episode["turns"])
        assert [c["name"] for t in turns for c in t["calls"]] == [c["name"] for c in episode["tool_calls"]]
        search = turns[0]["calls"][0]
        assert search["name"] == "search" and search["arguments"] == episode["tool_calls"][0]["arguments"]
        assert search["documents"] and all(set(d) == {"docid", "title", "url"} for d in search["documents"])
        assert row["final_answer"] == episode["final_answer"] and row["outcome"] == graded[row["qid"]].outcome
        audit = scores["leak_audit"]["questions"].get(row["qid"], [{}])[0].get("first_leak")
        assert row["leak_turn"] == (audit and audit["turn"]) and row["leak_docid"] == (audit and audit["docid"])
        if audit:  # the delivering document is among those the leak turn returned
            leaked += 1
            docs = [d["docid"] for c in turns[audit["turn"]]["calls"] for d in c["documents"]]
            assert audit["docid"] in docs
    assert leaked == scores["leak_audit"]["totals"]["with_leak"] > 0


def test_a_blocked_document_never_appears(graded_runs: Runs, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    blocked = blocked_docids()
    assert _report(capsys, tmp_path / "a", graded_runs.blocked)[0] == 0
    assert _report(capsys, tmp_path / "b", graded_runs.open)[0] == 0
    for name in ("index.html", "episodes.csv", "tool_calls.csv"):
        text = (tmp_path / "a" / name).read_text()
        assert not [d for d in blocked if d in text], name
    # the same questions searched with nothing blocked do reach them: the check above can fail
    assert all(d in (tmp_path / "b/index.html").read_text() for d in blocked)


def test_the_same_runs_give_the_same_bytes_through_any_path(graded_runs: Runs, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    links = tmp_path / "links"
    links.mkdir()
    (links / "run-a").symlink_to(graded_runs.blocked)
    (links / "run-b").symlink_to(graded_runs.open)
    assert _report(capsys, tmp_path / "one", graded_runs.blocked, graded_runs.open)[0] == 0
    assert _report(capsys, tmp_path / "two", links / "run-a", links / "run-b")[0] == 0
    names = sorted(p.name for p in (tmp_path / "one").iterdir())
    assert names == ["episodes.csv", "episodes.parquet", "index.html", "tool_calls.csv", "tool_calls.parquet"]
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "two" / name).read_bytes(), name


def test_a_questions_file_gone_is_a_warning_and_given_again_restores_the_gold(
        graded_runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run"
    shutil.copytree(graded_runs.blocked, run)
    scores = json.loads((run / "scores.json").read_text())
    scores["grading"]["questions"] = str(tmp_path / "moved/questions.jsonl")
    (run / "scores.json").write_text(json.dumps(scores))
    rc, _, err = _report(capsys, tmp_path / "rep", run)
    assert rc == 0 and err.startswith("drsearch: warning: ") and "give --questions FILE" in err
    assert {r["gold"] for r in _csv(tmp_path / "rep/episodes.csv")} == {""}
    assert main(["report", str(run), "--out", str(tmp_path / "rep2"), "--questions", str(QUESTIONS)]) == 0
    assert capsys.readouterr().err == ""
    assert all(r["gold"] for r in _csv(tmp_path / "rep2/episodes.csv"))


def test_json_says_what_was_written(graded_runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(graded_runs.blocked), "--out", str(tmp_path), "--json"]) == 0
    written = json.loads(capsys.readouterr().out)
    assert written["html"] == str(tmp_path / "index.html") and written["episodes"] == 12
    assert str(tmp_path / "episodes.csv") in written["files"] and written["warnings"] == []


def test_without_pyarrow_the_rows_are_csv_and_the_cli_says_how_to_get_parquet(
        graded_runs: Runs, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError, as when not installed
    rc, out, _ = _report(capsys, tmp_path, graded_runs.blocked)
    assert rc == 0 and "pip install 'drsearch[report]'" in out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episodes.csv", "index.html", "tool_calls.csv"]


def test_three_runs_give_every_pair_its_comparison(graded_runs: Runs, tmp_path: Path) -> None:
    third = tmp_path / "run-c"
    shutil.copytree(graded_runs.blocked, third)
    write_report([graded_runs.blocked, graded_runs.open, third], tmp_path / "rep")
    html = (tmp_path / "rep/index.html").read_text()
    for pair in ("run-a (A) vs run-b (B)", "run-a (A) vs run-c (B)", "run-b (A) vs run-c (B)"):
        assert pair in html, pair
    # a run against its own copy: nothing flips, p = 1
    same = html.split("run-a (A) vs run-c (B)", 1)[1].split("<h3>", 1)[0]
    assert "exact McNemar p = 1</p>" in same and "correct → incorrect (0)" in same


def test_cost_is_read_from_run_json_when_there(graded_runs: Runs, tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(graded_runs.blocked, run)
    manifest = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**manifest, "cost": {"total": 1.25, "currency": "USD"}}))
    write_report([run], tmp_path / "rep")
    assert "<td>cost</td><td class=n>1.2500</td>" in (tmp_path / "rep/index.html").read_text()


def test_every_way_an_episode_ends_is_counted(tmp_path: Path) -> None:
    endings = {1: "empty", 2: "budget", 3: "turn_cap", 4: "model_error", 5: "infra_error", 6: "missing"}
    run, _ = synthetic_run(tmp_path / "syn", 10, endings=endings)
    write_report([run], tmp_path / "rep")
    html = (tmp_path / "rep/index.html").read_text()
    for status, count in (("answered", 4), ("empty", 1), ("turn cap", 1), ("budget", 1), ("model error", 1),
                          ("infrastructure", 1), ("no episode", 1)):
        assert f"<td>status: {status}</td><td class=n>{count}</td>" in html, status
    rows = {r["qid"]: r for r in _csv(tmp_path / "rep/episodes.csv")}
    assert rows["q-synthetic-00006"]["outcome"] == "missing_episode" and rows["q-synthetic-00006"]["turns"] == "0"
    assert rows["q-synthetic-00002"]["status"] == "budget" and rows["q-synthetic-00002"]["correct"] == "False"


def test_drbencher_runs_get_accuracy_by_cci_and_the_e_by_p_grid(tmp_path: Path) -> None:
    run, _ = synthetic_run(tmp_path / "drb", 30, drbencher=True)
    write_report([run], tmp_path / "rep")
    html = (tmp_path / "rep/index.html").read_text()
    assert "Accuracy by CCI (DrBencher)" in html and "accuracy by E × P (DrBencher)" in html
    assert "Accuracy by domain" in html
    rows = _csv(tmp_path / "rep/episodes.csv")
    assert {(r["cci_E"], r["cci_P"]) for r in rows} == {(str(e), str(p)) for e in (1, 2, 3) for p in (1, 2)}
    # each grid cell's count is the number of its questions
    assert html.count("/5</text>") >= 6


def test_openbiorq_runs_get_the_bucket_and_domain_views_with_checklist_scores(tmp_path: Path) -> None:
    with serve_judge() as judge:
        run = openbiorq_run(tmp_path / "obrq", 12, judge.url)
    write_report([run], tmp_path / "rep")
    html = (tmp_path / "rep/index.html").read_text()
    assert "Accuracy by bucket" in html and "Accuracy by domain" in html
    rows = _csv(tmp_path / "rep/episodes.csv")
    assert {r["domain"] for r in rows} == {"oncology", "immunology", "neurology"}
    assert {r["bucket"] for r in rows} == {"core", "easy"}
    graded = {g.question_id: g for g in read_graded(run / "scores.graded.jsonl")}
    assert all(float(r["score"]) == graded[r["qid"]].score for r in rows)
    core = [graded[r["qid"]] for r in rows if r["bucket"] == "core"]
    mean = sum(g.score or 0.0 for g in core) / len(core)
    solved = sum(g.correct for g in core)
    assert f"({solved}/{len(core)}); mean checklist score {mean:.3f}" in html


@pytest.mark.parametrize("case", ["not a run", "no scores", "other questions", "wrong questions file",
                                  "out is a file"])
def test_bad_input_is_one_line_and_exit_2(case: str, graded_runs: Runs, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out, extra = tmp_path / "rep", []
    if case == "not a run":
        runs = [tmp_path]
    elif case == "no scores":
        shutil.copytree(graded_runs.blocked, tmp_path / "run", ignore=shutil.ignore_patterns("scores*"))
        runs = [tmp_path / "run"]
    elif case == "other questions":
        runs = [graded_runs.blocked, synthetic_run(tmp_path / "syn", 5)[0]]
        capsys.readouterr()
    elif case == "wrong questions file":
        runs, extra = [graded_runs.blocked], ["--questions", str(synthetic_run(tmp_path / "syn", 5)[1])]
        capsys.readouterr()
    else:
        runs = [graded_runs.blocked]
        out.write_text("")
    rc = main(["report", *map(str, runs), "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("drsearch: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err
    if case != "out is a file":
        assert not out.exists()  # nothing written for input that cannot be reported


def test_the_library_raises_the_one_error_type(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="not a run directory"):
        write_report([tmp_path], tmp_path / "out")
