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

from drsearch.benchmark.generate.drbencher.checks import mentions
from drsearch.benchmark.generate.drbencher.llm import first_json_object
from drsearch.benchmark.generate.drbencher.textstages import (
    RELATIONS_SCHEMA,
    clue_entities,
    clues_schema,
    compose_schema,
    described,
    uniqueness_query,
)
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
    composed = [json.loads(line) for line in (tmp_path / "structured" / "composed.jsonl").read_text().splitlines()]
    unnamed = {c["question"] for c in composed
               if not all(mentions(c["question"], label) for label in clue_entities(described(c)))}
    assert unnamed and len(unnamed) < len(composed)
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
                # "unmapped": []; the rules written to test a rejection (a clue citing a hop of no
                # chain or not naming its entity, a question that leaves one unnamed) write what
                # the schemas rule out
                assert kind(body) == "clues" or value == {"ok": True} or (
                    kind(body) == "question" and value["question"] in unnamed), (kind(body), e.message)
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


VIENNA = [  # two chains through Austria to Italy: one second hop, stated once
    {"mid": "Q1653", "mid_label": "Danube", "obj": "Q316393", "obj_label": "Brigach", "p1": "P206", "p2": "P885"},
    {"mid": "Q40", "mid_label": "Austria", "obj": "Q38", "obj_label": "Italy", "p1": "P17", "p2": "P47"},
    {"mid": "Q40", "mid_label": "Austria", "obj": "Q38", "obj_label": "Italy", "p1": "P1376", "p2": "P47"}]
FACTS = [{"chain": 0, "hops": 1, "text": "It lies on the Danube.", "triple": ["Q1741", "P206", "Q1653"]},
         {"chain": 1, "hops": 2, "text": "It is in Austria, which borders Italy.", "triple": ["Q40", "P47", "Q38"]},
         {"chain": 2, "hops": 1, "text": "Its country has it as capital: Austria.",
          "triple": ["Q1741", "P1376", "Q40"]}]


def valid(value: Any, schema: dict[str, Any]) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(value)


def test_the_clues_schema_asks_for_distinct_facts_about_it_naming_their_entity() -> None:
    _, schema = clues_schema("Q1741", VIENNA)
    assert valid({"facts": FACTS}, schema)

    def with_fact(i: int, **changes: Any) -> dict[str, Any]:
        return {"facts": [{**f, **changes} if j == i else f for j, f in enumerate(FACTS)]}

    # a 1-hop fact that does not name where its triple points ("a river": every city on one)
    assert not valid(with_fact(0, text="It lies on a river."), schema)
    # the second hop chain 1 offers already: one fact, counted once by grounding
    assert not valid(with_fact(2, hops=2, text="It is in Austria, next to Italy.", triple=["Q40", "P47", "Q38"]),
                     schema)
    assert not valid(with_fact(0, text="Vienna lies on the Danube."), schema)  # "it", never by name
    assert not valid(with_fact(0, text="It lies on the\nDanube."), schema)  # no raw control character


def test_the_question_schema_names_every_entity_of_the_clues_and_states_no_number_of_its_own() -> None:
    c = {"chains": VIENNA, "entities": [{"aliases": ["Wien"], "label": "Vienna", "qid": "Q1741"}],
         "clues": [{**f, "verdict": "grounded"} for f in FACTS]}
    labels = clue_entities(described(c))
    assert labels == ["Danube", "Austria", "Italy"]  # chain 1's second hop names Italy too
    task = "its population density (inhabitants per square kilometre)"
    _, schema = compose_schema(labels, task)
    question = "It lies on the Danube, in Austria, which borders Italy. What is its population density?"
    assert valid({"question": question}, schema)
    # what the schema admits, validation's uniqueness query reads as named: no entity relaxed
    assert "wdt:P279?" not in uniqueness_query({**c, "question": question})
    assert "wdt:P279?" in uniqueness_query({**c, "question": question.replace("the Danube", "a river")})
    assert not valid({"question": question.replace("the Danube", "a river")}, schema)
    assert not valid({"question": "It lies in Austria, on the Danube, next to Italy. Density?"}, schema)
    assert not valid({"question": question + " (About 4778.7.)"}, schema)  # the reference answer
    # a number the task or its parameters state is one the question may repeat, no other
    _, schema = compose_schema(labels, "its population after n years of growth at r %. Use years = 12.")
    assert valid({"question": question.replace("?", " after 12 years?")}, schema)
    assert not valid({"question": question.replace("?", " after 13 years?")}, schema)
    assert not valid({"question": question.replace("?", " after 1 years?")}, schema)


def test_the_relations_schema_is_ok_with_nothing_unmapped_or_not_ok_naming_a_few() -> None:
    _, schema = RELATIONS_SCHEMA
    assert valid({"ok": True, "unmapped": []}, schema)
    assert valid({"ok": False, "unmapped": ["produced by"]}, schema)
    assert not valid({"ok": True, "unmapped": ["phrase"]}, schema)
    assert not valid({"ok": False, "unmapped": []}, schema)
    assert not valid({"ok": False, "unmapped": ["Au"] * 9}, schema)
