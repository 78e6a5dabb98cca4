"""docs/GENERATE.md's DrBencher block runs as written: ``drsearch kg serve`` and
``drsearch dev model --script drbencher`` on the ports the shipped config's URLs take from
``DRSEARCH_KG_PORT`` / ``DRSEARCH_MODEL_PORT``, then ``drsearch generate drbencher --config
data/kg/gen.json --out gen/`` with the config as shipped; its stage counts are the docs table's. Then
the scoring block ("Scoring a run on it": the scripted reader's run of the questions, ``drsearch score
--judge numeric``): the paper's tables it prints are the docs' text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ....docblocks import bash_blocks, free_ports, run_blocks
from ....helpers import REPO
from .test_pipeline import docs_stage_table

pytest.importorskip("pyoxigraph", reason="drsearch kg serve needs the kg extra (pyoxigraph)")

SECTION = "## The DrBencher-style generator (`drsearch generate drbencher`)"


def test_the_documented_block_runs_as_written_and_gives_the_docs_counts(tmp_path: Path) -> None:
    block, *rest = bash_blocks(REPO / "docs/GENERATE.md", SECTION)
    assert "drsearch generate drbencher --config data/kg/gen.json --out gen/" in block
    (scoring,) = [b for b in rest if "drsearch score gen-run" in b]
    kg, model = free_ports(2)
    done = run_blocks([block, scoring], tmp_path,
                      {"DRSEARCH_KG_PORT": str(kg), "DRSEARCH_MODEL_PORT": str(model)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # stdout: the two servers' URLs (one line each), then generate's JSON summary
    assert f"http://127.0.0.1:{kg}/sparql\n" in done.stdout and f"http://127.0.0.1:{model}/v1\n" in done.stdout
    summary = json.loads(done.stdout[done.stdout.index("{"):].split("\n", 1)[0])
    counts = summary["counts"]
    table = docs_stage_table()
    assert {s: (counts[s]["in"], counts[s]["out"], counts[s]["rejected"]) for s in table} == table
    exported = (tmp_path / "gen/questions.jsonl").read_text().splitlines()
    assert table["export"] == (len(exported), len(exported), {})
    printed = done.stdout[done.stdout.index("Benchmark summary (Table 2)"):done.stdout.index("\nwrote gen-run/")]
    assert printed == docs_score_tables()
    scores = json.loads((tmp_path / "gen-run/scores.json").read_text())["drbencher"]
    assert scores["benchmark"]["all"]["questions"] == len(exported)


def docs_score_tables() -> str:
    """The ``text`` block of docs/GENERATE.md's "Scoring a run on it"."""
    text = (REPO / "docs/GENERATE.md").read_text(encoding="utf-8")
    section = text.split("### Scoring a run on it\n", 1)[1].split("\n### ", 1)[0]
    return section.split("```text\n", 1)[1].split("```", 1)[0]
