"""The whole generator on the shipped fixture: ``drsearch kg serve`` and the rule-based
generator model on 127.0.0.1; the named rejections, the exported rows, record → replay."""

from __future__ import annotations

import io
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsearch.agents import read_questions
from drsearch.dev.chat import serve_rules
from drsearch.dev.drbencher import MODEL, RULES, SOLVER, SOLVER2
from drsearch.server import ServeProcess

from ....helpers import DATA, REPO
from ..test_stages import assert_same_tree
from .kgserver import kg_serve
from .test_kg_stages import generate, rows, write_config

TEMPLATES = ["pendulum_drift", "population_density", "date_difference"]  # one per domain: no draw decides


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, Any]]:
    with kg_serve() as kg, serve_rules(RULES) as llm:
        yield kg, llm


def config_for(tmp: Path, kg: str, llm_url: str) -> Path:
    return write_config(tmp, kg, templates=TEMPLATES,
                        generator={"base_url": llm_url, "model": MODEL, "seed": 7, "temperature": 0.0})


@pytest.fixture(scope="module")
def run(servers: tuple[str, Any], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], Path]:
    kg, llm = servers
    tmp = tmp_path_factory.mktemp("drbencher")
    config = config_for(tmp, kg, llm.url)
    rc, summary, err = generate(config, tmp / "gen")
    assert rc == 0, err
    assert summary is not None
    return tmp / "gen", summary, config


def rejected(out: Path) -> dict[str, tuple[str, str, str]]:
    return {c["key"]: (c["stage"], c["check"], c["reason"]) for c in rows(out / "candidates.jsonl")}


def test_the_named_rejections(run: tuple[Path, dict[str, Any], Path]) -> None:
    out, _, _ = run
    r = rejected(out)
    assert r["Q1726:population_density"][:2] == ("validate", "multi_hop_flattening")
    assert r["Q1726:population_density"][2] == ("fact 'It lies on a river that flows into the Danube.' uses P206 → "
                                                "Isar → P403 → Danube but does not name Isar")
    # the Zugspitze's range and municipality have local ids (no chains); its article supports two facts
    assert r["Q3375:pendulum_drift"] == ("clues", "too_few_grounded_facts", "2 distinct grounded fact(s) from "
                                         "distinct chains < 3 (3 facts written)")
    # Tokyo's clues (hosted the 1964 Olympic Games, twinned with a city) are true of Innsbruck too
    assert r["Q1490:population_density"] == ("validate", "not_unique", "2 entities satisfy the clues as the "
                                             "question states them (Q1490, Q1735)")
    assert "Q1735:population_density" not in r  # Innsbruck's own clues add the Inn: unique
    assert r["Q1741:population_density"] == ("validate", "unmapped_relation",
                                             "relation phrase(s) without a used fact: 'produced by'")
    # the Matterhorn and Mont Blanc: both in Italy, in the Alps (their ranges have local ids: no chains)
    assert r["Q1374:pendulum_drift"] == ("validate", "not_unique", "2 entities satisfy the clues as the "
                                         "question states them (Q1374, Q583)")
    assert r["Q43512:pendulum_drift"][:2] == ("clues", "unparseable_reply")
    # Austria-Hungary's three clues state one triple ("linked to Vienna") through three chains: one fact
    assert r["Q28513:date_difference"] == ("clues", "too_few_grounded_facts", "1 distinct grounded fact(s) from "
                                           "distinct chains < 3 (3 facts written)")


