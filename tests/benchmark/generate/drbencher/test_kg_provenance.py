"""data/kg/kg.ttl against the provenance table shipped beside it (data/kg/provenance.tsv,
data/kg/README.md): every Wikidata id in the graph is listed with a source, no unconfirmed id is
written as a Wikidata id, and every listed fact is the value the graph states."""

from __future__ import annotations

import csv
import json
from decimal import Decimal
from pathlib import Path

import pytest

from .kgserver import DOCS, KG

PROVENANCE = KG.parent / "provenance.tsv"
WD = "http://www.wikidata.org/entity/"
WD_PROPS = ("http://www.wikidata.org/prop/direct/", "http://www.wikidata.org/prop/statement/value/",
            "http://www.wikidata.org/prop/statement/", "http://www.wikidata.org/prop/")
LOCAL = "https://drsearch.invalid/kg/local/"
CONFIRMED = {"verified", "corrected", "weakly supported"}
"""Verdicts under which an id may be written as a Wikidata id."""


def table(path: Path = PROVENANCE) -> list[dict[str, str]]:
    with path.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def triples(path: Path = KG) -> list[tuple[str, str, str]]:
    ox = pytest.importorskip("pyoxigraph", reason="the kg extra (pyoxigraph) is not installed")
    return [(str(getattr(t.subject, "value", t.subject)), t.predicate.value, str(getattr(t.object, "value", t.object)))
            for t in ox.parse(path.read_bytes(), format=ox.RdfFormat.TURTLE)]


def graph_ids(ts: list[tuple[str, str, str]]) -> tuple[set[str], set[str]]:
    """(``wd:`` ids, ``local:`` ids) as the graph writes them, in any position (properties too)."""
    wd: set[str] = set()
    local: set[str] = set()
    for term in (x for t in ts for x in t):
        if term.startswith(WD):
            wd.add("wd:" + term[len(WD):])
        elif term.startswith(LOCAL):
            local.add("local:" + term[len(LOCAL):])
        else:
            for prefix in WD_PROPS:
                if term.startswith(prefix):
                    wd.add("wd:" + term[len(prefix):])
                    break
    return wd, local


def problems(ttl: Path = KG, prov: Path = PROVENANCE) -> list[str]:
    """What is wrong between a graph and its provenance table (empty when they agree)."""
    rows = table(prov)
    ids = {r["id"]: r for r in rows if r["kind"] in ("entity", "property")}
    ts = triples(ttl)
    wd, local = graph_ids(ts)
    out = []
    for i in sorted(wd):
        row = ids.get(i)
        if row is None:
            out.append(f"{i} is in kg.ttl but not in provenance.tsv")
        elif row["verdict"] not in CONFIRMED or not row["source"].strip(" -"):
            out.append(f"{i} is written as a Wikidata id but provenance.tsv has it {row['verdict']!r} "
                       f"(source {row['source']!r})")
    for i in sorted(local):
        if ids.get(i, {}).get("verdict") != "local":
            out.append(f"{i} is in kg.ttl but not listed as a local id")
    for i, row in sorted(ids.items()):
        if row["verdict"] in ("refuted", "local") and i.startswith("wd:") and i in wd:
            out.append(f"{i} is {row['verdict']} in provenance.tsv but kg.ttl writes it")
        if row["verdict"] == "local" and i.split(":", 1)[1][:1] in ("Q", "P") and i.split(":", 1)[1][1:].isdigit():
            out.append(f"{i} is a local id written like a Wikidata id")
    stated: dict[tuple[str, str], set[str]] = {}
    for s, p, o in ts:
        subj = ("wd:" + s[len(WD):]) if s.startswith(WD) else ("local:" + s[len(LOCAL):]) if s.startswith(LOCAL) else s
        pid = p.rsplit("/", 1)[1]
        if p.startswith("http://www.wikidata.org/prop/direct/"):
            if o.startswith("Point("):
                lon, lat = o[len("Point("):-1].split()
                o = f"{Decimal(lat).normalize()},{Decimal(lon).normalize()}"
            elif o[:4].isdigit() and "T00:00:00Z" in o:
                o = o[:10]
            elif o.startswith(WD):
                o = "wd:" + o[len(WD):]
            stated.setdefault((subj, pid), set()).add(o)
    for r in rows:
        if r["kind"] != "fact" or r["id"] == "*":
            continue
        want = r["value"]
        if r["field"] == "P625":
            lat, lon = want.split(",")
            want = f"{Decimal(lat).normalize()},{Decimal(lon).normalize()}"
        got = stated.get((r["id"], r["field"]), set())
        if set(want.split(",")) != got and {want} != got:
            out.append(f"{r['id']} {r['field']}: provenance.tsv says {r['value']!r}, kg.ttl states {sorted(got)}")
    return out


def test_kg_ttl_agrees_with_its_provenance_table() -> None:
    assert problems() == []


