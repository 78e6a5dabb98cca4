"""End to end: `drsearch run` with a scripted model calling all ten biomedical tools against
their local stand-ins, frozen with `drsearch snapshot freeze`, then replayed from the snapshot
with every server stopped: byte-identical trajectories. Also: replay-then-live extends a
snapshot, a miss in replay mode is an infrastructure failure (never a live call), coverage,
and snapshots that are damaged or of other tools refused in one line (exit 2)."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from drsearch.agents.snapshot import load_snapshot, write_snapshot
from drsearch.biotools import BIOTOOL_NAMES
from drsearch.dev.apis import serve_apis
from drsearch.dev.bioagent import BioToolAgent
from drsearch.dev.chat import serve_chat
from drsearch.tools.cli import main

from .conftest import FIXTURES

MODEL = "scripted-bioagent"


def _questions(path: Path, *texts: str) -> Path:
    rows = [{"label": "x", "metadata": {"benchmark": {"index": i}, "qid": f"bq-{i}"},
             "prompt": [{"content": f"Question: {t}\nAnswer with identifiers.", "role": "user"}]}
            for i, t in enumerate(texts)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _cli(*argv: str | Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main([str(a) for a in argv], out=out)
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A live run of openbiorq (two questions, one with a call outside a schema), its snapshot;
    every server stopped once it is recorded."""
    tmp = tmp_path_factory.mktemp("biorun")
    questions = _questions(tmp / "q.jsonl", "Which trial reported BNT162b2's efficacy?",
                           "An invalid call first: which gene is P04637?")
    with serve_apis(FIXTURES) as apis, serve_chat(BioToolAgent()) as model_url:
        endpoints = tmp / "endpoints.json"
        endpoints.write_text(json.dumps(apis.endpoints), encoding="utf-8")
        rc, out, err = _cli("run", "--questions", questions, "--out", tmp / "run1", "--preset", "openbiorq",
                            "--model", MODEL, "--base-url", model_url, "--tool-endpoints", endpoints,
                            "--quiet", "--json")
        assert rc == 0, err
        served = list(apis.requests)
    rc, out2, err = _cli("snapshot", "freeze", tmp / "run1", "--out", tmp / "snap", "--json")
    assert rc == 0, err
    yield {"tmp": tmp, "questions": questions, "summary": json.loads(out), "served": served,
           "endpoints": endpoints, "snap": tmp / "snap", "froze": json.loads(out2)}


