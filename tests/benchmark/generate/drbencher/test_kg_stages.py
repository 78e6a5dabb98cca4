"""Discover, Chains and Gold end to end: ``drsearch generate drbencher`` against a real
``drsearch kg serve`` of the shipped fixture on 127.0.0.1."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsearch.tools.cli import main as drsearch

from ..test_stages import assert_same_tree
from .kgserver import DOCS, kg_serve


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with kg_serve() as url:
        yield url


def write_config(tmp: Path, endpoint: str, **changes: Any) -> Path:
    config = json.loads((DOCS.parent / "gen.json").read_text())
    config["kg"]["endpoint"] = endpoint
    config["articles"] = str(DOCS)
    config.update(changes)
    path = tmp / "gen.json"
    path.write_text(json.dumps(config, indent=2))
    return path


def generate(config: Path, out: Path, *args: str) -> tuple[int, dict[str, Any] | None, str]:
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = drsearch(["generate", "drbencher", "--config", str(config), "--out", str(out), *args], buf)
    return rc, (json.loads(buf.getvalue()) if rc == 0 else None), err.getvalue()


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_the_kg_stages_on_the_fixture(endpoint: str, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    rc, summary, err = generate(write_config(tmp_path, endpoint), out, "--until", "gold")
    assert rc == 0, err
    assert summary is not None and summary["ran"] == ["discover", "chains", "gold"]
    counts = summary["counts"]
    entities = rows(out / "entities.jsonl")
    assert counts["discover"]["out"] == len(entities) and counts["discover"]["in"] == len(entities)
    assert {"Q3375", "Q1490", "Q1735", "Q1726", "Q16957"} <= {e["qid"] for e in entities}
    # an entity without a confirmed Wikidata id (a local: IRI, data/kg/README.md) is never a candidate:
    # not the Nufenen Pass (a pass is a type of the topic), nor Hochwanner
    assert all(re.fullmatch(r"Q[1-9][0-9]*", e["qid"]) for e in entities)
    assert {"Nufenen Pass", "Hochwanner"}.isdisjoint({e["label"] for e in entities})
    # deterministic order within a topic: SHA-256 of the QID, then the QID
    import hashlib
    mountains = [e["qid"] for e in entities if e["topic"] == 0]
    assert mountains == sorted(mountains, key=lambda q: (hashlib.sha256(q.encode()).hexdigest(), q))

    chained = {e["qid"]: e for e in rows(out / "chains.jsonl")}
    zug = chained["Q3375"]["chains"]
    assert len(zug) >= 3 and len({(c["p1"], c["p2"]) for c in zug}) == len(zug)
    assert all(c["mid"] != "Q3375" and c["obj"] != "Q3375" for c in zug)  # no return to the entity
    assert all(c["p1"] not in ("P31", "P279", "P30") for c in zug)  # generic predicates excluded
    rarities = [int(c["rarity"]) for c in zug]
    assert rarities == sorted(rarities)
    munich = chained["Q1726"]["chains"]
    assert {"mid": "Q106588", "mid_label": "Isar", "obj": "Q1653", "obj_label": "Danube", "p1": "P206",
            "p2": "P403"} in [{k: v for k, v in c.items() if k != "rarity"} for c in munich]
    # no chain runs through a local id (the Zugspitze's range and municipality have none confirmed)
    assert all(re.fullmatch(r"Q[1-9][0-9]*", c[k]) for e in chained.values() for c in e["chains"]
               for k in ("mid", "obj"))
    assert "Wetterstein" not in {c["mid_label"] for c in zug}
    candidates = rows(out / "candidates.jsonl")
    planets = [c for c in candidates if c["stage"] == "chains" and c["candidate"]["domain"] == "geography"]
    assert planets and all(c["check"] == "too_few_chains" for c in planets)
    assert counts["chains"]["in"] == counts["discover"]["out"]
    assert counts["chains"]["out"] + counts["chains"]["rejected_total"] == counts["chains"]["in"]

    golds = {g["cid"]: g for g in rows(out / "gold.jsonl")}
    by_entity: dict[str, list[str]] = {}
    for g in golds.values():
        by_entity.setdefault(g["qid"], []).append(g["template"])
    assert all(len(ts) <= 3 and len(set(ts)) == len(ts) for ts in by_entity.values())
    density = [g for g in golds.values() if g["template"] == "population_density"]
    assert density and all(g["cci"]["P"] == 2 and g["cci"]["E"] == 1 for g in density)
    distance = [g for g in golds.values() if g["template"] == "haversine_distance"]
    assert all(g["cci"]["E"] == 2 and g["entities"][1]["role"] == "partner" for g in distance)
    # every candidate is a kept row or a rejection with its check
    gold_counts = counts["gold"]
    assert gold_counts["in"] == gold_counts["out"] + gold_counts["rejected_total"] == len(golds) + sum(
        1 for c in candidates if c["stage"] == "gold")


def test_the_zugspitze_pendulum_gold_under_a_seed_that_draws_it(endpoint: str, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    config = write_config(tmp_path, endpoint, templates=["pendulum_drift", "population_density"])
    assert generate(config, out, "--until", "gold")[0] == 0
    drift = next(g for g in rows(out / "gold.jsonl") if g["cid"] == "Q3375:pendulum_drift")
    assert drift["gold"]["label"] == "40.17 s/day" and drift["cci"] == {"E": 1, "P": 1, "total": 2}
    density = next(g for g in rows(out / "gold.jsonl") if g["cid"] == "Q1735:population_density")
    assert density["cci"] == {"E": 1, "P": 2, "total": 3} and density["gold"]["label"] == "1257.8"  # 131,961 / 104.91
    vienna = next(g for g in rows(out / "gold.jsonl") if g["cid"] == "Q1741:population_density")
    assert vienna["gold"]["label"] == "4778.7"  # 1,982,097 / 414.78 (the public area; the fixture had 414.87)


def test_record_then_replay_offline_is_byte_identical(tmp_path: Path) -> None:
    first = tmp_path / "first"
    with kg_serve() as own:  # an endpoint of this test's own, stopped before the replay
        config = write_config(tmp_path, own)
        assert generate(config, first, "--until", "gold")[0] == 0
    cache = tmp_path / "cache.sqlite3"
    shutil.copy(first / "cache.sqlite3", cache)
    again = tmp_path / "again"
    rc, summary, err = generate(config, again, "--cache-mode", "replay", "--cache", str(cache), "--until", "gold")
    assert rc == 0, err  # offline: the endpoint is down, neither probed nor asked
    assert summary is not None and summary["ran"] == ["discover", "chains", "gold"]
    shutil.copy(cache, again / "cache.sqlite3")
    assert_same_tree(first, again)
    rc, _, err = generate(config, tmp_path / "live", "--until", "gold")  # while a live run needs it: exit 2, nothing written
    assert rc == 2 and "unreachable" in err and not (tmp_path / "live").exists()


def test_bad_input_is_exit_2_before_anything_is_written(endpoint: str, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    dead = write_config(tmp_path, "http://127.0.0.1:9/sparql")
    rc, _, err = generate(dead, out, "--until", "gold")
    assert rc == 2 and "SPARQL endpoint http://127.0.0.1:9/sparql is unreachable" in err and not out.exists()
    bad = tmp_path / "bad.json"
    bad.write_text(write_config(tmp_path, endpoint).read_text().replace('"target": 10', '"target": 10, "x": 1', 1))
    rc, _, err = generate(bad, out, "--until", "gold")
    assert rc == 2 and f"{bad}:" in err and "topics.0.x: Extra inputs are not permitted" in err
    assert err.count("\n") == 1 and not out.exists()


def test_a_topic_that_finds_nothing_is_a_counted_warning_and_seeds_fill_in(endpoint: str, tmp_path: Path) -> None:
    topics = [{"domain": "mountains", "types": ["Q8502"], "properties": ["P2044"], "min_sitelinks": 1000,
               "target": 2, "seed_qids": ["Q3375", "Q2", "Q513"]},
              {"domain": "history", "types": ["Q5107"], "properties": ["P571"], "target": 3}]
    out = tmp_path / "gen"
    rc, _, err = generate(write_config(tmp_path, endpoint, topics=topics), out, "--until", "discover")
    assert rc == 0, err
    report = json.loads((out / "discover.json").read_text())
    assert report["warnings"] == 1 and report["topics"][1]["warning"] == "no entity found for this topic"
    assert report["topics"][0] == {"domain": "mountains", "found": 0, "from_seeds": 2, "kept": 2, "topic": 0,
                                   "warning": None}
    assert [e["qid"] for e in rows(out / "entities.jsonl")] == ["Q3375", "Q513"]
    rejected = rows(out / "candidates.jsonl")
    assert [(c["key"], c["check"]) for c in rejected] == [("0:Q2", "missing_property")]


def test_a_quantity_stated_in_feet_gives_metres_and_an_unknown_unit_rejects_the_entity(tmp_path: Path) -> None:
    """The same queries as on the live service: the statement's unit is read and converted (the
    Zugspitze stated as 9,718 ft, as Wikidata may state an elevation, is 2,962.0464 m); Mont Blanc
    stated in centimetres (a unit outside the elevation's units table) is rejected, counted."""
    ttl = (DOCS.parent / "kg.ttl").read_text()
    stated = ('psv:P2044 [ wikibase:quantityAmount "{}"^^xsd:decimal ; wikibase:quantityUnit wd:{} ]')
    for qid, metres, amount, unit in (("Q3375", "2962", "9718", "Q3710"), ("Q583", "4805.59", "480559", "Q174728")):
        line = next(x for x in ttl.splitlines() if x.startswith(f"wd:{qid} p:P2044 "))
        ttl = ttl.replace(line, line.replace(stated.format(metres, "Q11573"), stated.format(amount, unit)))
        ttl = ttl.replace(f'wdt:P2044 "{metres}"^^xsd:decimal', f'wdt:P2044 "{amount}"^^xsd:decimal')  # truthy: bare
    data = tmp_path / "kg.ttl"
    data.write_text(ttl)
    out = tmp_path / "gen"
    topics = [{"domain": "mountains", "types": ["Q8502"], "properties": ["P2044", "P625"], "target": 10}]
    with kg_serve(data) as url:
        rc, summary, err = generate(write_config(tmp_path, url, topics=topics), out, "--until", "discover")
    assert rc == 0, err
    entities = {e["qid"]: e for e in rows(out / "entities.jsonl")}
    assert entities["Q3375"]["values"]["P2044"] == {"type": "quantity", "value": "2962.0464"}
    assert entities["Q3375"]["stated"]["P2044"] == [{"amount": "9718", "unit": "Q3710"}]
    assert entities["Q513"]["values"]["P2044"]["value"] == "8848.86"  # stated in metres: unchanged
    assert "Q583" not in entities
    (reject,) = [c for c in rows(out / "candidates.jsonl") if c["candidate"]["qid"] == "Q583"]
    assert reject["check"] == "unknown_unit"
    assert reject["reason"] == ("Q583: P2044 480559 is stated in unit Q174728, not in the units table of P2044 "
                                "(Q11573 metre, Q3710 foot, Q828224 kilometre)")
    assert summary is not None and summary["counts"]["discover"]["rejected"] == {"unknown_unit": 1}


def test_uniqueness_is_counted_for_the_question_as_written_not_within_an_unstated_type() -> None:
    """The question never states the topic's type, so every entity of the graph satisfying its clues
    is a candidate: "its capital is Vienna" fits Austria-Hungary and Austria, though only one is a
    historical country."""
    from drsearch.benchmark.generate.drbencher.kgstore import KGStore
    from drsearch.benchmark.generate.drbencher.textstages import uniqueness_query

    chains = [{"mid": "Q1741", "mid_label": "Vienna", "obj": "Q40", "obj_label": "Austria", "p1": "P36", "p2": "P17"}]
    c = {"chains": chains, "question": "Its capital was Vienna. Compute the days it existed.",
         "clues": [{"chain": 0, "hops": 1, "text": "Its capital was Vienna.", "triple": ["Q28513", "P36", "Q1741"],
                    "verdict": "grounded"}]}
    status, body = KGStore(DOCS.parent / "kg.ttl").answer(uniqueness_query(c))
    assert status == 200
    found = [b["x"]["value"].rsplit("/", 1)[1] for b in json.loads(body)["results"]["bindings"]]
    assert found == ["Q28513", "Q40"]


def test_a_changed_knowledge_graph_is_a_changed_input(tmp_path: Path) -> None:
    """The same endpoint URL serving a graph with one value changed (the Zugspitze's elevation):
    a plain rerun reuses the recorded answers and says so on stderr; ``--refresh-kg`` asks again
    and reruns from the first stage whose answers changed; asked again unchanged, nothing reruns."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "gen"
    with kg_serve(port=port) as url:
        config = write_config(tmp_path, url, templates=["pendulum_drift"])
        rc, summary, err = generate(config, out, "--until", "gold")
        assert rc == 0, err
    drift = next(g for g in rows(out / "gold.jsonl") if g["cid"] == "Q3375:pendulum_drift")
    assert drift["gold"]["label"] == "40.17 s/day"
    recorded = rows(out / "kg.discover.jsonl")
    assert recorded and all(set(r) == {"query", "response_sha256"} for r in recorded)
    changed = tmp_path / "kg.ttl"
    changed.write_text((DOCS.parent / "kg.ttl").read_text().replace('"2962"^^xsd:decimal', '"3000"^^xsd:decimal'))
    with kg_serve(changed, port=port) as again:
        assert again == url
        rc, summary, err = generate(config, out, "--until", "gold")
        assert rc == 0 and summary is not None and summary["skipped"] == ["discover", "chains", "gold"]
        assert err.count("\n") == 1 and "warning: stage discover reuses the" in err and "--refresh-kg" in err
        rc, summary, err = generate(config, out, "--until", "gold", "--refresh-kg")
        assert rc == 0, err
        assert summary is not None and summary["ran"] == ["discover", "chains", "gold"] and err == ""
        drift = next(g for g in rows(out / "gold.jsonl") if g["cid"] == "Q3375:pendulum_drift")
        assert drift["gold"]["label"] != "40.17 s/day" and drift["properties"][0]["value"] == "3000"
        rc, summary, err = generate(config, out, "--until", "gold", "--refresh-kg")
        assert rc == 0 and summary is not None and summary["ran"] == [] and err == ""
