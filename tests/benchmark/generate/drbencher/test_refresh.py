"""The staleness audit, ``drsearch generate drbencher refresh GEN_DIR``: a generator run on the
fixture behind a real ``drsearch kg serve``, then the same graph (nothing flagged) and the graph
with one value changed (exactly the question built on it flagged), and the bad inputs."""

from __future__ import annotations

import io
import json
import socket
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from drsearch.benchmark.generate.drbencher.refresh import _moved
from drsearch.dev.chat import serve_rules
from drsearch.dev.drbencher import RULES
from drsearch.tools.cli import main

from ....helpers import DATA
from .kgserver import kg_serve
from .test_kg_stages import generate
from .test_pipeline import config_for

pytest.importorskip("pyoxigraph", reason="drsearch kg serve needs the kg extra (pyoxigraph)")

EVEREST = "drbencher-Q513:pendulum_drift"


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def gen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A generated directory, and the endpoint URL its manifest records (served on while the module runs)."""
    tmp = tmp_path_factory.mktemp("refresh")
    with kg_serve() as kg:
        with serve_rules(RULES) as llm:
            rc, _, err = generate(config_for(tmp, kg, llm.url), tmp / "gen")
        assert rc == 0, err
        yield tmp / "gen", kg


def refresh(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    return main(["generate", "drbencher", "refresh", *argv], buf), buf.getvalue()


def test_the_same_graph_flags_nothing(gen: tuple[Path, str]) -> None:
    out, kg = gen
    rc, text = refresh(str(out), "--json")
    result: dict[str, Any] = json.loads(text)
    exported = [json.loads(line)["metadata"]["qid"] for line in (out / "questions.jsonl").read_text().splitlines()]
    assert rc == 0 and result["endpoint"] == kg and result["flagged"] == []
    assert [i["item"] for i in result["items"]] == exported and EVEREST in exported
    assert all(i["gold_now"] == i["gold_then"] and i["facts_missing"] == [] for i in result["items"])
    rc, printed = refresh(str(out))
    assert rc == 0 and f"{len(exported)} item(s) against {kg}: ok {len(exported)}," in printed


def test_a_changed_value_flags_exactly_its_question(gen: tuple[Path, str], tmp_path: Path) -> None:
    """Mount Everest's elevation 8,848.86 m → 8,000 m (its truthy value and its statement):
    the pendulum question on it moves (drift = 86,400 · h / R = 86,400 · 8,000 / 6,371,000 = 108.4916:
    120.00 s/day → 108.49, 9.59 % off), the others hold."""
    out, _ = gen
    changed = tmp_path / "kg.ttl"
    text = (DATA / "kg/kg.ttl").read_text()
    assert text.count('"8848.86"^^xsd:decimal') >= 2
    changed.write_text(text.replace('"8848.86"^^xsd:decimal', '"8000"^^xsd:decimal'))
    with kg_serve(changed) as url:
        rc, text = refresh(str(out), "--endpoint", url, "--json")
        result: dict[str, Any] = json.loads(text)
        assert rc == 3 and result["flagged"] == [EVEREST]
        item = next(i for i in result["items"] if i["item"] == EVEREST)
        assert item["status"] == "moved" and item["gold_then"] == "120.00 s/day"
        assert item["gold_now"] == "108.49 s/day" and item["relative_change"] == pytest.approx(11.51 / 120, abs=1e-9)
        assert item["values_changed"] == [{"now": "8000", "pid": "P2044", "qid": "Q513", "then": "8848.86"}]
        assert result["counts"]["ok"] == len(result["items"]) - 1
        rc, printed = refresh(str(out), "--endpoint", url)
        assert rc == 3 and f"  {EVEREST}: gold 120.00 s/day -> 108.49 s/day" in printed


def test_a_removed_fact_breaks_its_chain(gen: tuple[Path, str], tmp_path: Path) -> None:
    """A grounded clue fact of the Everest question taken out of the graph: its gold holds, its chain
    does not."""
    out, _ = gen
    row = next(json.loads(line) for line in (out / "questions.jsonl").read_text().splitlines()
               if json.loads(line)["metadata"]["qid"] == EVEREST)
    clue = next(c for c in row["metadata"]["drbencher"]["clues"] if c["verdict"] == "grounded" and c["hops"] == 1)
    s, p, o = clue["triple"]
    import pyoxigraph

    store = pyoxigraph.Store()  # the fixture graph less that one triple (SPARQL update of the parsed graph)
    store.load(path=str(DATA / "kg/kg.ttl"), format=pyoxigraph.RdfFormat.TURTLE)
    wd, wdt = "http://www.wikidata.org/entity/", "http://www.wikidata.org/prop/direct/"
    assert store.query(f"ASK {{ <{wd}{s}> <{wdt}{p}> <{wd}{o}> }}")
    store.update(f"DELETE DATA {{ <{wd}{s}> <{wdt}{p}> <{wd}{o}> }}")
    changed = tmp_path / "kg.ttl"
    store.dump(output=str(changed), format=pyoxigraph.RdfFormat.TURTLE, from_graph=pyoxigraph.DefaultGraph())
    with kg_serve(changed) as url:
        rc, text = refresh(str(out), "--endpoint", url, "--json")
    result = json.loads(text)
    assert rc == 3 and result["flagged"] == [EVEREST]
    item = result["items"][[i["item"] for i in result["items"]].index(EVEREST)]
    assert item["status"] == "chain_broken" and item["facts_missing"] == [[s, p, o]]
    assert item["gold_now"] == item["gold_then"]


def test_bad_input_is_one_line_and_exit_2(gen: tuple[Path, str], tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out, _ = gen
    rc, text = refresh(str(out), "--endpoint", f"http://127.0.0.1:{_port()}/sparql")  # nothing listens
    err = capsys.readouterr().err
    assert rc == 2 and text == "" and "unreachable" in err and len(err.strip().splitlines()) == 1
    rc, _ = refresh(str(tmp_path))  # not a generator directory
    err = capsys.readouterr().err
    assert rc == 2 and "no questions.jsonl" in err and len(err.strip().splitlines()) == 1
    (tmp_path / "questions.jsonl").write_text("")
    rc, _ = refresh(str(tmp_path))  # questions but no manifest to take the endpoint from
    err = capsys.readouterr().err
    assert rc == 2 and "manifest.json" in err and len(err.strip().splitlines()) == 1


def test_the_tolerance_decides_what_moved() -> None:
    assert _moved(Decimal("120.00"), Decimal("122.39"), Decimal("0.02")) == (False, pytest.approx(0.019917, abs=1e-6))
    assert _moved(Decimal("120.00"), Decimal("122.41"), Decimal("0.02"))[0]
    assert _moved(Decimal("14971"), Decimal("14972"), Decimal("0"))[0]  # exact: history
    assert not _moved(Decimal("14971"), Decimal("14971"), Decimal("0"))[0]