def test_the_everest_question_is_exported_with_its_gold_and_cci(run: tuple[Path, dict[str, Any], Path]) -> None:
    out, summary, _ = run
    questions, _ = read_questions(out / "questions.jsonl")  # the DR-256 shape drsearch run reads
    from drsearch.benchmark.datasets.dr256 import load_questions

    assert load_questions(out / "questions.jsonl").problems == []  # the DR-256 schema drsearch score reads
    assert [q.index for q in questions] == list(range(len(questions)))
    by_qid = {json.loads(line)["metadata"]["qid"]: json.loads(line) for line in
              (out / "questions.jsonl").read_text().splitlines()}
    row = by_qid["drbencher-Q513:pendulum_drift"]
    meta = row["metadata"]["drbencher"]
    assert row["label"] == "120.00 s/day" and meta["unit"] == "s/day"
    assert meta["cci"] == {"E": 1, "P": 1, "total": 2}
    assert meta["entities"] == [{"aliases": ["Chomolungma", "Everest", "Sagarmatha"], "label": "Mount Everest",
                                 "qid": "Q513", "role": "answer"}]
    assert meta["properties"][0]["value"] == "8848.86" and meta["article_docid"] == "kg-Q513"
    assert meta["uniqueness"]["count"] == 1 and len(meta["grounded_chains"]) >= 3
    assert all(c["verdict"] in ("grounded", "unsupported", "triple_not_in_chain") for c in meta["clues"])
    text = row["prompt"][1]["content"]
    assert "Everest" not in text and "8848" not in text and "8,848" not in text
    # density questions have P = 2
    density = [r for r in by_qid.values() if r["metadata"]["drbencher"]["template"] == "population_density"]
    assert all(r["metadata"]["drbencher"]["cci"]["P"] == 2 for r in density)
    # every candidate is kept or rejected with a reason, at every stage
    for name, counts in summary["counts"].items():
        assert counts["in"] == counts["out"] + counts["rejected_total"] or name == "discover", name
    # export judges nothing and writes every candidate that reached it: in == out == the questions
    questions = (out / "questions.jsonl").read_text().count("\n")
    assert summary["counts"]["export"]["in"] == summary["counts"]["export"]["out"] == questions > 0
    support = [json.loads(line) for line in (out / "support_docs.jsonl").read_text().splitlines()]
    assert {"kg-Q513", "kg-Q1490"} <= {d["docid"] for d in support}


def test_record_then_replay_regenerates_the_directory_byte_identically(
        servers: tuple[str, Any], run: tuple[Path, dict[str, Any], Path], tmp_path: Path) -> None:
    out, _, config = run
    cache = tmp_path / "cache.sqlite3"
    shutil.copy(out / "cache.sqlite3", cache)
    again = tmp_path / "again"
    rc, _, err = generate(config, again, "--cache-mode", "replay", "--cache", str(cache))
    assert rc == 0, err
    shutil.copy(cache, again / "cache.sqlite3")
    assert_same_tree(out, again)


def test_an_unreachable_model_endpoint_is_exit_2_and_nothing_written(servers: tuple[str, Any],
                                                                     tmp_path: Path) -> None:
    kg, _ = servers
    out = tmp_path / "gen"
    config = config_for(tmp_path, kg, "http://127.0.0.1:9/v1")
    # Still retried (a refused connection is transient), with short waits: 6 tries at 1 s
    # doubling would wait 31 s for the same one line.
    rc, _, err = generate(config, out, "--max-attempts", "3", "--backoff", "0.05")
    assert rc == 2 and "the model endpoint is not usable" in err and not out.exists()
    assert "gave up after 3 attempts" in err
    # the endpoint comes from the config: the error names its field, not a flag the verb lacks
    assert f"{config.name}: generator.base_url http://127.0.0.1:9/v1:" in err and "--base-url" not in err


def test_the_diversity_filter_removes_near_duplicate_questions(run: tuple[Path, dict[str, Any], Path]) -> None:
    out, summary, _ = run
    report = json.loads((out / "diversity.json").read_text())
    assert report["min_distance"] == 0.30 and report["embedding"]["route"] == "onnx-int8"
    removed = [c for c in rows(out / "candidates.jsonl") if c["check"] == "diversity"]
    assert [c["key"] for c in removed] == report["removed"]  # in removal order, each with its reason
    assert all(c["reason"].startswith("δ = ") and "< 0.3 to " in c["reason"] for c in removed)
    exported = [json.loads(line)["metadata"]["qid"].removeprefix("drbencher-")
                for line in (out / "questions.jsonl").read_text().splitlines()]
    assert exported == report["survivors"]
    counts = summary["counts"]["diversity"]
    assert counts["in"] == counts["out"] + counts["rejected_total"] == summary["counts"]["validate"]["out"]


