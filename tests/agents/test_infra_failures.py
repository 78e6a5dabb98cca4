"""A failure is never recorded as an answer: `drsearch run` against broken infrastructure.

Real components: the scripted chat server (drsearch.dev.chat) and a real `drsearch serve` on
127.0.0.1. A dead, wrong or unauthorised model endpoint is refused before anything is
written (exit 2); an endpoint answering 500/401 mid-run, a search server killed mid-run and
a full disk (a write failing half-way, through the run store's write seam) end those
episodes as ``infra_error``: not cached, not finished, exit 1; the rerun retries exactly
them and ends byte-identical to a run that never failed.
"""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import re
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsearch.agents import runstore
from drsearch.agents.replay import ReplayCache
from drsearch.dev.chat import SEED_BASE, FakeLLM, serve_chat, serve_fake
from drsearch.server import ServeProcess
from drsearch.tools.cli import main

from ..helpers import free_port as _free_port
from .conftest import BLOCKED, QUESTIONS

QIDS = [json.loads(line)["metadata"]["qid"] for line in QUESTIONS.read_text().splitlines()]


def run(out: Path, base_url: str, search: list[str], *extra: str) -> tuple[int, str, str]:
    """`drsearch run` in process: (exit code, stdout, stderr)."""
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(stderr):
        rc = main(["run", "--questions", str(QUESTIONS), *search, "--out", str(out), "--model", "fake-model",
                   "--base-url", base_url, "--quiet", "--max-attempts", "2", "--backoff", "0.01", *extra],
                  out=stdout)
    assert "Traceback" not in stderr.getvalue()
    return rc, stdout.getvalue(), stderr.getvalue()


def lines(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "trajectories.jsonl").read_text().splitlines()]


def seeds(fake: FakeLLM, since: int = 0) -> set[int]:
    return {b["seed"] - SEED_BASE for b in fake.requests[since:]}


def cached_failures(out: Path) -> int:
    with sqlite3.connect(out / "cache.sqlite3") as db:
        return int(db.execute("SELECT count(*) FROM responses WHERE ok = 0 AND kind = 'llm'").fetchone()[0])


