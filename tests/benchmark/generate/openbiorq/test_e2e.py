"""The documented end-to-end sequence (docs/GENERATE.md, "End to end on the fixture"), run exactly
as the page shows it (e2e.py reads the commands from the page): sources → extract … export →
three roster runs and three temperature-0 runs against a real ``drsearch serve`` → checklist
scoring → calibrate → difficulty → freeze --t0 → churn → the final export with the frozen core →
coverage with 0 replay misses. The page's two tables are compared with what the run wrote."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from drsearch.benchmark import read_openbiorq

from .conftest import jsonl
from .e2e import DOC, HEADING, documented_commands, prepare, run_commands, servers, strip_comment
from .roster import CORE, DISCRIMINATING, EASY, ROSTER, THAWED_AT_T0

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    work = tmp_path_factory.mktemp("e2e")
    prepare(work)
    with servers(work) as env:
        run_commands(documented_commands(), env)
    return work


def table(after: str, first_column: str) -> dict[str, list[str]]:
    """The rows of the first Markdown table on docs/GENERATE.md after ``after`` whose header starts
    with ``first_column``: first cell → the other cells."""
    text = DOC.read_text(encoding="utf-8").split(after, 1)[1]
    start = text.index(f"| {first_column} |")
    rows: dict[str, list[str]] = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def _count(cell: str) -> int:
    """'11 + 46 controls' → 57; '9 sources, 14 questions' → 9; '13 sampled' → 13."""
    m = re.match(r"(\d+)(?: \+ (\d+))?", cell)
    assert m, cell
    return int(m.group(1)) + int(m.group(2) or 0)


def test_the_sequence_is_what_the_page_shows() -> None:
    commands = documented_commands()
    assert sum(c.startswith("drsearch run ") for c in commands) == 6
    assert sum(c.startswith("drsearch score ") for c in commands) == 6  # six gradings
    assert sum(c.startswith("drsearch leaderboard ") for c in commands) == 1
    assert [c.split()[3] for c in commands if c.startswith("drsearch generate openbiorq")] == [
        "export", "difficulty", "freeze", "churn", "export", "coverage", "datasheet"]
    assert [strip_comment(c) for c in commands if strip_comment(c).endswith("&")] == [
        "drsearch serve --database followups.sqlite3 --port 8731 &"]


def test_the_stage_table_is_the_exports_manifest(work: Path) -> None:
    manifest = json.loads((work / "obrq/manifest.json").read_text())
    counts = {name: manifest["stages"][name]["counts"] for name in manifest["stage_order"]}
    rows = table("**On the fixture.**", "stage")
    assert list(rows) == list(counts)
    for stage, (cin, cout, rejected) in rows.items():
        documented = {check: int(n) for n, check in re.findall(r"(\d+) `(\w+)`", rejected.split(" (")[0])}
        assert (_count(cin), _count(cout), documented) == (counts[stage]["in"], counts[stage]["out"],
                                                          counts[stage]["rejected"]), stage


def _solved(work: Path, suffix: str) -> str:
    return " / ".join(str(json.loads((work / f"runs/{m}{suffix}/scores.json").read_text())["checklist"]["solved"]
                          ["count"]) for m in ROSTER)


def _behaviour(work: Path) -> str:
    b = [json.loads((work / f"runs/{m}/scores.json").read_text())["behaviour"] for m in ROSTER]

    def each(key: str) -> str:
        return " / ".join(str(x[key]["count"]) for x in b) + f" of {b[0][key]['n']}"

    def wrong(kind: str) -> str:
        return " / ".join(f"{x['source_not_cited'][kind]['count']} of {x['source_not_cited'][kind]['n']}"
                          for x in b)

    return (f"zero-tool {each('zero_tool')}; cite {each('cite')}; non-attempt {each('non_attempt')}; "
            f"source not cited (PMID) {wrong('pmid')}; source not cited (arXiv) {wrong('arxiv')}")


def _datasheet(work: Path) -> str:
    sheet = json.loads((work / "obrq/datasheet.json").read_text())
    c, ends = sheet["counts"], sheet["endpoints"]
    domains = ", ".join(f"{k} {v}" for k, v in sorted(c["domain"].items(), key=lambda kv: -kv[1]))
    tracks = ", ".join(f"{k} {v}" for k, v in sorted(c["track"].items(), key=lambda kv: -kv[1]))
    buckets = ", ".join(f"{k} {v}" for k, v in c["bucket"].items())
    models = sum(e["kind"] == "model" for e in ends)
    dated = sum(e["access_date_recorded"] for e in ends)
    licences = ", ".join(f"{k} {v}" for k, v in sheet["licences"]["by_licence"].items())
    return (f"{c['items']} items: {domains}; {tracks}; {buckets}; {len(ends)} endpoints ({models} models, "
            f"{len(ends) - models} evidence routes), {dated or 'no'} access date recorded; "
            f"licences {licences}")


def results(work: Path) -> dict[str, str]:
    """The page's second table, computed from the run's files."""
    cal = json.loads((work / "cal/roster.json").read_text())
    difficulty = json.loads((work / "obrq/difficulty.json").read_text())
    frozen = json.loads((work / "obrq/frozen_core.json").read_text())
    churn = json.loads((work / "obrq/churn.json").read_text())
    coverage = json.loads((work / "obrq/coverage.json").read_text())
    rows = [r["metadata"]["openbiorq"]["difficulty"] for r in jsonl(work / "obrq/items.jsonl")]
    n = len(rows)
    buckets = {b: sum(r["bucket"] == b for r in rows) for b in ("core", "discriminating", "easy")}
    shares = ", ".join(f"{b} {difficulty['buckets'][b]['rate_pct']} % "
                       f"[{difficulty['buckets'][b]['ci95_pct'][0]}, {difficulty['buckets'][b]['ci95_pct'][1]}]"
                       for b in ("core", "discriminating", "easy"))
    flips, deep = churn["boundary_flips"], churn["deep_flips"]
    agree = churn["fail_label_agreement"]
    runs = coverage["runs"]
    board = json.loads((work / "obrq/leaderboard.json").read_text())
    counts = ", ".join(f"{r['run'].removeprefix('runs/')} {r['whole']['count']}/{r['core']['count']}/"
                       f"{r['frozen_core']['count']}" for r in board["rows"])
    n_items = board["items"]
    return {
        "roster runs (`dr256`, temperature 0.6)": f"solved {_solved(work, '')} of {n} ({' / '.join(ROSTER)})",
        "temperature-0 runs (`preset-t0.json`)": f"solved {_solved(work, '-t0')} of {n}",
        "behaviour (`scores.json`, roster runs)": _behaviour(work),
        "calibrate": ", ".join(f"{b} {c}" for b, c in cal["counts"].items()),
        "difficulty": shares,
        "freeze --t0": f"{frozen['count']} of {cal['counts']['core']} core items (`frozen_core.txt` SHA-256 "
                       f"{frozen['frozen_core_sha256'][:8]}…)",
        "churn (roster against temperature 0)": (
            f"boundary flips {flips['yes']} of {flips['n']} ({flips['rate_pct']} %), deep flips {deep['yes']} of "
            f"{deep['n']}, fail-label agreement {agree['yes']} of {agree['n']}, core Jaccard "
            f"{churn['core_jaccard']['whole_roster']}"),
        "export": (f"{n} items: core {buckets['core']} (frozen {sum(r['frozen_core'] is True for r in rows)}), "
                   f"discriminating {buckets['discriminating']}, easy {buckets['easy']}; the export stage's settings "
                   "carry the frozen core's SHA-256"),
        "leaderboard (`drsearch leaderboard`, six runs)": (
            f"solved whole/core/frozen core: {counts} of {n_items['whole']}/{n_items['core']}/"
            f"{n_items['frozen_core']}"),
        "datasheet": _datasheet(work),
        "coverage": (f"{len(runs)} runs × {coverage['items']} items: {sum(len(r['missing']) for r in runs)} missing, "
                     f"{sum(len(r['differs']) for r in runs)} differing, "
                     f"{sum(r['replay_cache_misses'] for r in runs)} replay cache misses")}


def test_the_results_table_is_this_run(work: Path) -> None:
    documented = {step: cells[0] for step, cells in table(HEADING, "step").items()}
    assert documented == results(work)


def test_the_benchmark_is_frozen_graded_and_replayable(work: Path) -> None:
    obrq = work / "obrq"
    items = jsonl(obrq / "items.jsonl")
    ids = [r["task_id"] for r in items]
    core = [ids[i] for i in CORE]
    frozen = sorted(q for i, q in enumerate(ids) if i in CORE and i not in THAWED_AT_T0)
    assert (obrq / "frozen_core.txt").read_text() == "".join(f"{q}\n" for q in frozen)
    digest = hashlib.sha256((obrq / "frozen_core.txt").read_bytes()).hexdigest()
    record = json.loads((obrq / "frozen_core.json").read_text())
    assert record["frozen_core_sha256"] == digest and sorted(record["t0_runs"]) == list(ROSTER)
    manifest = json.loads((obrq / "manifest.json").read_text())
    assert manifest["stages"]["export"]["settings"]["frozen_core_sha256"] == digest
    assert manifest["stages"]["export"]["outputs"]["items.jsonl"] == hashlib.sha256(
        (obrq / "items.jsonl").read_bytes()).hexdigest()
    by_bucket = {i: items[i]["metadata"]["openbiorq"]["difficulty"] for i in range(len(items))}
    assert {by_bucket[i]["bucket"] for i in EASY} == {"easy"}
    assert {by_bucket[i]["bucket"] for i in DISCRIMINATING} == {"discriminating"}
    assert [by_bucket[i]["frozen_core"] for i in CORE] == [q in frozen for q in core]
    assert all(by_bucket[i]["frozen_core_sha256"] == digest for i in by_bucket)
    # grading reads the final export; every run over it replays offline with no miss
    assert [t.question_id for t in read_openbiorq(obrq / "items.jsonl")] == ids
    coverage = json.loads((obrq / "coverage.json").read_text())
    assert coverage["complete"] and coverage["items_sha256"] == manifest["stages"]["export"]["outputs"]["items.jsonl"]
    # the roster runs were recorded at temperature 0.6 and the freeze runs at 0
    temps = {run: json.loads((work / f"runs/{run}/run.json").read_text())["preset"]["temperature"]
             for run in [*ROSTER, *(f"{m}-t0" for m in ROSTER)]}
    assert temps == {**dict.fromkeys(ROSTER, 0.6), **{f"{m}-t0": 0 for m in ROSTER}}


def test_the_roster_searched_the_real_server(work: Path) -> None:
    """The roster runs and the openness stage asked the ``drsearch serve`` the page starts (its
    log names the database it served and its identity, which every roster run recorded)."""
    log = (work / "serve.log").read_text(errors="replace")
    identity = re.search(r"serving \S+followups\.sqlite3 \(identity ([0-9a-f]+)", log)
    assert identity, log[:400]
    for run in ROSTER:
        manifest = json.loads((work / f"runs/{run}/run.json").read_text())
        assert manifest["corpus_identity"] == identity.group(1) and manifest["search"].startswith("http://127.0.0.1:")
    searched = [t["accounting"]["tool_calls"].get("search", 0) for t in jsonl(work / "runs/roster-a/trajectories.jsonl")]
    assert searched == [1] * 11


def test_runs_are_calibrated_against_the_export_they_answered(work: Path) -> None:
    """The final export adds difficulty and frozen-core flags, so its SHA-256 is not the one the
    roster runs recorded: calibrating them against it is refused (exit 2), hence the copy the page
    makes first. The prompts are unchanged, so coverage replays the runs over it."""
    import contextlib
    import io

    from drsearch.tools.cli import main

    err = io.StringIO()
    with contextlib.chdir(work), contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        rc = main(["calibrate", "--questions", "obrq/items.jsonl", "--rule", "openbiorq", "--runs",
                   *(f"runs/{m}" for m in ROSTER), "--out", "cal/refused.json"])
    assert rc == 2 and "questions" in err.getvalue() and err.getvalue().count("\n") == 1, err.getvalue()
    assert not (work / "cal/refused.json").exists()
    prompts = {r["task_id"]: r["prompt"] for r in jsonl(work / "roster/items.jsonl")}
    assert {r["task_id"]: r["prompt"] for r in jsonl(work / "obrq/items.jsonl")} == prompts
    assert (work / "roster/items.jsonl").read_bytes() != (work / "obrq/items.jsonl").read_bytes()
