"""Opt-in smoke test with a real model (marker ``smoke``; not in the default run; `make smoke`
installs llama.cpp and SmolLM2-135M): SmolLM2 drives the whole DrBencher pipeline once.

The model is served on 127.0.0.1 by the agents' smoke server (``tests/agents/smollm2_server.py``,
started by ``tests/agents/smollm2_setup.py`` as for the agents' smoke test; its own process: a
SIGILL from a build the CPU cannot execute is a one-line failure) and is the generator, the V1
model and the V2 model of a small run (four cities, three chains each, ``population_density``, k = 1) of
``drsearch generate drbencher`` (a subprocess) against ``drsearch kg serve`` of the fixture. A
135M model writes poor clues; only protocol facts are asserted: every stage completes, every
candidate is kept or rejected with a named check (a reply that does not parse is
``unparseable_reply``, counted), each candidate reaching Clues got exactly one clues call with
the generator's seed and temperature, and a replay asks the model nothing and rewrites the
directory byte for byte. The server decodes under the requested schemas (``--constrain``; the
config's ``generator.structured_output``), so the text stages parse every reply, and the
schemas ask for what validation reads (clues and question name the entities the facts go
through; no number in a question without parameters), so at least one question passes the
unchanged validation and is exported (asserted); SmolLM2 then answers the exported questions
over the support corpus (``drsearch run``) and the numeric judge grades them (``drsearch score
--judge numeric``).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from drsearch.benchmark.generate.drbencher.pipeline import STAGES

from ....agents.smollm2_server import MODEL, ModelProcess, run_watched
from ....agents.smollm2_setup import smollm2_model
from ..test_stages import assert_same_tree
from .kgserver import CLI, DOCS, kg_serve

pytestmark = pytest.mark.smoke

CHECKS = {"duplicate_entity", "beyond_target", "no_label", "ambiguous_value", "unknown_unit", "missing_property",
          "too_few_chains", "no_template", "max_per_entity", "no_partner", "template_error", "no_article",
          "unparseable_reply", "too_few_grounded_facts", "gold_not_reproduced", "entity_named", "value_leak",
          "gold_in_question", "multi_hop_flattening", "not_unique", "unmapped_relation", "v1_closed_book_solved",
          "v2_tool_augmented_solved", "diversity"}
"""Every check the stages name (docs/GENERATE.md, "Stages")."""


@pytest.fixture(scope="module")
def smollm2(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModelProcess]:
    with smollm2_model(tmp_path_factory) as model:
        yield model


def requests_of(model: ModelProcess) -> list[dict[str, Any]]:
    return list(httpx.get(model.base_url + "/record", timeout=30).json()["requests"])


def test_smollm2_drives_the_whole_drbencher_pipeline(smollm2: ModelProcess, tmp_path: Path) -> None:
    base_url = smollm2.base_url + "/v1"
    endpoint = {"base_url": base_url, "model": MODEL}
    with kg_serve() as kg:
        config = json.loads((DOCS.parent / "gen.json").read_text())
        config.update({
            "kg": {**config["kg"], "endpoint": kg}, "articles": str(DOCS), "templates": ["population_density"],
            # four cities (Rome has too few chains; Vienna, Innsbruck and Munich each one set of
            # three chains whose intermediate entities, named, fit that city alone)
            "topics": [{**config["topics"][1], "target": 4}],
            "chains": {"min_chains": 3, "max_chains": 3},  # three one-sentence facts fit the server's 320-token replies
            # the text stages ask for their reply schemas; the server decodes under them
            "generator": {**endpoint, "seed": 7, "temperature": 0.0, "structured_output": True},
            "v1": {"enabled": True, "k": 1, "model": endpoint},
            "v2": {"enabled": True, "k": 1, "model": endpoint}})
        path = tmp_path / "gen.json"
        path.write_text(json.dumps(config, indent=2))
        out = tmp_path / "gen"
        cmd = [sys.executable, *CLI[1:], "generate", "drbencher", "--config", str(path), "--out", str(out)]
        rc, stdout, stderr = run_watched(cmd, smollm2, tmp_path, timeout_s=3000)
        assert rc == 0, stderr
        assert "Traceback" not in stderr
        summary = json.loads(stdout)
        requests = requests_of(smollm2)

        # every stage ran and accounted for every candidate
        assert summary["ran"] == list(STAGES)
        counts = summary["counts"]
        for stage in STAGES:
            if stage not in ("discover", "export"):
                assert counts[stage]["in"] == counts[stage]["out"] + counts[stage]["rejected_total"], stage
        candidates = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
        assert len(candidates) == sum(c["rejected_total"] for c in counts.values())
        assert {c["check"] for c in candidates} <= CHECKS and all(c["reason"] for c in candidates)
        exported = (out / "questions.jsonl").read_text().splitlines()
        assert len(exported) == counts["diversity"]["out"]
        # constrained decoding: every reply of a schema-constrained stage parses, so what rejects a
        # candidate is a named content check, never the reply's form
        grammars = httpx.get(smollm2.base_url + "/record", timeout=30).json()["grammars"]
        assert "json_schema" in grammars
        assert not [c for c in candidates if c["check"] == "unparseable_reply" and c["stage"] != "v1"
                    and c["stage"] != "v2"], [c["reason"] for c in candidates if c["check"] == "unparseable_reply"]
        assert counts["compose"]["out"] >= 1, counts  # questions written from the model's clues

        # what the model received: one clues call per candidate, with the generator's sampling
        assert requests and all(b["model"] == MODEL for b in requests)
        clue_calls = [b for b in requests if "Write clues about an entity" in b["messages"][0]["content"]]
        assert len(clue_calls) == counts["clues"]["in"]
        assert all((b["seed"], b["temperature"]) == (7, 0.0) for b in clue_calls)
        by_check = Counter(c["check"] for c in candidates if c["stage"] in ("clues", "compose", "validate"))

        # a replay asks the model nothing (and no KG) and rewrites the directory byte for byte
        cache = tmp_path / "cache.sqlite3"
        shutil.copy(out / "cache.sqlite3", cache)
        again = tmp_path / "again"
        rc, _, stderr = run_watched([*cmd[:-1], str(again), "--cache-mode", "replay", "--cache", str(cache)],
                                    smollm2, tmp_path, timeout_s=600)
        assert rc == 0, stderr
        assert len(requests_of(smollm2)) == len(requests)
        shutil.copy(cache, again / "cache.sqlite3")
        assert_same_tree(out, again)

        # at least one question from SmolLM2's replies passed validation (unique as it states
        # its clues, nothing named or leaked, relations mapped) and V1/V2, and was exported
        assert exported, f"no question exported: {dict(Counter(c['check'] for c in candidates))}"
        rows = [json.loads(line) for line in exported]
        assert all(r["metadata"]["drbencher"]["uniqueness"]["count"] == 1 for r in rows)
        assert all(r["metadata"]["question"] in {json.loads(x)["question"] for x in
                                                 (out / "composed.jsonl").read_text().splitlines()} for r in rows)

        # the exported questions answered by SmolLM2 (an agent over the support corpus) and
        # graded by the numeric judge: the whole path, with a real model
        support = tmp_path / "support.sqlite3"
        rc, _, stderr = run_watched([sys.executable, *CLI[1:], "build", str(out / "support_docs.jsonl"),
                                     "--out", str(support), "--quiet"], smollm2, tmp_path, timeout_s=600)
        assert rc == 0, stderr
        answers = tmp_path / "answers"
        rc, _, stderr = run_watched(
            [sys.executable, *CLI[1:], "run", "--questions", str(out / "questions.jsonl"), "--database", str(support),
             "--model", MODEL, "--base-url", base_url, "--out", str(answers), "--preset", "dr256", "--quiet",
             "--max-attempts", "2", "--backoff", "0.1"], smollm2, tmp_path, timeout_s=1800)
        assert rc == 0, stderr
        rc, graded, stderr = run_watched(
            [sys.executable, *CLI[1:], "score", str(answers), "--questions", str(out / "questions.jsonl"),
             "--judge", "numeric", "--json"], smollm2, tmp_path, timeout_s=600)
        assert rc == 0, stderr
        scores = json.loads(graded)
        assert scores["n"] == len(exported) and scores["accuracy"]["n"] == len(exported)
    print(f"\nsmoke: drbencher with SmolLM2: {len(requests)} model calls, stage counts "
          f"{ {s: (c['in'], c['out']) for s, c in counts.items()} }, text-stage rejections {dict(by_check)}, "
          f"{len(exported)} exported, graded by the numeric judge: {scores['accuracy']['count']} correct")