def test_v1_discards_what_the_closed_book_model_already_solves(servers: tuple[str, Any], tmp_path: Path) -> None:
    kg, llm = servers
    config = json.loads(config_for(tmp_path, kg, llm.url).read_text())
    config["v1"] = {"enabled": True, "k": 3, "tau": 0.5, "model": {"base_url": llm.url, "model": SOLVER}}
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "gen"
    rc, summary, err = generate(path, out, "--until", "v1")
    assert rc == 0, err
    assert summary is not None and summary["counts"]["v1"]["rejected"] == {"v1_closed_book_solved": 1}
    r = rejected(out)
    assert r["Q513:pendulum_drift"] == ("v1", "v1_closed_book_solved", "closed-book accuracy 3/3 > 0.5")
    kept = rows(out / "v1.jsonl")
    assert kept and all(c["v1"] == {"bucket": "kept", "k": 3, "solved": 0, "tau": 0.5} for c in kept)
    solver_calls = [b for b in llm.requests if b["model"] == SOLVER and "seed" in b]  # not the probe
    assert len(solver_calls) == 3 * (len(kept) + 1) and len({b["seed"] for b in solver_calls}) == len(solver_calls)


def v2_config(tmp: Path, kg: str, llm_url: str, **v2: Any) -> Path:
    config = json.loads(config_for(tmp, kg, llm_url).read_text())
    config["v2"] = {"enabled": True, "k": 2, "tau": 0.5, "model": {"base_url": llm_url, "model": SOLVER2}, **v2}
    path = tmp / "v2.json"
    path.write_text(json.dumps(config))
    return path


def assert_v2_discarded_everest(out: Path, summary: dict[str, Any] | None) -> None:
    assert summary is not None and summary["counts"]["v2"]["rejected"] == {"v2_tool_augmented_solved": 1}
    assert rejected(out)["Q513:pendulum_drift"] == ("v2", "v2_tool_augmented_solved",
                                                   "drbencher-v2 accuracy 2/2 > 0.5")
    kept = rows(out / "v2.jsonl")
    assert kept and all(c["v2"] == {"bucket": "kept", "k": 2, "solved": 0, "tau": 0.5} for c in kept)