def test_the_corrections_public_sources_settle_are_in_the_graph() -> None:
    rows = {(r["id"], r["field"]): r for r in table()}
    wd, local = graph_ids(triples())
    for refuted in ("wd:Q1266", "wd:Q1267", "wd:Q1268", "wd:Q1272", "wd:Q1276", "wd:Q130173", "wd:Q1662",
                    "wd:Q1667", "wd:Q35145", "wd:Q8458"):
        assert refuted not in wd and rows[(refuted, "QID")]["verdict"] == "refuted"
    assert {"wd:Q5469", "wd:Q14369", "wd:Q106588", "wd:Q271669", "wd:Q316393", "wd:Q316397"} <= wd
    assert {"local:Lepontine_Alps", "local:Uri_Alps", "local:Wetterstein", "local:Pennine_Alps",
            "local:Graian_Alps"} <= local
    assert rows[("wd:Q1741", "P2046")]["value"] == "414.78"
    assert rows[("wd:Q1653", "P885")]["value"] == "wd:Q316393,wd:Q316397"
    docs = [json.loads(line) for line in DOCS.read_text().splitlines()]
    assert "414.78 square kilometres" in next(d["text"] for d in docs if d["qid"] == "Q1741")


def test_the_values_wikidata_exports_settle_are_the_graphs() -> None:
    """Values a public Wikidata export contradicts are the export's (data/kg/README.md): Berlin's and
    Moscow's coordinates, the GDR's area, the Ottoman Empire's dissolution and capital; the Olympic
    Games carry P580 start time, as their Wikidata items do, not P585."""
    rows = {(r["id"], r["field"]): r for r in table()}
    stated: dict[tuple[str, str], set[str]] = {}
    for s, p, o in triples():
        if s.startswith(WD) and p.startswith("http://www.wikidata.org/prop/direct/"):
            stated.setdefault((s[len(WD):], p.rsplit("/", 1)[1]), set()).add(o)
    assert stated[("Q64", "P625")] == {"Point(13.383333 52.516667)"}
    assert stated[("Q649", "P625")] == {"Point(37.6175 55.750556)"}
    assert stated[("Q16957", "P2046")] == {"108179"}
    assert stated[("Q12560", "P576")] == {"1922-11-17T00:00:00Z"}
    assert stated[("Q12560", "P36")] == {WD + "Q16869"}
    assert stated[("Q8420", "P580")] == {"1964-10-10T00:00:00Z"} and ("Q8420", "P585") not in stated
    for key in (("wd:Q64", "P625"), ("wd:Q649", "P625"), ("wd:Q16957", "P2046"), ("wd:Q12560", "P576")):
        assert rows[key]["verdict"] == "corrected" and "Wikidata export" in rows[key]["source"], rows[key]
    for key in (("wd:Q39", "P1082"), ("wd:Q64", "P2046"), ("wd:Q308", "P2046")):
        assert rows[key]["verdict"] == "verified" and "Wikidata export" in rows[key]["source"], rows[key]


@pytest.mark.parametrize("edit, complaint", [
    (("wd:Q5469 rdfs:label", "wd:Q999999 rdfs:label"), "wd:Q999999 is in kg.ttl but not in provenance.tsv"),
    (("local:Wetterstein rdfs:label", "wd:Q1268 rdfs:label"),
     "wd:Q1268 is written as a Wikidata id but provenance.tsv has it 'refuted'"),
    (('"414.78"', '"414.87"'), "wd:Q1741 P2046: provenance.tsv says '414.78', kg.ttl states ['414.87']"),
    (("wdt:P885 wd:Q316393, wd:Q316397", "wdt:P885 wd:Q183"), "wd:Q1653 P885: provenance.tsv says"),
    (("wd:Q8502 rdfs:label", "local:Q8502 rdfs:label"), "local:Q8502 is in kg.ttl but not listed as a local id"),
])
def test_the_check_catches_an_unlisted_id_a_refuted_id_and_a_changed_fact(
        tmp_path: Path, edit: tuple[str, str], complaint: str) -> None:
    ttl = KG.read_text()
    assert edit[0] in ttl
    bad = tmp_path / "kg.ttl"
    bad.write_text(ttl.replace(edit[0], edit[1]))
    assert any(p.startswith(complaint) for p in problems(bad)), problems(bad)


def test_an_unsourced_wikidata_id_fails_the_check(tmp_path: Path) -> None:
    lines = PROVENANCE.read_text(encoding="utf-8").splitlines()
    prov = tmp_path / "provenance.tsv"
    prov.write_text("\n".join(line.replace("\tverified\thigh\t", "\tverified\thigh\t-\t", 1)
                              if line.startswith("entity\twd:Q3375\t") else line for line in lines) + "\n")
    fixed = [r for r in table(prov) if r["id"] == "wd:Q3375"]
    assert fixed and fixed[0]["source"] == "-"
    assert problems(KG, prov) == ["wd:Q3375 is written as a Wikidata id but provenance.tsv has it 'verified' "
                                  "(source '-')"]
