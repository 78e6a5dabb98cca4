"""Cost: `--prices` turns usage into USD in run.json and scores.json, and
`drsearch run --max-cost` stops starting episodes once the budget is spent (the rest
`not_run`, never answers; a rerun with a larger budget runs them).

A real `drsearch serve` over the sample corpus, the scripted agent model and the oracle
judge of drsearch.dev, each a real OpenAI-compatible HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from drsearch.agents.cost import load_prices
from drsearch.benchmark.report import read_runs
from drsearch.benchmark.report.tables import totals as report_totals
from drsearch.contract import InvalidInputError
from drsearch.dev.chat import serve_fake
from drsearch.dev.judge import serve_judge
from drsearch.tools.cli import main

from ..helpers import DATA
from .conftest import QUESTIONS

MODEL = "fake-model"
EXAMPLE = DATA / "prices.example.json"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(list(argv), out=out)
    return rc, out.getvalue(), err.getvalue()


def prices(tmp: Path, name: str = "prices.json", *, model: str = MODEL, per_mtok: float = 2.0,
           judge: str | None = "oracle", search: float | None = 0.25) -> Path:
    models = {model: {"input_usd_per_mtok": per_mtok, "output_usd_per_mtok": per_mtok * 4}}
    if judge:
        models[judge] = {"input_usd_per_mtok": 3, "output_usd_per_mtok": 15}
    body: dict[str, Any] = {"currency": "USD", "models": models, "source": "test prices"}
    if search is not None:
        body["tools"] = {"search": {"usd_per_call": search}}
    path = tmp / name
    path.write_text(json.dumps(body))
    return path


def run(out: Path, url: str, search: str, *extra: str) -> tuple[int, str, str]:
    return cli("run", "--questions", str(QUESTIONS), "--search", search, "--model", MODEL, "--base-url", url,
               "--out", str(out), "--quiet", "--json", "--max-attempts", "2", "--backoff", "0.01", *extra)


def records(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]


def expected_usd(recs: list[dict[str, Any]], per_mtok: Decimal, search: Decimal) -> float:
    """The cost computed here, independently, from the trajectories' accounting."""
    total = Decimal(0)
    for r in recs:
        acc = r["accounting"]
        if not acc:
            continue
        total += Decimal(acc["prompt_tokens"]) * per_mtok / 1_000_000
        total += Decimal(acc["completion_tokens"]) * per_mtok * 4 / 1_000_000
        total += Decimal(acc["tool_calls"].get("search", 0)) * search
    return float(total.quantize(Decimal("1e-9")))


def test_run_writes_its_cost_into_run_json(search_server: str, tmp_path: Path) -> None:
    price_file = prices(tmp_path)
    with serve_fake({}) as fake:
        rc, stdout, err = run(tmp_path / "run", fake.url, search_server, "--prices", str(price_file))
    assert rc == 0, err
    recs = records(tmp_path / "run")
    cost = json.loads((tmp_path / "run/run.json").read_text())["cost"]
    assert cost["total_usd"] == expected_usd(recs, Decimal(2), Decimal("0.25")) > 0
    model = cost["models"][MODEL]
    assert model["input_tokens"] == sum(r["accounting"]["prompt_tokens"] for r in recs)
    assert model["output_tokens"] == sum(r["accounting"]["completion_tokens"] for r in recs)
    searches = sum(r["accounting"]["tool_calls"]["search"] for r in recs)
    assert cost["tools"]["search"] == {"calls": searches, "total_usd": searches * 0.25, "usd_per_call": 0.25}
    assert cost["tools"]["open"]["usd_per_call"] is None  # not priced: free, and said so
    assert cost["prices"] == {"path": str(price_file),
                              "sha256": hashlib.sha256(price_file.read_bytes()).hexdigest()}
    assert cost["budget"] is None and cost["episodes"] == len(recs) == 12
    assert json.loads(stdout)["cost"] == cost


