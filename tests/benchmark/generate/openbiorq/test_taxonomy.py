"""The default classification is the paper's: 12 level-one biomedical domains and four tracks
with their "why open"; the earlier question types and tracks stay available as options."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import drsearch.benchmark.generate.openbiorq as obrq
from drsearch.benchmark.datasets.openbiorq_taxonomy import (
    DOMAINS,
    LEGACY_TRACKS,
    QUESTION_TYPES,
    TRACKS,
    domain_name,
)
from drsearch.dev.chat import RuleResponder, serve_rules

from .conftest import SOURCES, generate, jsonl
from .rules import RULES

# the domains the paper's text names (§5, Appendix C.5); Table 7's rows are not in its text
NAMED_IN_PAPER = {"Clinical Medicine", "Neuroscience", "Oncology", "Infectious Disease",
                  "Medical AI & Informatics", "Surgical Sciences", "Genomics"}


def test_the_default_taxonomy_is_the_papers_twelve_domains() -> None:
    assert tuple(d.label for d in DOMAINS) == obrq.TAXONOMY and len(set(obrq.TAXONOMY)) == 12
    assert {d.name for d in DOMAINS if d.named_by_paper} == NAMED_IN_PAPER
    assert obrq.OpenBioRQSettings(sources=Path("s"), base_url="http://127.0.0.1:9/v1").taxonomy == obrq.TAXONOMY
    assert domain_name("medical_ai_informatics") == "Medical AI & Informatics" and domain_name("x") == "x"
    assert not set(QUESTION_TYPES) & set(obrq.TAXONOMY)


def test_the_default_tracks_are_the_papers_four_with_why_open() -> None:
    assert obrq.DEFAULT_TRACKS == ("retrieval_verified", "expert_consensus", "priority_setting", "expand")
    why = {t.name: t.why_open for t in TRACKS}
    assert "follow-up evidence" in why["retrieval_verified"] and "NICE" in why["expert_consensus"]
    assert "Delphi" in why["priority_setting"] and "Cochrane" in why["expand"]


@pytest.fixture()
def responder() -> object:
    with serve_rules(RULES) as r:
        yield r


def test_refine_labels_domains_by_default_and_question_types_on_request(responder: RuleResponder,
                                                                        tmp_path: Path) -> None:
    rc, summary, _ = generate("refine", tmp_path / "d", base_url=responder.url)
    assert rc == 0 and summary is not None
    labels = {r["taxonomy"] for r in jsonl(tmp_path / "d/refined.jsonl")}
    assert labels <= set(obrq.TAXONOMY) and "clinical_medicine" in labels
    prompt = next(str(b["messages"][-1]["content"]) for b in responder.requests
                  if "Taxonomy:" in str(b["messages"][-1]["content"]))
    assert json.dumps(list(obrq.TAXONOMY)) in prompt
    # the earlier list by name: the rule-based refiner labels domains, so every item is now off-taxonomy
    rc, summary, _ = generate("refine", tmp_path / "q", "--taxonomy", "question-types", base_url=responder.url)
    assert rc == 0 and summary is not None and jsonl(tmp_path / "q/refined.jsonl") == []
    manifest = json.loads((tmp_path / "q/manifest.json").read_text())
    assert manifest["stages"]["refine"]["settings"]["taxonomy"] == list(QUESTION_TYPES)


def test_legacy_tracks_are_refused_by_default_and_read_when_named(tmp_path: Path) -> None:
    rows = jsonl(SOURCES)
    for r in rows:
        r["track"] = "clinical"
    legacy = tmp_path / "legacy.jsonl"
    legacy.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rc, _, err = generate("extract", tmp_path / "o", sources=legacy)
    assert rc == 2 and "unknown track(s) 'clinical'" in err and "known: retrieval_verified" in err
    assert len(obrq.read_sources(legacy, LEGACY_TRACKS)) == len(rows)
