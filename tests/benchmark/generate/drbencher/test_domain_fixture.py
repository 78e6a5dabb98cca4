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


def test_every_wikidata_id_of_the_domain_graph_is_listed_with_its_provenance() -> None:
    """Every ``wd:`` entity and property the domain graph writes is named in a ``wikidata`` row of
    data/domains/provenance.tsv or in data/kg/provenance.tsv (the shared graph's entities)."""
    import re

    listed = {m for r in provenance() for m in re.findall(r"\b[QP]\d+\b", " ".join(
        (r["record"], r["field"], r["value"])))}
    with (DATA / "kg/provenance.tsv").open(encoding="utf-8", newline="") as f:
        listed |= {r["id"].removeprefix("wd:") for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)}
    used = {term.rsplit("/", 1)[1] for t in statements() for term in t
            if term.startswith((WD, WDT))}
    assert used and sorted(used - listed) == []


def test_caffeine_and_p53_have_three_distinct_two_hop_chains() -> None:
    """The chains stage keeps one path per (p1, p2) pair and asks for three: caffeine's and p53's
    statements give them; Log4Shell's and aspirin's give none."""
    ts = statements()
    out: dict[str, set[str]] = {}
    for s, p, o in ts:
        if p.startswith(WDT) and o.startswith(WD):
            out.setdefault(s.removeprefix(WD), set()).add(p.removeprefix(WDT) + " " + o.removeprefix(WD))

    def pairs(qid: str) -> set[tuple[str, str]]:
        found = set()
        for first in out.get(qid, ()):
            p1, mid = first.split()
            if p1 in ("P31", "P279"):
                continue
            found |= {(p1, second.split()[0]) for second in out.get(mid, ())}
        return found

    assert len(pairs("Q60235")) >= 3 and len(pairs("Q283350")) >= 3
    assert pairs("Q18216") == set() and pairs("Q110068433") == set()
