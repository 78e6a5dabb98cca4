"""data/domains/kg.ttl's entities of the API domains against data/domains/provenance.tsv: the
identifier each maps from is the one its topic asks (P3587 CVE ID, P352 UniProt ID), every id
written as a Wikidata id is listed as confirmed, and what nothing confirmed is absent."""

from __future__ import annotations

import csv

import pytest

from ....helpers import DATA

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"


def statements() -> list[tuple[str, str, str]]:
    ox = pytest.importorskip("pyoxigraph", reason="the kg extra (pyoxigraph) is not installed")
    return [(str(t.subject.value), t.predicate.value, str(getattr(t.object, "value", t.object)))
            for t in ox.parse((DATA / "domains/kg.ttl").read_bytes(), format=ox.RdfFormat.TURTLE)]


def provenance() -> list[dict[str, str]]:
    with (DATA / "domains/provenance.tsv").open(encoding="utf-8", newline="") as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r["service"] == "wikidata"]


def carrying(ts: list[tuple[str, str, str]], pid: str, value: str) -> list[str]:
    return [s.removeprefix(WD) for s, p, o in ts if p == WDT + pid and o == value]


def test_the_security_and_protein_identifiers_map_to_their_confirmed_items() -> None:
    ts = statements()
    assert carrying(ts, "P3587", "CVE-2021-44228") == ["Q110068433"]  # Log4Shell
    assert carrying(ts, "P3587", "CVE-2014-0160") == []  # Heartbleed's id was found nowhere
    assert carrying(ts, "P352", "P04637") == ["Q283350"]  # p53
    classes = {s.removeprefix(WD): o.removeprefix(WD) for s, p, o in ts if p == WDT + "P31"}
    assert (classes["Q110068433"], classes["Q283350"]) == ("Q631425", "Q8054")


@pytest.mark.parametrize("qid", ["Q110068433", "Q631425", "Q283350", "Q8054", "P3587"])
def test_each_new_id_is_listed_as_confirmed_with_its_source(qid: str) -> None:
    """The id itself (p53's P352 statement stays ``unverified``: only the id is asserted here)."""
    rows = [r for r in provenance() if r["record"].startswith((f"wd:{qid} ", f"{qid} "))
            and r["field"].startswith(("QID", "property id"))]
    assert rows and all(r["verdict"].startswith("verified") and r["source"] for r in rows), rows
