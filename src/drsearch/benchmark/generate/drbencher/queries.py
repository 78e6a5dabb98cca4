"""The SPARQL the stages send, and the parsing of its answers.

Portable by construction: labels come from ``rdfs:label`` / ``skos:altLabel`` with a
language filter (never ``SERVICE wikibase:label``), values from truthy ``wdt:`` statements
(quantities from their statements' value nodes, below), so each query runs unchanged on the
live Wikidata Query Service and on ``drsearch kg serve``. Every result order is fixed by the
query (``ORDER BY``) or by the caller.

Quantities come with their unit: the best-rank statement's value node (``p:P`` ?st, ``?st a
wikibase:BestRank ; psv:P`` ?node, the node's ``wikibase:quantityAmount`` and
``wikibase:quantityUnit``), as the Wikidata Query Service holds them and the shipped fixture
states them; :func:`parse_value` converts with the units table of
:data:`.properties.PROPERTIES` (a statement in feet gives metres on both endpoints).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from .properties import PROPERTIES
from .templates import Value

WD = "http://www.wikidata.org/entity/"
WDT = "http://www.wikidata.org/prop/direct/"
PREFIXES = ("PREFIX wd: <http://www.wikidata.org/entity/>\n"
            "PREFIX wdt: <http://www.wikidata.org/prop/direct/>\n"
            "PREFIX p: <http://www.wikidata.org/prop/>\n"
            "PREFIX psv: <http://www.wikidata.org/prop/statement/value/>\n"
            "PREFIX wikibase: <http://wikiba.se/ontology#>\n"
            "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#>\n"
            "PREFIX skos: <http://www.w3.org/2004/02/skos/core#>\n")
_ID = re.compile(r"[PQ][1-9][0-9]*")
_POINT = re.compile(r"^\s*(?:<[^>]*>\s*)?Point\(\s*(-?[0-9.eE+-]+)\s+(-?[0-9.eE+-]+)\s*\)\s*$")
_DATE = re.compile(r"^(-?\d{1,6})-(\d{2})-(\d{2})")


def _ids(ids: Sequence[str]) -> None:
    bad = [i for i in ids if not _ID.fullmatch(i)]
    if bad:  # ids are interpolated into queries: only Q/P ids, never free text
        raise ValueError(f"not a Wikidata id: {', '.join(bad)}")


def qid_of(iri: str) -> str | None:
    """``Q42`` for ``http://www.wikidata.org/entity/Q42``; None for anything else."""
    if iri.startswith(WD) and _ID.fullmatch(iri[len(WD):]) and iri[len(WD)] == "Q":
        return iri[len(WD):]
    return None


def pid_of(iri: str) -> str | None:
    if iri.startswith(WDT) and _ID.fullmatch(iri[len(WDT):]):
        return iri[len(WDT):]
    return None


def _lang(lang: str) -> str:
    if not re.fullmatch(r"[a-z]{2,3}(-[a-z0-9]+)?", lang):
        raise ValueError(f"language {lang!r}")
    return lang


def discover_query(types: Sequence[str], properties: Sequence[str], min_sitelinks: int, limit: int) -> str:
    """Entities of a type (``P31/P279*``) having every property and ≥ ``min_sitelinks`` sitelinks."""
    _ids([*types, *properties])
    exists = "".join(f"  FILTER EXISTS {{ ?item wdt:{p} ?v{i} }}\n" for i, p in enumerate(properties))
    return (PREFIXES + "SELECT DISTINCT ?item ?sitelinks WHERE {\n"
            f"  VALUES ?type {{ {' '.join('wd:' + t for t in types)} }}\n"
            "  ?item wdt:P31/wdt:P279* ?type .\n"
            "  ?item wikibase:sitelinks ?sitelinks .\n"
            f"  FILTER(?sitelinks >= {int(min_sitelinks)})\n" + exists +
            f"}}\nORDER BY DESC(?sitelinks) ?item\nLIMIT {int(limit)}\n")


def entity_query(qid: str, lang: str) -> str:
    """Labels, aliases, sitelinks and every known property's values of one entity: quantities
    as (amount, unit) of their best-rank statements, the others as truthy ``wdt:`` values."""
    _ids([qid])
    plain = " ".join(f"wdt:{p}" for p in sorted(PROPERTIES) if PROPERTIES[p].kind != "quantity")
    lang = _lang(lang)
    quantities = "".join(
        f"  UNION {{ wd:{qid} p:{p} ?st . ?st a wikibase:BestRank ; psv:{p} ?node .\n"
        f"          ?node wikibase:quantityAmount ?value ; wikibase:quantityUnit ?unit\n"
        f"          BIND(\"{WDT}{p}\" AS ?what) }}\n"
        for p in sorted(PROPERTIES) if PROPERTIES[p].kind == "quantity")
    return (PREFIXES + "SELECT ?what ?value ?unit WHERE {\n"
            f"  {{ wd:{qid} rdfs:label ?value FILTER(LANG(?value) = \"{lang}\") BIND(\"label\" AS ?what) }}\n"
            f"  UNION {{ wd:{qid} skos:altLabel ?value FILTER(LANG(?value) = \"{lang}\")"
            " BIND(\"alias\" AS ?what) }\n"
            f"  UNION {{ wd:{qid} wikibase:sitelinks ?value BIND(\"sitelinks\" AS ?what) }}\n"
            f"  UNION {{ VALUES ?p {{ {plain} }} wd:{qid} ?p ?value BIND(STR(?p) AS ?what) }}\n"
            + quantities + "}\nORDER BY ?what STR(?value) STR(?unit)\n")