def test_v2_starts_drsearch_serve_of_the_support_corpus_and_discards_what_the_model_solves(
        servers: tuple[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``v2.search_url``: the stage serves GEN_DIR/support.sqlite3 itself (a real ``drsearch
    serve`` on 127.0.0.1) and stops it; a replay asks no server and regenerates the directory."""
    import httpx

    from drsearch.agents import HttpSearcher

    requests: list[tuple[str, str, str]] = []
    real = HttpSearcher._request

    def spy(self: HttpSearcher, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
        r = real(self, method, path, body)
        requests.append((str(self._client.base_url), f"{method} {path}", r.headers["x-drsearch-identity"]))
        return r

    monkeypatch.setattr(HttpSearcher, "_request", spy)
    kg, llm = servers
    path = v2_config(tmp_path, kg, llm.url)
    out = tmp_path / "gen"
    rc, summary, err = generate(path, out, "--until", "v2")
    assert rc == 0, err
    assert_v2_discarded_everest(out, summary)
    # /health first (the identity check), then every attempt's search, all to one local server
    assert requests[0][1] == "GET /health" and len({(u, i) for u, _, i in requests}) == 1
    assert [r for _, r, _ in requests].count("POST /search") >= 2
    base = requests[0][0]
    assert base.startswith("http://127.0.0.1:")
    with pytest.raises(httpx.TransportError):  # stopped with the stage
        httpx.get(base + "/health", timeout=2)
    cache = tmp_path / "cache.sqlite3"
    shutil.copy(out / "cache.sqlite3", cache)
    again = tmp_path / "again"
    requests.clear()
    rc, _, err = generate(path, again, "--until", "v2", "--cache-mode", "replay", "--cache", str(cache))
    assert rc == 0, err
    assert requests == []  # offline
    shutil.copy(cache, again / "cache.sqlite3")
    assert_same_tree(out, again)


def test_v2_searches_the_drsearch_serve_the_config_names_and_replays_with_it_down(
        servers: tuple[str, Any], tmp_path: Path) -> None:
    """``v2.search_url``: the episodes search that server over HTTP (its access log shows the
    calls); the replay, with the server stopped, is offline and byte-identical."""
    kg, llm = servers
    path = v2_config(tmp_path, kg, llm.url, search_url="http://127.0.0.1:9")
    out = tmp_path / "gen"
    rc, _, err = generate(path, out, "--until", "v1")  # the support corpus, to serve
    assert rc == 0, err
    log = tmp_path / "serve.log"
    with ServeProcess(out / "support.sqlite3", "--access-log", log=log) as server:
        path = v2_config(tmp_path, kg, llm.url, search_url=server.url)
        rc, summary, err = generate(path, out, "--until", "v2")
    assert rc == 0, err
    assert summary is not None and summary["ran"] == ["v2"]  # the URL is no setting: earlier stages skip
    assert_v2_discarded_everest(out, summary)
    assert log.read_text().count('"POST /search HTTP/1.1" 200') >= 2
    cache = tmp_path / "cache.sqlite3"
    shutil.copy(out / "cache.sqlite3", cache)
    again = tmp_path / "again"
    rc, _, err = generate(path, again, "--until", "v2", "--cache-mode", "replay", "--cache", str(cache))
    assert rc == 0, err
    assert (again / "v2.jsonl").read_bytes() == (out / "v2.jsonl").read_bytes()


def test_an_unreachable_v2_search_server_is_exit_2_and_nothing_written(servers: tuple[str, Any],
                                                                       tmp_path: Path) -> None:
    kg, llm = servers
    out = tmp_path / "gen"
    rc, _, err = generate(v2_config(tmp_path, kg, llm.url, search_url="http://127.0.0.1:9"), out)
    assert rc == 2 and err.count("\n") == 1, err
    assert "v2.search_url http://127.0.0.1:9: the search server is not usable" in err and not out.exists()


def test_an_enabled_filter_without_a_model_is_a_config_error(servers: tuple[str, Any], tmp_path: Path) -> None:
    kg, llm = servers
    config = json.loads(config_for(tmp_path, kg, llm.url).read_text())
    for key in ("v1", "v2"):
        path = tmp_path / f"{key}.json"
        path.write_text(json.dumps({**config, key: {"enabled": True}}, indent=1))
        rc, _, err = generate(path, tmp_path / "gen")
        assert rc == 2 and f"{key}: an enabled filter needs a model" in err and not (tmp_path / "gen").exists()


def test_drsearch_score_numeric_reports_entity_identification_and_accuracy_by_cci(
        run: tuple[Path, dict[str, Any], Path], tmp_path: Path) -> None:
    from drsearch.tools.cli import main

    from ....tools.test_cli_score import episode_record, write_run

    out, _, _ = run
    questions = [json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()]
    episodes = []
    for q in questions:
        meta, qid = q["metadata"]["drbencher"], q["metadata"]["qid"]
        right = meta["entities"][0]["qid"] == "Q513"
        e = episode_record(qid, q["metadata"]["benchmark"]["index"], "answered", q["label"] if right else "0")
        if right:  # the trace names the withheld entity; every other attempt names none
            e["messages"] = [{"content": "search: Mount Everest elevation", "role": "assistant"}]
        episodes.append(e)
    run_dir = write_run(tmp_path / "run", episodes)
    buf = io.StringIO()
    assert main(["score", str(run_dir), "--questions", str(out / "questions.jsonl"), "--judge", "numeric"], buf) == 0
    block = json.loads((run_dir / "scores.json").read_text())["drbencher"]
    n = len(questions)
    assert block["attempts"] == n and block["entity_identification"]["identified"] == 1
    assert block["entity_identification"]["rate"] == 1 / n
    levels = {q["metadata"]["drbencher"]["cci"]["total"] for q in questions}
    assert set(block["accuracy_by_cci"]) == {str(c) for c in levels}
    assert sum(v["correct"] for v in block["accuracy_by_cci"].values()) == 1
    trend = block["cci_trend"]["jonckheere_terpstra"]
    assert "p_decreasing" in trend or "error" in trend
    assert block["benchmark"]["all"]["questions"] == n and set(block["by_domain"]) >= {"all"}


def test_the_stage_counts_of_the_three_template_run(run: tuple[Path, dict[str, Any], Path]) -> None:
    """This module's run (three templates, one per domain): its counts, pinned (the docs show the
    documented command's, test_the_documented_command_gives_the_stage_counts_docs_show)."""
    _, summary, _ = run
    counts = summary["counts"]
    table = {s: (counts[s]["in"], counts[s]["out"], counts[s]["rejected"]) for s in
             ("discover", "chains", "gold", "clues", "compose", "validate", "v1", "v2", "diversity", "export")}
    assert table == {
        "discover": (25, 25, {}), "chains": (25, 12, {"too_few_chains": 13}), "gold": (12, 12, {}),
        "clues": (12, 7, {"too_few_grounded_facts": 4, "unparseable_reply": 1}), "compose": (7, 7, {}),
        "validate": (7, 3, {"multi_hop_flattening": 1, "not_unique": 2, "unmapped_relation": 1}),
        "v1": (3, 3, {}), "v2": (3, 3, {}), "diversity": (3, 3, {}), "export": (3, 3, {})}


def docs_stage_table() -> dict[str, tuple[int, int, dict[str, int]]]:
    """docs/GENERATE.md's "A run on the fixture" table: stage → (in, out, {check: n})."""
    text = (REPO / "docs/GENERATE.md").read_text(encoding="utf-8")
    section = text.split("### A run on the fixture\n", 1)[1].split("\n### ", 1)[0]
    table: dict[str, tuple[int, int, dict[str, int]]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or cells[0] == "stage" or set(cells[0]) <= {"-"}:
            continue
        rejected = {} if cells[3] == "—" else {k: int(n) for k, n in (r.rsplit(" ", 1) for r in cells[3].split("; "))}
        table[cells[0]] = (int(cells[1]), int(cells[2]), rejected)
    return table


def test_the_documented_command_gives_the_stage_counts_docs_show(servers: tuple[str, Any], tmp_path: Path) -> None:
    """``drsearch generate drbencher --config data/kg/gen.json`` as docs/GENERATE.md shows it (only the
    endpoint URLs are the test servers'): every stage's counts are the docs table's."""
    kg, llm = servers
    shipped = json.loads((DATA / "kg/gen.json").read_text())
    config = write_config(tmp_path, kg, generator={**shipped["generator"], "base_url": llm.url})
    assert {k: v for k, v in json.loads(config.read_text()).items() if k not in ("kg", "articles", "generator")} == \
        {k: v for k, v in shipped.items() if k not in ("kg", "articles", "generator")}
    rc, summary, err = generate(config, tmp_path / "gen")
    assert rc == 0, err
    assert summary is not None
    counts = summary["counts"]
    table = docs_stage_table()
    assert list(table) == ["discover", "chains", "gold", "clues", "compose", "validate", "v1", "v2", "diversity",
                           "export"]
    assert {s: (counts[s]["in"], counts[s]["out"], counts[s]["rejected"]) for s in table} == table
    exported = (tmp_path / "gen/questions.jsonl").read_text().splitlines()
    assert table["export"] == (len(exported), len(exported), {})


def test_a_two_entity_question_describes_both_entities_and_validates_each(servers: tuple[str, Any],
                                                                           tmp_path: Path) -> None:
    """The great-circle distance needs two entities (E = 2): the partner's own chains and grounded
    clues go to compose, both stay withheld, and validation checks the partner's clues too (here
    Vienna's "produced by" clue, the responder's unmapped relation, rejects Innsbruck's question)."""
    kg, llm = servers
    config = write_config(tmp_path, kg, templates=["haversine_distance"],
                          generator={"base_url": llm.url, "model": MODEL, "seed": 7, "temperature": 0.0})
    out = tmp_path / "gen"
    rc, _, err = generate(config, out, "--until", "validate")
    assert rc == 0, err
    golds = {g["cid"]: g for g in rows(out / "gold.jsonl")}
    inn = golds["Q1735:haversine_distance"]
    assert [(e["qid"], e["role"]) for e in inn["entities"]] == [("Q1735", "answer"), ("Q1741", "partner")]
    assert inn["cci"]["E"] == 2 and len(inn["entities"][1]["chains"]) >= 3
    composed = {c["cid"]: c for c in rows(out / "composed.jsonl")}["Q1735:haversine_distance"]
    partner = composed["entities"][1]
    assert partner["article_docid"] == "kg-Q1741" and len({tuple(f["triple"]) for f in partner["clues"]
                                                          if f["verdict"] == "grounded"}) >= 3
    q = composed["question"]
    assert "The entity is linked to Austria." in q and "The second entity is produced by the" in q
    assert "Vienna" not in q and "Innsbruck" not in q
    r = rejected(out)
    assert r["Q1735:haversine_distance"] == ("validate", "unmapped_relation",
                                             "relation phrase(s) without a used fact: 'produced by'")
    # a partner without three chains of its own cannot be described: no question
    assert r["Q1726:haversine_distance"][:2] == ("gold", "too_few_chains")
    assert r["Q1726:haversine_distance"][2].startswith("the partner Q64 has ")
