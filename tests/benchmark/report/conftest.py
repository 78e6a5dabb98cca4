"""Graded runs for the report tests, made the way a user makes them: the scripted reader
(`drsearch dev model --script agent`'s responder, served over the real OpenAI-compatible HTTP
API on 127.0.0.1) runs the sample questions through `drsearch run` against the sample corpus,
and the scripted judge grades them through `drsearch score`.

Run A searches the corpus with the sample's blocklist (its three leak artifacts hidden); run B
searches it with nothing blocked, so its trajectories hold those documents."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from drsearch.dev.agent import ReaderAgent
from drsearch.dev.chat import serve_chat
from drsearch.dev.judge import serve_judge
from drsearch.tools.cli import main

from ...helpers import DATA

QUESTIONS = DATA / "sample/questions.jsonl"
BLOCKED = DATA / "sample/blocked_docids.txt"


def blocked_docids() -> list[str]:
    return [line.strip() for line in BLOCKED.read_text().splitlines() if line.strip() and not line.startswith("#")]


@dataclass(frozen=True)
class Runs:
    blocked: Path
    open: Path


def _run_and_score(out: Path, corpus: Path, model_url: str, judge_url: str, *blocking: str) -> None:
    assert main(["run", "--questions", str(QUESTIONS), "--database", str(corpus), *blocking,
                 "--model", "scripted-reader", "--base-url", model_url, "--out", str(out), "--quiet"]) == 0
    assert main(["score", str(out), "--questions", str(QUESTIONS), "--judge-model", "oracle",
                 "--base-url", judge_url, "--quiet"]) == 0


@pytest.fixture(scope="session")
def graded_runs(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Runs:
    root = tmp_path_factory.mktemp("report-runs")
    with serve_chat(ReaderAgent()) as model_url, serve_judge() as judge:
        _run_and_score(root / "run-a", sample_index, model_url, judge.url, "--blocked-docids", str(BLOCKED))
        _run_and_score(root / "run-b", sample_index, model_url, judge.url)
    return Runs(root / "run-a", root / "run-b")
