"""``generator.structured_output``: the text stages ask for their reply's JSON schema the
OpenAI way (``response_format``, ``json_schema``, strict), so a server that constrains decoding
to it (llama.cpp, vLLM; the SmolLM2 smoke server) cannot send a reply the stage fails to parse.
Off (the default), the requests and the stage settings are what they always were."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from drsearch.benchmark.generate.drbencher.llm import first_json_object
from drsearch.dev.chat import RuleResponder, serve_rules
from drsearch.dev.drbencher import RULES

from ..test_stages import assert_same_tree
from .kgserver import kg_serve
from .test_kg_stages import generate
from .test_pipeline import config_for

STAGE_OF = {"Write clues about": "clues", "Does the article support": "support",
            "Write one question": "question", "Check a question against": "relations"}


def kind(body: dict[str, Any]) -> str | None:
    text = body["messages"][0]["content"]
    return next((k for needle, k in STAGE_OF.items() if text.startswith(needle)), None)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[str, Any]]:
    with kg_serve() as kg, serve_rules(RULES) as llm:
        yield kg, llm


def test_structured_output_sends_each_replys_schema_and_changes_nothing_else(
        servers: tuple[str, Any], tmp_path: Path) -> None:
    kg, llm = servers
    (tmp_path / "a").mkdir()
    plain = config_for(tmp_path / "a", kg, llm.url)
    rc, summary_plain, err = generate(plain, tmp_path / "plain")
    assert rc == 0, err
    sent_plain = [b for b in llm.requests if kind(b)]
    assert sent_plain and all("response_format" not in b for b in sent_plain)
    llm.requests.clear()

    (tmp_path / "b").mkdir()
    structured = config_for(tmp_path / "b", kg, llm.url)
    config = json.loads(structured.read_text())
    config["generator"]["structured_output"] = True
    structured.write_text(json.dumps(config))
    rc, summary, err = generate(structured, tmp_path / "structured")
    assert rc == 0, err
    sent = [b for b in llm.requests if kind(b)]
    assert {kind(b) for b in sent} == {"clues", "support", "question", "relations"}
    for body in sent:
        fmt = body["response_format"]
        assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
        assert fmt["json_schema"]["name"] == kind(body)
        jsonschema.Draft202012Validator.check_schema(fmt["json_schema"]["schema"])
    # the rule model's replies that the stages parse satisfy the schemas they were asked for
    replies, checked = RuleResponder(RULES), 0
    for body in sent:
        text = replies.respond(body)[1]["choices"][0]["message"]["content"]
        value = first_json_object(text)
        if value is not None and "facts" in value and not all(
                isinstance(f, dict) and f.get("chain", 99) < 99 for f in value["facts"]):
            continue
        if value is not None:
            try:
                jsonschema.validate(value, body["response_format"]["json_schema"]["schema"])
                checked += 1
            except jsonschema.ValidationError as e:
                # a strict schema requires every property: {"ok": true} must also say
                # "unmapped": []; and a clues reply citing a hop of no chain (a rule written to
                # test that rejection) is what the clues schema rules out
                assert kind(body) == "clues" or "'unmapped' is a required property" in e.message, \
                    (kind(body), e.message)
    assert checked >= len(sent) // 2
    # a clues schema admits only the chains' own hops
    clues = next(b for b in sent if kind(b) == "clues")["response_format"]["json_schema"]["schema"]
    item = {"chain": 0, "hops": 1, "text": "It is high.", "triple": ["Q1", "P2", "Q3"]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"facts": [item] * 3}, clues)
    # the same questions either way (the rule model ignores the schema)
    assert summary["counts"] == summary_plain["counts"]
    assert_same_tree(tmp_path / "plain", tmp_path / "structured",
                     ignore={"timings.json", "cache.sqlite3", "manifest.json"})
    # the setting is part of the stages' settings (changing it reruns them); off, it is absent
    assert '"structured_output": true' in (tmp_path / "structured" / "manifest.json").read_text()
    assert "structured_output" not in (tmp_path / "plain" / "manifest.json").read_text()