@pytest.fixture(scope="module")
def clean_run(search_server: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """All 12 questions with the default script and nothing broken: what every rerun must equal."""
    out = tmp_path_factory.mktemp("clean") / "run"
    with serve_fake({}) as fake:
        rc, _, err = run(out, fake.url, ["--search", search_server], "--json")
    assert rc == 0, err
    return out


# ---- the probe: refused before anything is written ----------------------------------------------------------


def test_a_dead_model_endpoint_is_refused_before_anything_is_written(search_server: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    rc, stdout, err = run(out, "http://127.0.0.1:9/v1", ["--search", search_server])
    assert rc == 2 and stdout == "", err
    assert len(err.strip().splitlines()) == 1, err
    assert "--base-url http://127.0.0.1:9/v1: the model endpoint" in err and "not usable for model 'fake-model'" in err
    assert "ConnectError" in err and "gave up after 2 attempts" in err
    assert not out.exists()


@pytest.mark.parametrize("models_status,probe_status,message", [
    (401, 200, "GET /models: HTTP 401"),  # a wrong key: final at /models
    (404, 404, "HTTP 404"),  # no /models and no chat route: a wrong base URL
    (200, 401, "HTTP 401"),  # lists other models only, and the completion is refused
])
def test_a_wrong_or_unauthorised_endpoint_is_refused(models_status: int, probe_status: int, message: str,
                                                     search_server: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with serve_fake({}) as fake:
        fake.models_status, fake.probe_status, fake.models = models_status, probe_status, ["another-model"]
        rc, _, err = run(out, fake.url, ["--search", search_server])
        assert fake.requests == []  # not one episode's request
    assert rc == 2 and len(err.strip().splitlines()) == 1 and message in err, err
    assert not out.exists()


def test_a_wrong_base_url_path_is_refused(search_server: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with serve_fake({}) as fake:
        rc, _, err = run(out, fake.url.replace("/v1", "/v2"), ["--search", search_server])
        assert fake.requests == [] and fake.probes == []  # /v2/... is no route of the fake
    assert rc == 2 and "HTTP 404" in err and len(err.strip().splitlines()) == 1, err
    assert not out.exists()


def test_an_endpoint_without_models_is_probed_with_one_minimal_request(search_server: str, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with serve_fake({}) as fake:
        fake.models_status = 404  # like a server that has no /models route
        rc, _, err = run(out, fake.url, ["--search", search_server], "--limit", "1", "--json")
        probes = [p for p in fake.probes if "messages" in p]
    assert rc == 0, err
    assert len(probes) == 1 and probes[0]["max_tokens"] == 1 and probes[0]["model"] == "fake-model"
    assert json.loads((out / "summary.json").read_text())["statuses"] == {"answered": 1}


def test_run_json_cites_what_the_endpoint_says_of_its_model(search_server: str, tmp_path: Path) -> None:
    """The /models entry (a server's own metadata: llama.cpp's context size, whether it constrains
    decoding) goes into run.json as endpoint_model; unlisted: null; a replay repeats it."""
    meta = {"meta": {"constrained_decoding": ["tool_calls", "json_schema"], "n_ctx": 4096}}
    with serve_fake({}) as fake:
        fake.model_meta = meta
        rc, _, err = run(tmp_path / "listed", fake.url, ["--search", search_server], "--limit", "1")
        assert rc == 0, err
        fake.models_status = 404
        rc, _, err = run(tmp_path / "unlisted", fake.url, ["--search", search_server], "--limit", "1")
        assert rc == 0, err
    listed = json.loads((tmp_path / "listed" / "run.json").read_text())
    assert listed["endpoint_model"] == {"id": "fake-model", "object": "model", **meta}
    assert json.loads((tmp_path / "unlisted" / "run.json").read_text())["endpoint_model"] is None
    rc, _, err = run(tmp_path / "replayed", "http://127.0.0.1:9/v1", [], "--limit", "1",
                     "--replay", str(tmp_path / "listed"))
    assert rc == 0, err
    assert json.loads((tmp_path / "replayed" / "run.json").read_text())["endpoint_model"] == \
        listed["endpoint_model"]


def test_a_resumed_run_is_refused_before_the_probe(search_server: str, clean_run: Path, tmp_path: Path) -> None:
    """The run directory check reads only: it names the difference even with a dead endpoint."""
    out = tmp_path / "copy"
    shutil.copytree(clean_run, out)
    rc, _, err = run(out, "http://127.0.0.1:9/v1", ["--search", search_server])
    assert rc == 2 and "differs in base_url" in err, err


# ---- failures mid-run: not cached, not finished, exit 1; the rerun retries them --------------------------------


def test_an_endpoint_failing_mid_run_is_retried_by_the_rerun(search_server: str, clean_run: Path,
                                                            tmp_path: Path) -> None:
    out = tmp_path / "run"
    broken = {2: [{"status": 500}],  # 5xx past the retries
              5: [{"call": [("search", {"query": "QUESTION", "k": 3})]}, {"status": 401}]}  # 401 mid-episode
    with serve_fake(broken) as fake:
        rc, table, err = run(out, fake.url, ["--search", search_server])
        assert rc == 1, err
        records = {r["index"]: r for r in lines(out)}
        assert records[2]["status"] == records[5]["status"] == "infra_error"
        assert records[2]["reason"].startswith("endpoint_error: gave up after 2 attempts: HTTP 500")
        assert records[5]["reason"].startswith("endpoint_error: HTTP 401")
        assert {r["status"] for i, r in records.items() if i not in (2, 5)} == {"answered"}
        assert cached_failures(out) == 0  # a failure is never stored as a response
        assert re.search(r"^infrastructure failure +2 +27 ", table, re.MULTILINE), table
        assert re.search(r"^total +12 ", table, re.MULTILINE), table
        assert f"  {QIDS[2]}: endpoint_error: gave up after 2 attempts: HTTP 500" in table, table
        summary = json.loads((out / "summary.json").read_text())
        assert summary["statuses"] == {"answered": 10, "infra_error": 2} and summary["resumed"] == 0
        assert [f["qid"] for f in summary["infra_failures"]] == [QIDS[2], QIDS[5]]

        fake.scripts = {}  # the endpoint is fixed
        before = len(fake.requests)
        rc, stdout, err = run(out, fake.url, ["--search", search_server], "--json")
        assert rc == 0, err
        assert seeds(fake, before) == {2, 5}  # exactly the failed questions are asked again
    summary = json.loads(stdout)
    assert summary["resumed"] == 10 and summary["statuses"] == {"answered": 12} and summary["infra_failures"] == []
    assert (out / "trajectories.jsonl").read_bytes() == (clean_run / "trajectories.jsonl").read_bytes()


def _serve(database: Path, port: int, log: Path, blocklist: Path = BLOCKED) -> ServeProcess:
    return ServeProcess(database, "--blocked-docids", str(blocklist), port=port, log=log).start()


@contextlib.contextmanager
def own_server(database: Path, port: int, log: Path) -> Iterator[ServeProcess]:
    server = _serve(database, port, log)
    try:
        yield server
    finally:
        server.stop()


class KillsSearchServer(FakeLLM):
    """The default script, but the search server is killed (-9) when question ``at`` starts."""

    def __init__(self, at: int) -> None:
        super().__init__({})
        self.at = at
        self.server: ServeProcess | None = None

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if self.server is not None and body.get("seed") == SEED_BASE + self.at:
            self.server.kill()
            self.server = None
        return super().respond(body)


def test_a_search_server_killed_mid_run_is_retried_by_the_rerun(sample_index: Path, clean_run: Path,
                                                               tmp_path: Path) -> None:
    port, log, out = _free_port(), tmp_path / "serve.log", tmp_path / "run"
    search = ["--search", f"http://127.0.0.1:{port}"]
    ids = ["--ids", *QIDS[:4]]
    fake = KillsSearchServer(at=2)
    with serve_chat(fake) as url:
        with own_server(sample_index, port, log) as server:
            fake.server = server
            rc, _, err = run(out, url, search, *ids)  # concurrency 1: questions 0, 1 before the kill
        assert rc == 1, err
        records = lines(out)
        assert [r["status"] for r in records] == ["answered", "answered", "infra_error", "infra_error"]
        assert all(r["reason"].startswith("searcher_error: POST /search failed after 4 attempts")
                   for r in records[2:])
        with own_server(sample_index, port, log):  # the server is back, same corpus, same port
            before = len(fake.requests)
            rc, stdout, err = run(out, url, search, *ids, "--json")
            assert rc == 0, err
            assert seeds(fake, before) == {2, 3}
    summary = json.loads(stdout)
    assert summary["resumed"] == 2 and summary["statuses"] == {"answered": 4}
    clean = (clean_run / "trajectories.jsonl").read_bytes().splitlines(keepends=True)[:4]
    assert (out / "trajectories.jsonl").read_bytes() == b"".join(clean)


# ---- a full disk ------------------------------------------------------------------------------------------


def test_a_full_disk_is_no_finished_episode(monkeypatch: pytest.MonkeyPatch, sample_index: Path,
                                            clean_run: Path, tmp_path: Path) -> None:
    """Four episodes' lines hit ENOSPC half-way: each is cut back to a whole line, counted as an
    infrastructure failure (exit 1), and the rerun (disk freed) retries exactly those four."""
    full = {QIDS[i].encode() for i in (1, 4, 7, 10)}
    real = runstore._write

    def write(fd: int, data: bytes) -> None:
        if data.startswith(b'{"accounting"') and any(b'"qid":"' + q + b'"' in data for q in full):
            os.write(fd, data[: len(data) // 2])  # what fit on the disk
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real(fd, data)

    out = tmp_path / "run"
    search = ["--database", str(sample_index), "--blocked-docids", str(BLOCKED)]
    with serve_fake({}) as fake:
        monkeypatch.setattr(runstore, "_write", write)
        rc, table, err = run(out, fake.url, search, "--concurrency", "3")
        assert rc == 1, err
        records = lines(out)  # every line whole: the torn halves were cut off
        assert len(records) == 8 and all(r["status"] == "answered" for r in records)
        assert re.search(r"^infrastructure failure +4 ", table, re.MULTILINE), table
        assert table.count("local_io_error: ") == 4 and "No space left on device" in table, table
        summary = json.loads((out / "summary.json").read_text())
        assert summary["statuses"] == {"answered": 8, "infra_error": 4}

        monkeypatch.setattr(runstore, "_write", real)
        before = len(fake.requests)
        rc, stdout, err = run(out, fake.url, search, "--json")
        assert rc == 0, err
        assert seeds(fake, before) == {1, 4, 7, 10}
    assert json.loads(stdout)["resumed"] == 8
    assert (out / "trajectories.jsonl").read_bytes() == (clean_run / "trajectories.jsonl").read_bytes()


def test_a_cache_that_cannot_store_is_an_infrastructure_failure(monkeypatch: pytest.MonkeyPatch,
                                                               sample_index: Path, tmp_path: Path) -> None:
    real = ReplayCache._store

    def store(self: ReplayCache, digest: str, kind: str, call: str, ok: int, body: bytes) -> None:
        if f"chat completion {QIDS[3]} " in call:
            raise sqlite3.OperationalError("database or disk is full")
        real(self, digest, kind, call, ok, body)

    out = tmp_path / "run"
    search = ["--database", str(sample_index), "--blocked-docids", str(BLOCKED)]
    with serve_fake({}) as fake:
        monkeypatch.setattr(ReplayCache, "_store", store)
        rc, _, err = run(out, fake.url, search, "--limit", "5")
        assert rc == 1, err
        (failed,) = [r for r in lines(out) if r["status"] != "answered"]
        assert failed["qid"] == QIDS[3] and failed["status"] == "infra_error"
        assert failed["reason"].startswith("local_io_error: replay cache ") and "disk is full" in failed["reason"]
        monkeypatch.setattr(ReplayCache, "_store", real)
        before = len(fake.requests)
        rc, _, err = run(out, fake.url, search, "--limit", "5")
        assert rc == 0 and seeds(fake, before) == {3}, err