def test_status_table_prints_the_cost(search_server: str, tmp_path: Path) -> None:
    with serve_fake({}) as fake:
        rc, stdout, err = cli("run", "--questions", str(QUESTIONS), "--search", search_server, "--model", MODEL,
                              "--base-url", fake.url, "--out", str(tmp_path / "run"), "--quiet", "--limit", "2",
                              "--prices", str(prices(tmp_path)))
    assert rc == 0, err
    assert "cost " in stdout and " USD" in stdout and "prices " in stdout


def test_an_unpriced_model_is_one_line_and_nothing_is_written(search_server: str, tmp_path: Path) -> None:
    with serve_fake({}) as fake:
        rc, _, err = run(tmp_path / "run", fake.url, search_server,
                         "--prices", str(prices(tmp_path, model="another-model")))
    assert rc == 2
    assert err.count("\n") == 1 and "no price for the agent model 'fake-model'" in err
    assert not (tmp_path / "run").exists()
    assert not fake.requests  # no episode started


@pytest.mark.parametrize("body, why", [
    ("{", "not valid JSON"),
    ('{"models": {"m": {"input_usd_per_mtok": -1, "output_usd_per_mtok": 1}}}', "must be a finite number >= 0"),
    ('{"models": {"m": {"input_usd_per_mtok": 1}}}', "must have exactly"),
    ('{"models": {}, "currency": "EUR"}', "currency must be USD"),
    ('{"models": {}, "pricing": 1}', "unknown key(s) pricing"),
    ('{"models": {}, "tools": {"search": 0.1}}', "usd_per_call"),
])
def test_a_bad_price_file_is_exit_2(tmp_path: Path, body: str, why: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(body)
    rc, _, err = cli("run", "--questions", str(QUESTIONS), "--database", str(tmp_path / "x.sqlite3"),
                     "--model", MODEL, "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "run"),
                     "--prices", str(path))
    assert rc == 2 and why in err and err.count("\n") == 1, err


def test_max_cost_needs_prices(tmp_path: Path) -> None:
    rc, _, err = cli("run", "--questions", str(QUESTIONS), "--database", str(tmp_path / "x.sqlite3"),
                     "--model", MODEL, "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "run"),
                     "--max-cost", "1")
    assert rc == 2 and "--max-cost needs --prices" in err


def test_max_cost_rejects_a_negative_budget(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as e, contextlib.redirect_stderr(io.StringIO()):
        main(["run", "--questions", str(QUESTIONS), "--out", str(tmp_path), "--max-cost", "-1"])
    assert e.value.code == 2


def test_toml_price_file_and_the_bundled_example(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('source = "test"\n[models."m-1"]\ninput_usd_per_mtok = 0.1\noutput_usd_per_mtok = 0.4\n'
                    '[tools.search]\nusd_per_call = 0.001\n')
    table = load_prices(path)
    assert table.models["m-1"].output_usd_per_mtok == Decimal("0.4") and table.tools["search"] == Decimal("0.001")
    example = load_prices(EXAMPLE)  # labelled as an example, priced for the demo's scripted models
    assert "EXAMPLE" in json.loads(EXAMPLE.read_text())["source"]
    assert {"scripted-reader", "oracle"} <= set(example.models)
    with pytest.raises(InvalidInputError, match="no price for the judge model 'x'"):
        example.require("x", "judge")


def test_max_cost_stops_starting_episodes_and_a_larger_budget_resumes(search_server: str, tmp_path: Path) -> None:
    # 1 USD a prompt token: the first episode alone spends the 5 USD budget
    price_file = prices(tmp_path, per_mtok=1_000_000)
    capped, full = tmp_path / "capped", tmp_path / "full"
    with serve_fake({}) as fake:
        rc, stdout, err = run(capped, fake.url, search_server, "--prices", str(price_file), "--max-cost", "5")
        assert rc == 0, err  # a spent budget is not a failure
        summary = json.loads(stdout)
        assert summary["statuses"] == {"answered": 1, "not_run": 11}
        assert summary["outcomes"]["not_run"]["episodes"] == 11
        recs = records(capped)
        assert [r["status"] for r in recs] == ["answered"] + ["not_run"] * 11
        assert all(r["final_answer"] is None and r["accounting"] == {} and "--max-cost 5.0 USD spent" in r["reason"]
                   for r in recs[1:])
        cost = json.loads((capped / "run.json").read_text())["cost"]
        assert cost["budget"] == {"exhausted": True, "max_cost_usd": 5.0, "not_run": 11}
        assert cost["total_usd"] == expected_usd(recs, Decimal(1_000_000), Decimal("0.25")) >= 5
        asked = len(fake.requests)

        rc, _, err = run(capped, fake.url, search_server, "--prices", str(price_file), "--max-cost", "5")
        assert rc == 0 and len(fake.requests) == asked  # the same budget: still spent, nothing starts
        rc, stdout, err = run(capped, fake.url, search_server, "--prices", str(price_file), "--max-cost", "1e9")
        assert rc == 0, err
        summary = json.loads(stdout)
        assert summary["statuses"] == {"answered": 12} and summary["resumed"] == 1
        assert run(full, fake.url, search_server, "--prices", str(price_file))[0] == 0
    # continued, the run is the uninterrupted run, byte for byte
    assert (capped / "trajectories.jsonl").read_bytes() == (full / "trajectories.jsonl").read_bytes()
    cost = json.loads((capped / "run.json").read_text())["cost"]
    assert cost["budget"] == {"exhausted": False, "max_cost_usd": 1e9, "not_run": 0}
    assert {k: v for k, v in cost.items() if k != "budget"} == \
        {k: v for k, v in json.loads((full / "run.json").read_text())["cost"].items() if k != "budget"}


@pytest.fixture(scope="module")
def capped_run(search_server: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose budget stopped it after 3 of its 12 questions (concurrency 1)."""
    tmp = tmp_path_factory.mktemp("capped")
    price_file = prices(tmp, per_mtok=1_000_000)
    with serve_fake({}) as fake:
        # each episode costs well over 10 USD here; three fit under a 3-episode budget
        rc, _, err = run(tmp / "run", fake.url, search_server, "--prices", str(price_file), "--limit", "1")
        assert rc == 0, err
        one = json.loads((tmp / "run/run.json").read_text())["cost"]["total_usd"]
        rc, _, err = run(tmp / "run", fake.url, search_server, "--prices", str(price_file),
                         "--max-cost", str(one * 2.5))
        assert rc == 0, err
    return tmp / "run"


def test_score_reports_not_run_and_never_counts_it_wrong(capped_run: Path, tmp_path: Path) -> None:
    assert [r["status"] for r in records(capped_run)] == ["answered"] * 3 + ["not_run"] * 9
    with serve_judge() as judge:
        rc, stdout, err = cli("score", str(capped_run), "--questions", str(QUESTIONS), "--judge-model", "oracle",
                              "--base-url", judge.url, "--out", str(tmp_path / "scores.json"), "--quiet")
    assert rc == 0, err
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["not_run"]["count"] == 9 and len(scores["not_run"]["questions"]) == 9
    assert scores["n"] == 3 and scores["accuracy"]["n"] == 3  # the 9 are not in the denominator
    assert "not_run" not in scores["outcomes"]
    assert "not run" in stdout and "9" in stdout


def test_score_prices_the_runs_and_the_judge(capped_run: Path, tmp_path: Path) -> None:
    price_file = prices(tmp_path, per_mtok=1_000_000)
    argv = ["score", str(capped_run), "--questions", str(QUESTIONS), "--judge-model", "oracle",
            "--out", str(tmp_path / "scores.json"), "--quiet", "--prices", str(price_file),
            "--judge-cache", str(tmp_path / "judge.sqlite3")]
    with serve_judge() as judge:
        rc, stdout, err = cli(*argv, "--base-url", judge.url)
        assert rc == 0, err
        asked = len(judge.requests)
    first = (tmp_path / "scores.json").read_bytes()
    cost = json.loads(first)["cost"]
    run_json = json.loads((capped_run / "run.json").read_text())["cost"]
    agent = cost["agent"][0]
    assert agent["run"] == str(capped_run) and agent["total_usd"] == run_json["total_usd"]
    judge_cost = cost["judge"]
    # the oracle judge reports 50 prompt and 5 completion tokens a call; 3 answers judged
    assert asked == 3 and judge_cost["judgements"] == 3 and judge_cost["judgements_without_usage"] == 0
    assert judge_cost["models"]["oracle"]["input_tokens"] == 150
    assert judge_cost["models"]["oracle"]["output_tokens"] == 15
    assert judge_cost["total_usd"] == float((Decimal(150) * 3 + Decimal(15) * 15) / 1_000_000)
    assert cost["total_usd"] == float(Decimal(str(agent["total_usd"])) + Decimal(str(judge_cost["total_usd"])))
    assert "cost " in stdout and "judge " in stdout
    # re-graded from the judge cache alone: the same cost, the same bytes
    rc, _, err = cli(*argv, "--judge-cache-mode", "replay")
    assert rc == 0, err
    assert (tmp_path / "scores.json").read_bytes() == first


def test_score_refuses_an_unpriced_judge_before_judging(capped_run: Path, tmp_path: Path) -> None:
    with serve_judge() as judge:
        rc, _, err = cli("score", str(capped_run), "--questions", str(QUESTIONS), "--judge-model", "oracle",
                         "--base-url", judge.url, "--out", str(tmp_path / "scores.json"), "--quiet",
                         "--prices", str(prices(tmp_path, judge=None)))
        assert not judge.requests
    assert rc == 2 and "no price for the judge model 'oracle'" in err and err.count("\n") == 1
    assert not (tmp_path / "scores.json").exists()


def test_numeric_score_prices_the_run_only(capped_run: Path, tmp_path: Path) -> None:
    rc, _, err = cli("score", str(capped_run), "--questions", str(QUESTIONS), "--judge", "numeric",
                     "--out", str(tmp_path / "scores.json"), "--quiet",
                     "--prices", str(prices(tmp_path, judge=None, per_mtok=1_000_000)))
    assert rc == 0, err
    cost = json.loads((tmp_path / "scores.json").read_text())["cost"]
    assert cost["judge"] is None and cost["total_usd"] == cost["agent"][0]["total_usd"] > 0


def test_the_report_counts_not_run_apart_and_shows_the_cost(capped_run: Path, tmp_path: Path) -> None:
    """`drsearch report` agrees with scores.json: the 9 episodes --max-cost never started are
    "not run", outside the accuracy's denominator, and the run's cost is the run.json total."""
    run_dir = tmp_path / "run"
    shutil.copytree(capped_run, run_dir)
    with serve_judge() as judge:
        rc, _, err = cli("score", str(run_dir), "--questions", str(QUESTIONS), "--judge-model", "oracle",
                         "--base-url", judge.url, "--quiet")
    assert rc == 0, err
    rc, _, err = cli("report", str(run_dir), "--out", str(tmp_path / "report"))
    assert rc == 0, err
    scores = json.loads((run_dir / "scores.json").read_text())
    totals = report_totals(read_runs([run_dir])[0])
    assert totals["accuracy"]["n"] == scores["accuracy"]["n"] == 3
    assert totals["accuracy"]["correct"] == scores["accuracy"]["count"]
    assert totals["status"]["not run"] == 9 and totals["questions"] == 12
    assert totals["cost"] == json.loads((run_dir / "run.json").read_text())["cost"]["total_usd"]
    page = (tmp_path / "report" / "index.html").read_text()
    assert "not run" in page
