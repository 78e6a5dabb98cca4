"""``drsearch generate drbencher --concurrency N``: the model stages (clues, compose, validate,
V1, V2) keep N calls in flight, write byte for byte what N = 1 writes, rerun nothing when only
N changes, draw a bar on a terminal and report per-stage calls, tokens and wall time."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from drsearch.dev.chat import RuleResponder, serve_chat
from drsearch.dev.drbencher import RULES

from ....terminal import in_terminal, piped
from ..test_stages import assert_same_tree
from .kgserver import kg_serve
from .test_kg_stages import generate
from .test_pipeline import v2_config

MODEL_STAGES = ("clues", "compose", "validate", "v1", "v2")


class Gauge:
    """A rule responder that counts the calls in flight (its peak) and each reply's usage."""

    def __init__(self) -> None:
        self.inner = RuleResponder(RULES)
        self.lock = threading.Lock()
        self.now = self.peak = 0
        self.url = ""

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            time.sleep(0.01)  # long enough for calls to overlap when the client sends them together
            return self.inner.respond(body)
        finally:
            with self.lock:
                self.now -= 1

    def reset(self) -> None:
        with self.lock:
            self.peak = 0
            self.inner.requests.clear()


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, Gauge]]:
    gauge = Gauge()
    with kg_serve() as kg, serve_chat(gauge) as url:
        gauge.url = url
        yield kg, gauge


def config(tmp: Path, kg: str, gauge: Gauge) -> Path:
    path = v2_config(tmp, kg, gauge.url)  # V2 serves the support corpus itself (drsearch serve)
    c = json.loads(path.read_text())
    c["v1"] = {**c["v2"], "enabled": True, "k": 2, "model": c["v2"]["model"]}
    path.write_text(json.dumps(c))
    return path


def cache_rows(path: Path) -> list[tuple[Any, ...]]:
    """The replay cache as a sorted set of rows: its file's page order follows the order the
    answers arrived in, which concurrency changes; what it answers must not change."""
    with sqlite3.connect(path) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return sorted((t, *row) for t in tables for row in db.execute(f"SELECT * FROM {t}"))


@dataclass(frozen=True)
class Run:
    """One generator run: its config and output, what it printed, and what the endpoint saw."""

    config: Path
    out: Path
    rc: int
    summary: dict[str, Any] | None
    err: str
    peak: int
    calls: list[dict[str, Any]]


def run_at(servers: tuple[str, Gauge], tmp: Path, n: int) -> Run:
    kg, gauge = servers
    path = config(tmp, kg, gauge)
    gauge.reset()
    rc, summary, err = generate(path, tmp / f"gen{n}", "--concurrency", str(n))
    calls = [b for b in gauge.inner.requests if "seed" in b]  # not the endpoint probe
    return Run(path, tmp / f"gen{n}", rc, summary, err, gauge.peak, calls)


@pytest.fixture(scope="module")
def at_one(servers: tuple[str, Gauge], tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The whole pipeline at --concurrency 1, run once for the two tests that start from it."""
    return run_at(servers, tmp_path_factory.mktemp("at-one"), 1)


def test_concurrency_4_writes_byte_for_byte_what_concurrency_1_writes(servers: tuple[str, Gauge], at_one: Run,
                                                                       tmp_path: Path) -> None:
    for n, run in ((1, at_one), (4, run_at(servers, tmp_path, 4))):
        assert run.rc == 0, run.err
        assert run.summary is not None and run.summary["ran"][-1] == "export"
        assert run.peak == n, f"--concurrency {n}: {run.peak} calls were in flight at once"
        # per-stage calls and tokens, as the endpoint's usage reports them, in the summary and timings.json
        timings = json.loads((run.out / "timings.json").read_text())["stages"]
        for stage in MODEL_STAGES:
            assert run.summary["timings"][stage]["model"] == timings[stage]["model"]
            assert timings[stage]["model"]["calls"] > 0 and timings[stage]["model"]["total_tokens"] > 0, stage
            assert timings[stage]["concurrency"] == n and timings[stage]["wall_s"] > 0
        assert sum(t["model"]["calls"] for t in timings.values()) == len(run.calls)
        assert timings["gold"]["model"]["calls"] == 0
    out4 = tmp_path / "gen4"
    assert_same_tree(at_one.out, out4, ignore={"timings.json", "cache.sqlite3"})
    assert cache_rows(at_one.out / "cache.sqlite3") == cache_rows(out4 / "cache.sqlite3")


def test_changing_only_the_concurrency_reruns_nothing(at_one: Run) -> None:
    assert at_one.rc == 0 and at_one.summary is not None, at_one.err
    rc, again, err = generate(at_one.config, at_one.out, "--concurrency", "4")
    assert rc == 0, err
    assert again is not None
    assert again["ran"] == [] and again["skipped"] == at_one.summary["ran"] and again["timings"] == {}


def test_a_bad_concurrency_is_one_line_and_exit_2(servers: tuple[str, Gauge], tmp_path: Path) -> None:
    kg, gauge = servers
    out = tmp_path / "gen"
    for bad in ("0", "65"):
        rc, _, err = generate(config(tmp_path, kg, gauge), out, "--concurrency", bad)
        assert rc == 2 and "--concurrency" in err and "Traceback" not in err and not out.exists()


def _frames(rendered: str) -> list[str]:
    return [f.strip() for f in re.split(r"[\r\n]+", rendered) if f.strip()]


def test_a_terminal_gets_a_bar_per_stage_with_counts_eta_and_calls(servers: tuple[str, Gauge],
                                                                    tmp_path: Path) -> None:
    kg, gauge = servers
    path = config(tmp_path, kg, gauge)
    argv = ["generate", "drbencher", "--config", str(path), "--concurrency", "2"]
    rc, stdout, stderr = in_terminal(*argv, "--out", str(tmp_path / "tty"))
    assert rc == 0, stderr
    frames = _frames(stderr)
    for stage in MODEL_STAGES:  # "clues: 100%|...| 7/7 [00:01<00:00, 5.1 item/s, calls=31]"
        done = [f for f in frames if f.startswith(f"{stage}: 100%")]
        assert done, (stage, frames)
        assert re.search(r"\| (\d+)/\1 \[\d\d:\d\d<\d\d:\d\d, .*calls=[1-9]\d*\]", done[-1]), done[-1]
    assert json.loads(stdout)["ran"][-1] == "export"
    # --quiet on a terminal, or a pipe: no bar at all (through the first three model stages:
    # one progress decision serves every stage, and V1/V2 would only add a served corpus)
    until = ("--until", "validate")
    rc, out, quiet = in_terminal(*argv, "--out", str(tmp_path / "quiet"), "--quiet", *until)
    assert rc == 0 and "\r" not in quiet and "item/s" not in quiet
    assert json.loads(out)["ran"][-1] == "validate"  # the model stages ran, only without a bar
    rc, out, logged = piped(*argv, "--out", str(tmp_path / "piped"), *until)
    assert rc == 0 and "\r" not in logged and "item/s" not in logged
    assert json.loads(out)["ran"][-1] == "validate"