def test_a_live_run_calls_every_tool_and_records_provenance(recorded: dict[str, Any]) -> None:
    summary = recorded["summary"]
    assert summary["statuses"] == {"answered": 2}
    calls = summary["accounting"]["tool_calls"]
    assert {t: calls[t] for t in BIOTOOL_NAMES} == {t: 2 if t != "chembl" else 1 for t in BIOTOOL_NAMES}
    # the call outside chembl's schema: refused before any request, the model told why
    assert summary["accounting"]["malformed_tool_calls"] == 1 and summary["accounting"]["tool_errors"] == 0
    run1 = recorded["tmp"] / "run1"
    records = [json.loads(line) for line in (run1 / "trajectories.jsonl").read_text().splitlines()]
    assert records[0]["final_answer"] == "NCT04368728, PMID 33301246"
    tool_messages = [m["content"] for m in records[0]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 10 and all(m.startswith("[source: ") for m in tool_messages)
    refused = [m["content"] for m in records[1]["messages"] if m["role"] == "tool"][4]
    error = json.loads(refused)["error"]
    assert error["type"] == "malformed_tool_call" and "chembl: chembl_id: does not match" in error["message"]
    assert "GET /chembl/api/data/molecule/aspirin.json" not in recorded["served"]
    run_json = json.loads((run1 / "run.json").read_text())
    assert set(run_json["biotools"]) == set(BIOTOOL_NAMES) and run_json["tool_snapshot"] is None
    assert len(run_json["biotools_sha256"]) == 64
    assert run_json["corpus_identity"] == "none" and run_json["search"] == "none"


def test_the_frozen_snapshot_is_checksummed(recorded: dict[str, Any]) -> None:
    snap = load_snapshot(recorded["snap"])
    m = snap.manifest
    assert m["rows"] == recorded["froze"]["rows"] == 10  # the second question asks 9 of the first's 10 again
    assert set(m["tools"]) == set(BIOTOOL_NAMES)
    assert m["tools"]["pubmed"]["endpoints"][0] == "GET /entrez/eutils/esearch.fcgi"
    assert len(m["access_dates"]) == 1 and len(m["row_digests"]) == m["rows"]
    rc, out, _err = _cli("snapshot", "verify", recorded["snap"])
    assert rc == 0 and "every digest matches" in out


def test_replay_from_the_snapshot_with_every_server_stopped_is_byte_identical(recorded: dict[str, Any]) -> None:
    tmp = recorded["tmp"]
    rc, out, err = _cli("run", "--questions", recorded["questions"], "--out", tmp / "replayed",
                        "--replay", tmp / "run1", "--tool-snapshot", recorded["snap"], "--quiet", "--json")
    assert rc == 0, err
    summary = json.loads(out)
    assert summary["tool_snapshot"]["hits"] == 19 and summary["tool_snapshot"]["written"] is None
    assert (tmp / "replayed/trajectories.jsonl").read_bytes() == (tmp / "run1/trajectories.jsonl").read_bytes()


def test_coverage_says_which_calls_of_which_runs_a_snapshot_answers(recorded: dict[str, Any]) -> None:
    tmp = recorded["tmp"]
    rc, out, err = _cli("snapshot", "coverage", recorded["snap"], "--runs", tmp / "run1", "--json")
    assert rc == 0, err
    report = json.loads(out)
    assert report["calls"] == report["covered"] == 19
    partial = _partial(recorded, tmp / "partial", drop=("kegg", "biomcp"))
    rc, out, err = _cli("snapshot", "coverage", partial, "--runs", tmp / "run1")
    assert rc == 1
    assert f"{tmp / 'run1'}: 15/19 biomedical call(s) covered" in out
    assert out.count("missing: bq-") == 4


def _partial(recorded: dict[str, Any], out: Path, drop: tuple[str, ...]) -> Path:
    if not out.exists():
        snap = load_snapshot(recorded["snap"])
        write_snapshot([{k: e[k] for k in ("arguments", "body", "key", "tool")}
                        for e in snap.entries if e["tool"] not in drop], out)
    return out


def test_a_miss_in_replay_mode_is_an_infrastructure_failure_never_a_live_call(recorded: dict[str, Any]) -> None:
    tmp = recorded["tmp"]
    partial = _partial(recorded, tmp / "partial", drop=("kegg", "biomcp"))
    rc, out, _err = _cli("run", "--questions", recorded["questions"], "--out", tmp / "missed",
                        "--replay", tmp / "run1", "--tool-snapshot", partial, "--quiet", "--json")
    assert rc == 1
    summary = json.loads(out)
    assert summary["statuses"] == {"infra_error": 2}
    assert all("has no answer for kegg(" in f["reason"] for f in summary["infra_failures"])


def test_replay_then_live_records_the_misses_into_a_new_snapshot(recorded: dict[str, Any]) -> None:
    tmp = recorded["tmp"]
    partial = _partial(recorded, tmp / "partial", drop=("kegg", "biomcp"))
    with serve_apis(FIXTURES) as apis, serve_chat(BioToolAgent()) as model_url:
        endpoints = tmp / "endpoints2.json"
        endpoints.write_text(json.dumps(apis.endpoints), encoding="utf-8")
        rc, out, err = _cli("run", "--questions", recorded["questions"], "--out", tmp / "extended",
                            "--preset", "openbiorq", "--model", MODEL, "--base-url", model_url,
                            "--tool-endpoints", endpoints, "--tool-snapshot", partial,
                            "--cache-mode", "replay-then-live", "--quiet", "--json")
        assert rc == 0, err
        live_paths = [r for r in apis.requests if r.startswith("GET /")]
    assert live_paths == ["GET /find/genes/tp53"]  # the one KEGG call (biomcp speaks MCP); nothing else live
    summary = json.loads(out)
    written = summary["tool_snapshot"]["written"]
    assert written["path"] == str(tmp / "extended/tool-snapshot") and written["rows"] == 10
    new = load_snapshot(written["path"])
    assert set(new.rows) == set(load_snapshot(recorded["snap"]).rows)
    assert (tmp / "extended/trajectories.jsonl").read_text().count('"status":"answered"') == 2


def _tamper(src: Path, dst: Path, edit: Any) -> Path:
    shutil.copytree(src, dst)
    edit(dst)
    return dst


def test_a_damaged_snapshot_is_refused_in_one_line(recorded: dict[str, Any]) -> None:
    tmp = recorded["tmp"]

    def edit_row(d: Path) -> None:
        rows = (d / "rows.jsonl").read_text().replace("Cellular tumor antigen p53", "Cellular tumor antigen p63")
        (d / "rows.jsonl").write_text(rows)

    def edit_manifest(d: Path) -> None:
        m = json.loads((d / "manifest.json").read_text())
        m["access_dates"] = ["2020-01-01"]
        (d / "manifest.json").write_text(json.dumps(m))

    for name, edit, why in (("row", edit_row, "rows.jsonl does not match"),
                            ("manifest", edit_manifest, "manifest digest does not match")):
        bad = _tamper(recorded["snap"], tmp / f"bad-{name}", edit)
        for argv in (("snapshot", "verify", bad),
                     ("run", "--questions", recorded["questions"], "--out", tmp / f"r-{name}",
                      "--replay", tmp / "run1", "--tool-snapshot", bad, "--quiet")):
            rc, _out, err = _cli(*argv)
            assert rc == 2 and why in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
        assert not (tmp / f"r-{name}").exists()  # refused before anything was written


def test_a_snapshot_of_other_tools_or_endpoints_is_refused(recorded: dict[str, Any], tmp_path: Path) -> None:
    tmp = recorded["tmp"]
    # the preset offers only pubmed: the snapshot holds nine tools it does not offer
    preset = tmp_path / "pubmed-only.json"
    preset.write_text(json.dumps({"base": "openbiorq", "name": "pubmed-only", "tools": ["pubmed"]}))
    rc, _out, err = _cli("run", "--questions", recorded["questions"], "--out", tmp_path / "o1", "--preset", preset,
                        "--model", MODEL, "--base-url", "http://127.0.0.1:9/v1", "--tool-snapshot",
                        recorded["snap"], "--cache-mode", "replay", "--cache", tmp / "run1/cache.sqlite3", "--quiet")
    assert rc == 2 and "that the preset does not offer" in err and len(err.strip().splitlines()) == 1

    def other_api(d: Path) -> None:  # recorded against ClinicalTrials.gov's retired classic API
        m = json.loads((d / "manifest.json").read_text())
        m["tools"]["clinicaltrialsgov"]["endpoints"] = ["GET /api/query/full_studies"]
        m.pop("digest")
        from drsearch.agents.canonical import sha256_json
        m["digest"] = sha256_json(m)
        (d / "manifest.json").write_text(json.dumps(m))

    bad = _tamper(recorded["snap"], tmp_path / "v1", other_api)
    rc, _out, err = _cli("run", "--questions", recorded["questions"], "--out", tmp_path / "o2",
                        "--replay", tmp / "run1", "--tool-snapshot", bad, "--quiet")
    assert rc == 2 and "'clinicaltrialsgov' was recorded against other endpoints" in err
    # a preset without any of the tools
    rc, _out, err = _cli("run", "--questions", recorded["questions"], "--out", tmp_path / "o3", "--preset", "dr256",
                        "--replay", tmp / "run1", "--tool-snapshot", recorded["snap"], "--quiet")
    assert rc == 2 and "offers none of the biomedical tools" in err


def test_tool_snapshot_needs_a_replaying_cache_mode(recorded: dict[str, Any], tmp_path: Path) -> None:
    rc, _out, err = _cli("run", "--questions", recorded["questions"], "--out", tmp_path / "o", "--preset",
                        "openbiorq", "--model", MODEL, "--base-url", "http://127.0.0.1:9/v1",
                        "--tool-snapshot", recorded["snap"], "--quiet")
    assert rc == 2 and "--tool-snapshot goes with --cache-mode replay or replay-then-live" in err


class _Html(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        data = b"<!DOCTYPE html><html><body>Service temporarily unavailable</body></html>"
        self.send_response(200)
        self.send_header("content-type", "text/html")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_a_service_answering_html_is_an_infrastructure_failure(tmp_path: Path) -> None:
    html = ThreadingHTTPServer(("127.0.0.1", 0), _Html)
    threading.Thread(target=html.serve_forever, daemon=True).start()
    try:
        with serve_apis(FIXTURES, mcp=False) as apis, serve_chat(BioToolAgent()) as model_url:
            endpoints = tmp_path / "endpoints.json"
            endpoints.write_text(json.dumps({**apis.endpoints, "clinicaltrialsgov":
                                             f"http://127.0.0.1:{html.server_address[1]}"}))
            questions = _questions(tmp_path / "q.jsonl", "Which trial?")
            rc, out, _err = _cli("run", "--questions", questions, "--out", tmp_path / "run", "--preset", "openbiorq",
                                "--model", MODEL, "--base-url", model_url, "--tool-endpoints", endpoints,
                                "--max-attempts", "1", "--quiet", "--json")
    finally:
        html.shutdown()
        html.server_close()
    assert rc == 1
    summary = json.loads(out)
    assert summary["statuses"] == {"infra_error": 1}
    (failure,) = summary["infra_failures"]
    assert failure["reason"].startswith("tool_service_error: ClinicalTrials.gov API v2 GET /api/v2/studies/")
    assert "HTML page instead of JSON" in failure["reason"]
    # nothing of it was cached as an answer: a rerun asks again
    rc, out, _err = _cli("cache", "verify", tmp_path / "run", "--json")
    rows = json.loads(out)["caches"][0]["rows"]
    assert rows.get("tool", 0) == 1  # pubmed, called before it; the failure itself is never stored


def test_the_tools_beside_the_corpus_openbiorq_web(sample_index: Path, tmp_path: Path) -> None:
    """A preset that mixes the ten tools with search and open: the corpus is served as ever,
    the biomedical calls go to their services, and run.json records both."""
    with serve_apis(FIXTURES, mcp=False) as apis, serve_chat(BioToolAgent()) as model_url:
        endpoints = tmp_path / "endpoints.json"
        endpoints.write_text(json.dumps({k: v for k, v in apis.endpoints.items() if k != "biomcp"}))
        questions = _questions(tmp_path / "q.jsonl", "Which gene is P04637?")
        rc, out, err = _cli("run", "--questions", questions, "--out", tmp_path / "run", "--preset", "openbiorq-web",
                            "--database", sample_index, "--model", MODEL, "--base-url", model_url,
                            "--tool-endpoints", endpoints, "--max-attempts", "1", "--quiet", "--json")
    # biomcp's default endpoint (`biomcp run` on stdio) is not installed here: that call is an
    # infrastructure failure, after the first round's five answers were recorded
    assert rc == 1, err
    summary = json.loads(out)
    assert summary["statuses"] == {"infra_error": 1}
    assert summary["infra_failures"][0]["reason"].startswith("tool_service_error: biomcp at biomcp run")
    run_json = json.loads((tmp_path / "run/run.json").read_text())
    assert run_json["tools"] == ["search", "open", *BIOTOOL_NAMES]
    assert run_json["corpus_identity"] not in (None, "none") and run_json["biotool_endpoints"]["biomcp"] == "biomcp run"


@pytest.mark.parametrize(("content", "message"), [
    ("{not json", "not readable JSON"),
    ('{"pubmed": 3}', "expected a JSON object of tool -> URL"),
    ('{"pubmedd": "http://127.0.0.1:1"}', "unknown tool(s) pubmedd"),
])
def test_a_bad_tool_endpoints_file_is_one_line_exit_2(tmp_path: Path, content: str, message: str) -> None:
    endpoints = tmp_path / "e.json"
    endpoints.write_text(content)
    questions = _questions(tmp_path / "q.jsonl", "x")
    with serve_chat(BioToolAgent()) as model_url:
        rc, _out, err = _cli("run", "--questions", questions, "--out", tmp_path / "run", "--preset", "openbiorq",
                             "--model", MODEL, "--base-url", model_url, "--tool-endpoints", endpoints, "--quiet")
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "run").exists()


def test_freeze_refuses_bad_input_in_one_line(recorded: dict[str, Any], tmp_path: Path) -> None:
    empty_run = tmp_path / "empty-run"
    empty_run.mkdir()
    cases = [
        (("snapshot", "freeze", recorded["tmp"] / "run1", "--out", recorded["snap"]), "already exists"),
        (("snapshot", "freeze", empty_run, "--out", tmp_path / "s1"), "no replay cache there"),
        (("snapshot", "freeze", recorded["tmp"] / "run1", "--out", tmp_path / "s2", "--base", empty_run),
         "no manifest.json and rows.jsonl there"),
        (("snapshot", "coverage", recorded["snap"], "--runs", empty_run), "no trajectories.jsonl readable"),
        (("snapshot", "verify", recorded["questions"]), "tool snapshot"),
    ]
    for argv, message in cases:
        rc, _out, err = _cli(*argv)
        assert rc == 2 and message in err and len(err.strip().splitlines()) == 1, (argv, err)
    assert not (tmp_path / "s1").exists() and not (tmp_path / "s2").exists()
    load_snapshot(recorded["snap"])  # the existing snapshot untouched


def test_freeze_extends_a_base_snapshot_its_rows_winning(recorded: dict[str, Any], tmp_path: Path) -> None:
    partial = _partial(recorded, recorded["tmp"] / "partial", drop=("kegg", "biomcp"))
    rc, out, err = _cli("snapshot", "freeze", recorded["tmp"] / "run1", "--out", tmp_path / "s", "--base", partial,
                        "--json")
    assert rc == 0, err
    assert json.loads(out)["rows"] == 10
    assert load_snapshot(tmp_path / "s").rows == load_snapshot(recorded["snap"]).rows