_EXTERNAL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]{0,40}")


def id_query(pid: str, values: Sequence[str]) -> str:
    """The entities whose external id ``pid`` (``wdt:P662`` PubChem CID, ``wdt:P5531`` SEC
    CIK, ...) is one of ``values`` (the spellings of one identifier)."""
    _ids([pid])
    bad = [v for v in values if not _EXTERNAL_ID.fullmatch(v)]
    if bad:  # values are interpolated into the query: identifiers only, never free text
        raise ValueError(f"not an identifier: {', '.join(bad)}")
    quoted = " ".join(f'"{v}"' for v in values)
    return (PREFIXES + "SELECT DISTINCT ?item WHERE {\n"
            f"  VALUES ?id {{ {quoted} }}\n"
            f"  ?item wdt:{pid} ?id .\n"
            "}\nORDER BY ?item\n")


def chains_query(qid: str, exclude: Sequence[str], lang: str, limit: int) -> str:
    """Two-hop entity-valued paths ``qid -p1-> mid -p2-> obj`` (no return to ``qid``, no
    excluded predicate), with the English (``lang``) labels of ``mid`` and ``obj``."""
    _ids([qid, *exclude])
    lang = _lang(lang)
    not_in = ", ".join(f"wdt:{p}" for p in exclude) or "wdt:P0"
    return (PREFIXES + "SELECT ?p1 ?mid ?midLabel ?p2 ?obj ?objLabel WHERE {\n"
            f"  wd:{qid} ?p1 ?mid . ?mid ?p2 ?obj .\n"
            f"  FILTER(STRSTARTS(STR(?p1), \"{WDT}\") && STRSTARTS(STR(?p2), \"{WDT}\"))\n"
            f"  FILTER(STRSTARTS(STR(?mid), \"{WD}Q\") && STRSTARTS(STR(?obj), \"{WD}Q\"))\n"
            f"  FILTER(?mid != wd:{qid} && ?obj != wd:{qid})\n"
            f"  FILTER(?p1 NOT IN ({not_in}) && ?p2 NOT IN ({not_in}))\n"
            f"  ?mid rdfs:label ?midLabel FILTER(LANG(?midLabel) = \"{lang}\")\n"
            f"  ?obj rdfs:label ?objLabel FILTER(LANG(?objLabel) = \"{lang}\")\n"
            f"}}\nORDER BY ?p1 ?mid ?p2 ?obj\nLIMIT {int(limit)}\n")


class UnknownUnitError(ValueError):
    """A quantity stated in a unit the property's units table lacks (check ``unknown_unit``)."""


def parse_value(pid: str, cell: dict[str, Any], unit: str | None = None) -> Value:
    """A property value as templates take it; a quantity converted from ``unit`` (the IRI of its
    ``wikibase:quantityUnit``) into the property's unit. UnknownUnitError for a unit outside the
    property's table (or none); ValueError when the value is not of the property's kind."""
    prop = PROPERTIES[pid]
    text = str(cell.get("value", ""))
    if prop.kind == "coordinates":
        m = _POINT.match(text)
        if not m:
            raise ValueError(f"{pid}: {text!r} is not a WKT point")
        lon, lat = float(m.group(1)), float(m.group(2))
        return (lat, lon)
    if prop.kind == "date":
        m = _DATE.match(text)
        if not m or int(m.group(1)) < 1:
            raise ValueError(f"{pid}: {text!r} is not a date of the common era")
        return date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    try:
        number = Decimal(text)
    except InvalidOperation:
        raise ValueError(f"{pid}: {text!r} is not a number") from None
    if not number.is_finite():
        raise ValueError(f"{pid}: {text!r} is not finite")
    uqid = qid_of(unit or "")
    known = ", ".join(f"{q} {u.label}" for q, u in sorted(prop.units.items()))
    if uqid is None or uqid not in prop.units:
        raise UnknownUnitError(f"{pid} {text} is stated in unit {uqid or unit or '(none)'}, not in the units "
                               f"table of {pid} ({known})")
    return number * prop.units[uqid].factor


__all__ = ["PREFIXES", "UnknownUnitError", "chains_query", "discover_query", "entity_query", "id_query",
           "parse_value", "pid_of", "qid_of"]
