"""The openness stage against real servers on 127.0.0.1: a ``drsearch serve`` of follow-up
records (the offline route) and a loopback server in the shapes of Europe PMC, ClinicalTrials.gov
v2 and Semantic Scholar; 34 injected resolved controls and 12 open negatives; a verdict citing an
id outside the bundle becomes unknown; the bundle's hashes are those of the responses; replay is
offline and byte-identical."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from drsearch.agents import read_questions
from drsearch.benchmark import read_openbiorq
from drsearch.benchmark.generate.openbiorq.evidence import RateLimiter
from drsearch.benchmark.generate.openbiorq.export import NO_REPORT
from drsearch.benchmark.generate.openbiorq.openness import verdict
from drsearch.benchmark.generate.openbiorq.replies import OpennessReply
from drsearch.contract import InvalidInputError
from drsearch.dev.chat import serve_fake, serve_rules
from drsearch.dev.judge import serve_judge
from drsearch.tools.cli import main

from ..test_stages import assert_same_tree
from .conftest import generate, jsonl
from .evidence_servers import api_shapes, control_rows, drsearch_serve
from .rules import RULES
from .test_difficulty import calibration

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("evidence")
    controls = tmp / "controls.jsonl"
    controls.write_text("".join(json.dumps(c) + "\n" for c in control_rows()[0]))
    with serve_rules(RULES) as llm, drsearch_serve(tmp) as corpus, api_shapes() as (api, log):
        yield {"api": api, "controls": controls, "corpus": corpus, "llm": llm.url, "log": log, "tmp": tmp}


def evidence_args(s: dict[str, Any], *, apis: bool = True, controls: bool = True) -> list[str]:
    args = ["--evidence-corpus", s["corpus"], "--api-min-interval", "0"]
    if apis:
        args += ["--europepmc-url", f"{s['api']}/europepmc", "--ctgov-url", f"{s['api']}/ctgov",
                 "--s2-url", f"{s['api']}/s2"]
    return args + (["--inject-controls", str(s["controls"])] if controls else [])


@pytest.fixture(scope="module")
def generated(servers: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    out = servers["tmp"] / "obrq"
    rc, summary, err = generate("all", out, *evidence_args(servers), base_url=servers["llm"])
    assert rc == 0, err
    assert summary is not None
    return out, summary


def test_the_export_warns_of_items_labelled_answered(generated: tuple[Path, dict[str, Any]],
                                                    servers: dict[str, Any]) -> None:
    """The export keeps every item with its label: a resolved one would be served as open unless the
    reader filters, so the CLI says how many and which (a rerun that skips every stage says it again)."""
    out, _ = generated
    answered = [r["task_id"] for r in jsonl(out / "items.jsonl")
                if r["metadata"]["openbiorq"]["openness"]["label"] == "answered"]
    rc, summary, err = generate("all", out, *evidence_args(servers), base_url=servers["llm"])
    assert rc == 0 and summary is not None and summary["ran"] == []
    (line,) = [x for x in err.splitlines() if "labelled answered" in x]
    assert line.startswith(f"drsearch generate openbiorq: warning: {len(answered)} exported item(s) are labelled "
                           f"answered by the openness stage ({', '.join(answered[:3])}, …)")
    assert len(answered) == 4


def test_controls_are_all_caught_and_open_negatives_never_flagged(generated: tuple[Path, dict[str, Any]]) -> None:
    out, summary = generated
    assert summary["counts"]["openness"] == {"in": 11 + 46, "out": 11 + 46, "rejected": {}, "rejected_total": 0}
    report = json.loads((out / "openness.json").read_text())
    controls = report["controls"]
    assert controls["recall"] == {"caught": 34, "n": 34} and controls["missed_ids"] == []
    assert controls["false_positives"] == {"count": 0, "n": 12} and controls["false_positive_ids"] == []
    assert report["n"] == 11 and report["labels"] == {"answered": 4, "open": 6, "partially_answered": 0,
                                                      "unknown": 1}
    assert report["changed"]["count"] == 5 and report["unknown"]["count"] == 1


def test_the_membership_audit_runs_last(generated: tuple[Path, dict[str, Any]]) -> None:
    out, summary = generated
    assert summary["ran"][-3:] == ["openness", "membership", "export"]
    report = json.loads((out / "membership.json").read_text())
    spans = {r["task_id"]: r["longest_span"] for r in report["items"]}
    assert len(spans) == 11
    # the rule-based refiner copies the source's clause: "early anticoagulation lowers recurrent stroke at
    # 90 days in patients with atrial fibrillation" is 14 words verbatim
    assert spans["PMID:31000001#0"] == 14
    assert report["within_max_span"]["yes"] == sum(s <= 5 for s in spans.values())


def test_the_export_reads_for_grading_and_for_drsearch_run(generated: tuple[Path, dict[str, Any]]) -> None:
    out, summary = generated
    assert summary["counts"]["export"] == {"in": 11, "out": 11, "rejected": {}, "rejected_total": 0}
    tasks = read_openbiorq(out / "items.jsonl")
    questions, _ = read_questions(out / "items.jsonl")
    assert [t.question_id for t in tasks] == [q.qid for q in questions]
    assert [q.index for q in questions] == list(range(11))
    row = next(r for r in jsonl(out / "items.jsonl") if r["task_id"] == "NCT04000010#0")
    meta = row["metadata"]["openbiorq"]
    assert meta["openness"]["label"] == "unknown" and meta["openness"]["rejected_ids"] == ["corpus:d-not-retrieved"]
    assert meta["source"] == {"id_kind": "nct", "source_id": "NCT04000010", "title": (
        "Long-acting cabotegravir for HIV prevention in adolescents (registration)"),
        "url": "https://trials.example/NCT04000010", "year": 2022}
    assert meta["rubric_sha256"] == row["rubric_sha256"] and meta["taxonomy"] == "clinical_medicine"
    assert row["prompt"][-1]["content"] == f"Question: {row['question']}\nAnswer:"
    edited = out.parent / "edited.jsonl"  # a rubric edited after the export is refused by grading
    row["checklist"][0]["weight"] = 1 if row["checklist"][0]["weight"] != 1 else 2
    edited.write_text(json.dumps(row) + "\n")
    with pytest.raises(InvalidInputError, match="checklist changed after it was frozen"):
        read_openbiorq(edited)


def test_the_export_carries_the_difficulty_bucket_once_the_report_exists(
        generated: tuple[Path, dict[str, Any]], servers: dict[str, Any], tmp_path: Path) -> None:
    """No difficulty.json: every row says why its bucket is absent. After ``difficulty``, a rerun of
    ``export`` (only it reruns) puts each item's bucket and roster scores in the row; an item the
    calibration does not cover says so."""
    recorded, _ = generated
    for row in jsonl(recorded / "items.jsonl"):
        assert row["metadata"]["openbiorq"]["difficulty"] == {"absent_because": NO_REPORT, "bucket": None}
    out = tmp_path / "obrq"
    shutil.copytree(recorded, out)
    ids = [r["task_id"] for r in jsonl(out / "items.jsonl")]
    scores = {q: ((0.1, 0.2, 0.3) if n % 2 else (0.9, 0.1, 0.1)) for n, q in enumerate(ids[:-1])}
    cal = tmp_path / "cal.json"
    counts = {"core": sum(n % 2 for n in range(len(ids) - 1)), "discriminating": sum(1 - n % 2 for n in
                                                                                 range(len(ids) - 1))}
    made = calibration(scores, frozen={ids[1]}, counts=counts)
    cal.write_text(json.dumps({k: v for k, v in made.items() if k != "_path"}))
    rc, _, err = generate("difficulty", out, "--calibration", str(cal), sources=None)
    assert rc == 0, err
    rc, summary, err = generate("export", out, *evidence_args(servers), "--cache-mode", "replay",
                                base_url=servers["llm"])
    assert rc == 0, err
    assert summary is not None and summary["ran"] == ["export"]
    rows = {r["task_id"]: r["metadata"]["openbiorq"]["difficulty"] for r in jsonl(out / "items.jsonl")}
    # the calibration's own flag (ids[1]) is not the frozen core: only frozen_core.txt is, and there is none yet
    assert rows[ids[1]] == {"bucket": "core", "frozen_core": None, "frozen_core_sha256": None,
                            "questions_sha256": "q" * 64, "reason": None,
                            "scores": {"m1": 0.1, "m2": 0.2, "m3": 0.3}, "threshold": 0.5}
    assert rows[ids[0]]["bucket"] == "discriminating" and rows[ids[0]]["scores"] == {"m1": 0.9, "m2": 0.1,
                                                                                      "m3": 0.1}
    assert rows[ids[-1]] == {"absent_because": "not in difficulty.json (its calibration covers other items)",
                             "bucket": None}
    export = [*evidence_args(servers), "--cache-mode", "replay"]
    other = tmp_path / "other.json"  # freeze from a calibration whose t=0 runs freeze ids[3], not ids[1]
    other.write_text(json.dumps({k: v for k, v in calibration(scores, frozen={ids[3]}, counts=counts).items()
                                 if k != "_path"}))
    rc, _, err = generate("freeze", out, "--calibration", str(other), sources=None)
    assert rc == 0, err
    assert (out / "frozen_core.txt").read_text() == f"{ids[3]}\n"
    rc, summary, err = generate("export", out, *export, base_url=servers["llm"])
    assert rc == 0 and summary is not None and summary["ran"] == ["export"], err
    digest = hashlib.sha256((out / "frozen_core.txt").read_bytes()).hexdigest()
    rows = {r["task_id"]: r["metadata"]["openbiorq"]["difficulty"] for r in jsonl(out / "items.jsonl")}
    assert (rows[ids[3]]["frozen_core"], rows[ids[1]]["frozen_core"], rows[ids[0]]["frozen_core"]) == (True, False, None)
    assert rows[ids[3]]["frozen_core_sha256"] == digest
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stages"]["export"]["settings"]["frozen_core_sha256"] == digest
    exported = (out / "items.jsonl").read_bytes()
    (out / "frozen_core.txt").write_text(f"{ids[1]}\n{ids[3]}\n")  # edited after freeze: refused, export kept
    rc, _, err = generate("export", out, *export, base_url=servers["llm"])
    assert rc == 2 and "is not the" in err and "that freeze recorded" in err and err.count("\n") == 1
    (out / "frozen_core.json").write_text(json.dumps({"frozen_core_sha256": hashlib.sha256(
        f"{ids[0]}\n".encode()).hexdigest(), "questions_sha256": "q" * 64}))
    (out / "frozen_core.txt").write_text(f"{ids[0]}\n")  # a discriminating item cannot be frozen core
    rc, _, err = generate("export", out, *export, base_url=servers["llm"])
    assert rc == 2 and "not core in difficulty.json" in err and err.count("\n") == 1
    assert (out / "items.jsonl").read_bytes() == exported  # nothing already written is lost
    (out / "frozen_core.txt").unlink()
    (out / "frozen_core.json").unlink()
    (out / "difficulty.json").write_text("{}")  # a report without per-item buckets is refused, not ignored
    rc, _, err = generate("export", out, *evidence_args(servers), "--cache-mode", "replay", base_url=servers["llm"])
    assert rc == 2 and "no per-item buckets" in err and err.count("\n") == 1


def test_the_exported_items_run_and_grade(generated: tuple[Path, dict[str, Any]], servers: dict[str, Any],
                                          tmp_path: Path) -> None:
    """items.jsonl → ``drsearch run`` (scripted agent over the follow-up corpus) → ``drsearch score
    --dataset openbiorq`` (the checklist judge): the frozen rubrics grade as they are."""
    out, _ = generated
    rows = jsonl(out / "items.jsonl")
    first = rows[0]["checklist"]
    full = " ".join(c["text"] for c in first if c["type"] != "must_avoid")  # meets every criterion, avoids the claim
    scripts = {0: [{"content": full}], 1: [{"content": "I do not know."}]}
    run = tmp_path / "run"
    buf = io.StringIO()
    with serve_fake(scripts) as agent, contextlib.redirect_stdout(buf):
        rc = main(["run", "--questions", str(out / "items.jsonl"), "--database",
                   str(servers["tmp"] / "followups.sqlite3"), "--model", "agent-m", "--base-url", agent.url,
                   "--out", str(run), "--quiet", "--max-attempts", "1"], out=buf)
    assert rc == 0, buf.getvalue()
    with serve_judge() as judge, contextlib.redirect_stdout(buf):
        rc = main(["score", str(run), "--dataset", "openbiorq", "--questions", str(out / "items.jsonl"),
                   "--judge-model", "judge-m", "--base-url", judge.url, "--out", str(tmp_path / "scores.json")],
                  out=buf)
    assert rc == 0, buf.getvalue()
    scores = json.loads((tmp_path / "scores.json").read_text())
    assert scores["n"] == 11 and scores["checklist"]["solved"]["count"] == 1
    behaviour = scores["behaviour"]  # items 0 and 1 answered without a tool call, the rest searched first
    assert (behaviour["zero_tool"]["count"], behaviour["zero_tool"]["n"]) == (2, 11)
    assert behaviour["non_attempt"]["count"] == 0 and behaviour["cite"]["count"] == 0
    graded = {g["question_id"]: g for g in jsonl(tmp_path / "scores.graded.jsonl")}  # beside --out
    assert graded[rows[0]["task_id"]]["score"] == 1.0 and graded[rows[1]["task_id"]]["score"] < 0.5
    # coverage: every item has a trajectory that an offline replay reproduces (the agent server is gone)
    obrq = tmp_path / "obrq"
    shutil.copytree(out, obrq)
    rc, _, err = generate("coverage", obrq, "--runs", str(run), sources=None)
    assert rc == 0, err
    report = json.loads((obrq / "coverage.json").read_text())
    assert report["complete"] and report["items"] == 11
    assert report["runs"][0] | {"run": None, "trajectories_sha256": None} == {
        "differs": [], "missing": [], "replay_cache_misses": 0, "run": None, "trajectories_sha256": None}
    partial = tmp_path / "partial"  # a run without one item's trajectory is incomplete: exit 1, listed
    shutil.copytree(run, partial)
    lines = (partial / "trajectories.jsonl").read_text().splitlines(keepends=True)
    (partial / "trajectories.jsonl").write_text("".join(line for line in lines
                                                        if json.loads(line)["qid"] != rows[5]["task_id"]))
    rc, _, err = generate("coverage", obrq, "--runs", str(run), str(partial), sources=None)
    assert rc == 1 and f"coverage incomplete in {partial}" in err
    report = json.loads((obrq / "coverage.json").read_text())
    assert not report["complete"] and report["runs"][1]["missing"] == [rows[5]["task_id"]]
    rc, _, err = generate("coverage", obrq, "--runs", str(tmp_path), sources=None)
    assert rc == 2 and "not a run directory" in err


def test_a_verdict_citing_an_id_outside_the_bundle_is_unknown(generated: tuple[Path, dict[str, Any]]) -> None:
    out, _ = generated
    rows = {r["task_id"]: r for r in jsonl(out / "openness.jsonl")}
    assert len(rows) == 11  # the items only: controls are reported, not emitted
    o = rows["NCT04000010#0"]["openness"]
    assert (o["judge_status"], o["label"]) == ("answered", "unknown")
    assert o["rejected_ids"] == ["corpus:d-not-retrieved"] and o["evidence_ids"] == []
    assert o["unknown_because"] == "cites 1 id(s) outside the evidence bundle"
    assert rows["PMID:31000001#0"]["openness"]["evidence_ids"] == ["corpus:fu-anticoag"]  # the engine's record
    assert rows["NCT04000003#0"]["openness"]["evidence_ids"] == ["ctgov:NCT04000003"]  # registration results
    assert rows["PMID:31000007#0"]["openness"]["evidence_ids"] == ["europepmc:MED:39990001"]  # citing article
    assert rows["arXiv:2301.00005#0"]["openness"]["evidence_ids"] == ["s2:s2-aa01"]  # citing paper
    assert [t.question_id for t in read_openbiorq(out / "openness.jsonl")] == list(rows)


def test_the_bundle_records_every_response_with_its_sha256(generated: tuple[Path, dict[str, Any]],
                                                           servers: dict[str, Any]) -> None:
    out, _ = generated
    bundles = {b["task_id"]: b for b in jsonl(out / "evidence.jsonl")}
    assert len(bundles) == 11 + 46
    trial = bundles["NCT04000003#0"]
    assert [(r["route"], r["method"]) for r in trial["responses"]] == [("corpus", "POST"), ("corpus", "POST"),
                                                                       ("ctgov", "GET")]
    ctgov = trial["responses"][2]
    assert ctgov["url"] == f"{servers['api']}/ctgov/studies/NCT04000003?format=json" and ctgov["ok"]
    assert ctgov["body_sha256"] == hashlib.sha256(httpx.get(ctgov["url"]).content).hexdigest()
    search = trial["responses"][0]
    live = httpx.post(search["url"], json=search["request"]).content
    assert search["body_sha256"] == hashlib.sha256(live).hexdigest()
    assert trial["evidence"][-1] == {"id": "ctgov:NCT04000003", "route": "ctgov", "snippet": (
        "overall status COMPLETED; completion 2023-05; results posted: yes"), "title": (
        "Intermittent fasting for adults with type 2 diabetes (registration)"), "url": None}
    row = next(r for r in jsonl(out / "openness.jsonl") if r["task_id"] == "NCT04000003#0")
    from drsearch.agents.canonical import sha256_json

    assert row["openness"]["bundle_sha256"] == sha256_json(trial)


def test_replay_is_offline_and_byte_identical(generated: tuple[Path, dict[str, Any]], servers: dict[str, Any],
                                              tmp_path: Path) -> None:
    recorded, _ = generated
    cache = tmp_path / "cache.sqlite3"
    shutil.copy(recorded / "cache.sqlite3", cache)
    before = len(servers["log"])
    replayed = tmp_path / "replayed"
    rc, summary, err = generate("all", replayed, *evidence_args(servers), "--cache-mode", "replay",
                                "--cache", str(cache), base_url=servers["llm"])
    assert rc == 0, err
    assert summary is not None and summary["ran"][-3:] == ["openness", "membership", "export"]
    assert len(servers["log"]) == before  # no API request: the evidence came from the cache
    assert_same_tree(recorded, replayed, ignore={"timings.json", "cache.sqlite3"})


def test_the_offline_route_alone_needs_no_api(servers: dict[str, Any], tmp_path: Path) -> None:
    before = len(servers["log"])
    rc, summary, err = generate("openness", tmp_path / "o", *evidence_args(servers, apis=False, controls=False),
                                base_url=servers["llm"])
    assert rc == 0, err
    assert summary is not None and summary["stopped_after"] == "openness"
    assert len(servers["log"]) == before
    report = json.loads((tmp_path / "o/openness.json").read_text())
    assert report["controls"] is None and report["n"] == 11
    routes = {r["route"] for b in jsonl(tmp_path / "o/evidence.jsonl") for r in b["responses"]}
    assert routes == {"corpus"}


def test_an_unreachable_api_stops_the_stage_with_one_line(servers: dict[str, Any], tmp_path: Path) -> None:
    rc, _, err = generate("openness", tmp_path / "o", "--evidence-corpus", servers["corpus"],
                          "--ctgov-url", "http://127.0.0.1:9/ctgov", "--api-max-attempts", "2", "--api-backoff", "0",
                          base_url=servers["llm"])
    assert rc == 1 and err.count("\n") == 1
    assert "evidence route ctgov: GET http://127.0.0.1:9/ctgov/studies/NCT04000003?format=json: ConnectError" in err
    assert "(after 2 attempt(s))" in err  # a transport error is tried again, then named


@pytest.mark.parametrize(("status", "ids", "label", "rejected", "why"), [
    ("answered", ["e1"], "answered", [], None),
    ("open", ["e1", "e2"], "open", [], None),
    ("answered", ["e1", "x9"], "unknown", ["x9"], "cites 1 id(s) outside the evidence bundle"),
    ("open", [], "unknown", [], "cites no evidence"),
    ("unknown", [], "unknown", [], None),
])
def test_verdicts_are_grounded_in_the_bundle(status: str, ids: list[str], label: str, rejected: list[str],
                                             why: str | None) -> None:
    bundle = {"evidence": [{"id": "e1"}, {"id": "e2"}], "responses": []}
    v = verdict(OpennessReply(status=status, evidence_ids=tuple(ids)), bundle)  # type: ignore[arg-type]
    assert (v["label"], v["rejected_ids"], v["unknown_because"], v["judge_status"]) == (label, rejected, why, status)


def test_the_rate_limiter_spaces_live_calls() -> None:
    limiter = RateLimiter(0.05)
    t0 = time.monotonic()
    for _ in range(4):
        limiter.wait()
    assert time.monotonic() - t0 >= 0.15  # three gaps of at least 50 ms


def _rerun_openness(generated: tuple[Path, dict[str, Any]], servers: dict[str, Any], tmp_path: Path, api: str,
                    *extra: str) -> tuple[Path, int, str]:
    """The recorded directory copied, its openness stage rerun with ClinicalTrials.gov at ``api``."""
    out = tmp_path / "obrq"
    shutil.copytree(generated[0], out)
    rc, _, err = generate("openness", out, "--evidence-corpus", servers["corpus"], "--ctgov-url", f"{api}/ctgov",
                          "--api-min-interval", "0", *extra, base_url=servers["llm"])
    return out, rc, err


def test_a_rate_limited_api_is_asked_again_after_its_retry_after(generated: tuple[Path, dict[str, Any]],
                                                                  servers: dict[str, Any], tmp_path: Path) -> None:
    """ClinicalTrials.gov answers 429 (Retry-After: 0) twice, then 503 without one: the client waits
    and asks again (4 requests for the first trial), the bundle records the one answer that counted,
    and every request names drsearch in its User-Agent."""
    from .evidence_servers import api_server

    with api_server({"ctgov": [(429, "0"), (429, "0"), (503, None)]}) as api:
        out, rc, err = _rerun_openness(generated, servers, tmp_path, api.url, "--api-backoff", "0")
        assert rc == 0, err
        # 3 refusals and the answer for NCT04000003#0, then one request for NCT04000003#1 (the same trial)
        assert api.log[:4] == ["/ctgov/studies/NCT04000003?format=json"] * 4
        assert sum("NCT04000003" in p for p in api.log) == 5
        assert all(a.startswith("drsearch/") and "openbiorq" in a for a in api.agents)
    bundle = next(b for b in jsonl(out / "evidence.jsonl") if b["task_id"] == "NCT04000003#0")
    ctgov = [r for r in bundle["responses"] if r["route"] == "ctgov"]
    assert len(ctgov) == 1 and ctgov[0]["ok"]
    assert bundle["evidence"][-1]["id"] == "ctgov:NCT04000003"


def test_an_api_that_stays_busy_or_refuses_stops_the_stage_with_one_line(
        generated: tuple[Path, dict[str, Any]], servers: dict[str, Any], tmp_path: Path) -> None:
    from .evidence_servers import api_server

    with api_server({"ctgov": [(503, "0")] * 3}) as api:
        _, rc, err = _rerun_openness(generated, servers, tmp_path, api.url, "--api-max-attempts", "3")
        assert rc == 1 and err.count("\n") == 1 and "HTTP 503 (after 3 attempt(s))" in err, err
        assert len(api.log) == 3
    shutil.rmtree(tmp_path / "obrq")
    with api_server({"ctgov": [(400, None)]}) as api:  # the request's fault: not asked again
        _, rc, err = _rerun_openness(generated, servers, tmp_path, api.url)
        assert rc == 1 and "NCT04000003?format=json: HTTP 400" in err and len(api.log) == 1, err


def test_the_clients_ask_in_the_public_apis_shapes(generated: tuple[Path, dict[str, Any]],
                                                    servers: dict[str, Any]) -> None:
    """Europe PMC: ``MED/{pmid}/citations`` with format=json, page (from 1) and pageSize; ClinicalTrials.gov
    v2: ``studies/{nct}`` with format=json; Semantic Scholar: ``paper/arXiv:{id}/citations`` with fields the
    API knows, and limit. The loopback server refuses anything else with 400, as the services do."""
    urls = [r["url"] for b in jsonl(generated[0] / "evidence.jsonl") for r in b["responses"] if r["route"] != "corpus"]
    api = servers["api"]
    assert f"{api}/europepmc/MED/31000007/citations?format=json&page=1&pageSize=5" in urls
    assert f"{api}/ctgov/studies/NCT04000003?format=json" in urls
    assert f"{api}/s2/paper/arXiv:2301.00005/citations?fields=title,year,externalIds&limit=5" in urls
    assert httpx.get(f"{api}/s2/paper/arXiv:2301.00005/citations?fields=title,nonsense").status_code == 400
    paged = httpx.get(f"{api}/s2/paper/arXiv:2301.00005/citations?fields=title&limit=1&offset=0").json()
    assert paged == {"data": [{"citingPaper": {"paperId": "s2-aa01", "title": (
        "Predicted aligned error and measured affinity of designed binders: no correlation yet established")}}],
        "offset": 0}


def test_a_semantic_scholar_key_is_sent_to_it_alone_and_recorded_nowhere(
        generated: tuple[Path, dict[str, Any]], servers: dict[str, Any], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from .evidence_servers import api_server

    out = tmp_path / "obrq"
    shutil.copytree(generated[0], out)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with api_server() as api:
        args = ["--evidence-corpus", servers["corpus"], "--api-min-interval", "0", "--s2-api-key-env",
                "DRSEARCH_TEST_S2_KEY", *(f"--{n}-url={api.url}/{n}" for n in ("europepmc", "ctgov", "s2"))]
        monkeypatch.delenv("DRSEARCH_TEST_S2_KEY", raising=False)
        rc, _, err = generate("openness", out, *args, base_url=servers["llm"])
        assert rc == 2 and "DRSEARCH_TEST_S2_KEY is not set" in err and err.count("\n") == 1
        assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before and api.log == []
        monkeypatch.setenv("DRSEARCH_TEST_S2_KEY", "s2-secret-key-123")
        rc, _, err = generate("openness", out, *args, base_url=servers["llm"])
        assert rc == 0, err
        assert {api_name: key for api_name, key in api.keys} == {"ctgov": None, "europepmc": None,
                                                                  "s2": "s2-secret-key-123"}
    assert not [p for p in out.rglob("*") if p.is_file() and b"s2-secret-key-123" in p.read_bytes()]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stages"]["openness"]["settings"]["s2_api_key_env"] == "DRSEARCH_TEST_S2_KEY"


@pytest.mark.parametrize(("source_id", "paper"), [
    ("arXiv:2301.00005", "2301.00005"), ("arXiv:2301.00005v2", "2301.00005"),
    ("arXiv:math.GT/0309136v1", "math/0309136"), ("arXiv:hep-th/9901001", "hep-th/9901001")])
def test_semantic_scholar_is_asked_for_the_bare_arxiv_id(source_id: str, paper: str) -> None:
    """The graph API finds a paper by its bare arXiv id: a source's version suffix or subject class is dropped."""
    from drsearch.benchmark.generate.openbiorq.evidence import s2_citations_url

    assert s2_citations_url("http://127.0.0.1:1/s2/", source_id, 5) == (
        f"http://127.0.0.1:1/s2/paper/arXiv:{paper}/citations?fields=title,year,externalIds&limit=5")
