"""The knowledge-graph stages: Discover, Chains, Gold (templates applied before any text).

Each is a toolkit stage (``generate.stages``): its settings (the KG endpoint, topics,
templates, seed and the SHA-256 of this package's sources) are its key, every SPARQL query
goes through the pipeline's replay cache (kind ``sparql``; no client at all in replay
mode), and every candidate leaves as a kept row or a rejection with its check and reason.

- **discover** → ``entities.jsonl``, ``discover.json``: per topic, the entities of its types
  with every required property and ≥ ``min_sitelinks`` sitelinks, ordered by (SHA-256 of the
  QID, QID), the first ``target`` kept; seed QIDs fill up a topic that found too few.
  Checks: ``duplicate_entity``, ``beyond_target``, ``no_label``, ``ambiguous_value``,
  ``unknown_unit`` (a quantity stated in a unit outside the property's units table),
  ``missing_property``. A topic that finds nothing is a counted warning in discover.json.
- **chains** → ``chains.jsonl``: two-hop entity-valued paths, ranked by predicate rarity
  (how few of the entity's paths share the (p1, p2) pair, then ids), one per (p1, p2) pair,
  at most ``max_chains``. Check: ``too_few_chains`` (< ``min_chains``).
- **gold** → ``gold.jsonl``: up to ``max_per_entity`` distinct templates per entity (chosen by
  a RNG seeded with (seed, QID)), scenario parameters from a RNG seeded with (seed,
  candidate id), the gold computed by the template. Checks: ``no_template``,
  ``max_per_entity``, ``no_partner`` (a two-entity template without a chain neighbour having
  the property), ``template_error``.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from weakref import WeakKeyDictionary

from ....agents import ReplayCache
from ....agents.canonical import sha256_hex
from ..stages import Keep, Outcome, Reject, StageContext
from .domainapi import (
    DOMAIN_PROPERTIES,
    WIKIDATA_ID_PROPERTY,
    DomainAPI,
    DomainAPISettings,
    Resolved,
    resolve,
)
from .properties import PROPERTIES, Property
from .queries import (
    UnknownUnitError,
    chains_query,
    discover_query,
    entity_query,
    id_query,
    parse_value,
    pid_of,
    qid_of,
)
from .sparql import CachedSparql, SparqlClient, SparqlResult, SparqlSettings
from .templates import TEMPLATES, TemplateError, compute_gold, draw_params, values_from_json, values_to_json


def package_sha256() -> str:
    """SHA-256 over this package's sources: part of every drbencher stage's settings, so a
    change to a template or a query reruns the stages (the toolkit hashes only the file
    defining the stage function)."""
    here = Path(__file__).parent
    return sha256_hex(b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in sorted(here.glob("*.py"))))


_ANSWERS: WeakKeyDictionary[StageContext, dict[str, dict[str, str]]] = WeakKeyDictionary()
"""The KG answers each running stage used (:func:`recording_kg` writes them out)."""


@contextmanager
def sparql_of(ctx: StageContext) -> Iterator[CachedSparql]:
    settings = SparqlSettings.model_validate(ctx.settings["kg"])
    client = None if ctx.cache.mode == "replay" else SparqlClient(settings)
    try:
        yield CachedSparql(ctx.cache, client, settings.endpoint, _ANSWERS.setdefault(ctx, {}))
    finally:
        if client is not None:
            client.close()


def kg_answers_name(stage: str) -> str:
    """The output listing every KG answer ``stage`` used: one row per query, ``{query,
    response_sha256}``, ordered by the query's SHA-256."""
    return f"kg.{stage}.jsonl"


def recording_kg(name: str, run: Callable[[StageContext], None]) -> Callable[[StageContext], None]:
    """``run``, then its KG answers written to :func:`kg_answers_name` (an output of the stage)."""
    def stage(ctx: StageContext) -> None:
        run(ctx)
        answers = _ANSWERS.pop(ctx, {})
        ctx.write_jsonl(kg_answers_name(name), [answers[k] for k in sorted(answers)])
    stage.__name__ = run.__name__
    return stage


def kg_fresh(stage: str, settings: SparqlSettings, cache: Path | None,
             warn: Callable[[str], None] | None) -> Callable[[Path], bool]:
    """The ``fresh`` check of a KG stage. ``warn`` given (the default run): the recorded answers
    are trusted and a warning says so, once per run. Else (``--refresh-kg``): every recorded
    query is asked again; a changed answer (stored in the replay cache file ``cache``, replacing
    the old one, for the rerun to read whatever its cache mode) makes the stage, and every later
    one, run again."""
    def fresh(out: Path) -> bool:
        path = out / kg_answers_name(stage)
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] \
            if path.is_file() else []
        if not rows:
            return True
        if warn is not None:
            warn(f"stage {stage} reuses the {len(rows)} knowledge-graph answer(s) it recorded; "
                 "--refresh-kg asks the endpoint again and reruns from the first stage whose answers changed")
            return True
        client = SparqlClient(settings)
        store = ReplayCache(cache, "record") if cache is not None else None  # record: always stores
        changed = 0
        try:
            for row in rows:
                ok, body = client.fetch(row["query"], f"refresh {stage}")
                if sha256_hex(body) != row["response_sha256"]:
                    changed += 1
                    if store is not None:  # the rerun reads this answer
                        answer: tuple[bool, bytes] = (ok, body)
                        store.fetch("sparql", ["sparql", settings.endpoint, row["query"]], f"refresh {stage}",
                                    lambda: answer)  # noqa: B023 (called at once, inside this iteration)
        finally:
            client.close()
            if store is not None:
                store.close()
        return changed == 0
    return fresh


def _entity(result: SparqlResult) -> dict[str, Any]:
    """Label, aliases, sitelinks and values by property from :func:`entity_query`'s rows."""
    labels: list[str] = []
    aliases: list[str] = []
    sitelinks = 0
    raw: dict[str, list[dict[str, Any]]] = {}
    for b in result.bindings:
        what, value = b["what"]["value"], b["value"]
        if what == "label":
            labels.append(value["value"])
        elif what == "alias":
            aliases.append(value["value"])
        elif what == "sitelinks":
            sitelinks = int(value["value"])
        else:
            pid = pid_of(what)
            if pid is not None:
                raw.setdefault(pid, []).append({**value, "unit": b.get("unit", {}).get("value")})
    return {"aliases": sorted(set(aliases)), "labels": sorted(set(labels)), "raw": raw,
            "sitelinks": sitelinks}


def fetch_entity(sparql: CachedSparql, qid: str,
                 lang: str) -> tuple[dict[str, Any] | None, tuple[str, str] | None]:
    """(entity row, None) or (None, (check, reason))."""
    info = _entity(sparql.select(entity_query(qid, lang), f"entity {qid}"))
    if not info["labels"]:
        return None, ("no_label", f"{qid} has no {lang} label")
    if len(info["labels"]) > 1:
        return None, ("ambiguous_value", f"{qid} has {len(info['labels'])} {lang} labels")
    values: dict[str, Any] = {}
    stated: dict[str, list[dict[str, str]]] = {}
    for pid, cells in sorted(info["raw"].items()):
        parsed = set()
        for cell in cells:
            try:
                parsed.add(parse_value(pid, cell, cell.get("unit")))
            except UnknownUnitError as e:  # never a number in the wrong unit
                return None, ("unknown_unit", f"{qid}: {e}")
            except ValueError as e:
                return None, ("ambiguous_value", str(e))
            if PROPERTIES[pid].kind == "quantity":
                stated.setdefault(pid, []).append({"amount": str(cell.get("value")),
                                                   "unit": qid_of(str(cell.get("unit"))) or ""})
        if len(parsed) > 1:  # several best-rank values: no single gold; loud, not a silent pick
            return None, ("ambiguous_value", f"{qid} has {len(parsed)} values for {pid}")
        values[pid] = parsed.pop()
    return {"aliases": info["aliases"], "label": info["labels"][0], "qid": qid,
            "sitelinks": info["sitelinks"], "stated": {p: sorted(v, key=lambda d: (d["unit"], d["amount"]))
                                                       for p, v in sorted(stated.items())},
            "values": values_to_json(values)}, None


def property_info(pid: str) -> Property:
    """A Wikidata property or a domain API's (``pubchem:molecular_weight``)."""
    return PROPERTIES[pid] if pid in PROPERTIES else DOMAIN_PROPERTIES[pid]


@contextmanager
def domain_api_of(ctx: StageContext) -> Iterator[DomainAPI]:
    settings = DomainAPISettings.model_validate(ctx.settings.get("domain_apis", {}))
    api = DomainAPI(settings, ctx.fetch, live=ctx.cache.mode != "replay")
    try:
        yield api
    finally:
        api.close()


def _id_spellings(kind: str, value: str) -> list[str]:
    """How Wikidata may write an identifier: a CIK with and without its leading zeros."""
    return [value, str(int(value))] if kind == "cik" else [value]


def discover_entry(ctx: StageContext, sparql: CachedSparql, api: DomainAPI, ti: int, topic: dict[str, Any],
                   seen: set[str], rows: list[dict[str, Any]], lang: str) -> int:
    """An API domain's topic: each identifier of its entry resolved through the domain API, mapped
    to its entity by the external-id property, the entity's KG row joined with the API's values.
    Checks: ``domain_record_missing``, ``no_entity`` (no entity has the identifier),
    ``ambiguous_entity`` (several do), and discover's own. Returns how many were kept."""
    entry, domain, kept = topic["entry"], topic["domain"], 0
    for ident in entry["ids"]:
        ctx.count_in()
        key = f"{ti}:{entry['kind']}:{ident}"
        candidate: dict[str, Any] = {"domain": domain, "identifier": {"kind": entry["kind"], "value": ident},
                                     "source": "entry", "topic": ti}
        if kept >= topic["target"]:
            ctx.reject(key, candidate, "beyond_target", f"topic {ti} ({domain}) has its {topic['target']} "
                                                        "entities already")
            continue
        found = resolve(api, entry["kind"], ident)
        if not isinstance(found, Resolved):
            ctx.reject(key, candidate, "domain_record_missing", found)
            continue
        pid = entry.get("wikidata_property") or WIKIDATA_ID_PROPERTY["cik" if entry["kind"] == "ticker"
                                                                     else entry["kind"]]
        result = sparql.select(id_query(pid, _id_spellings(found.id_kind, found.id_value)),
                               f"entity of {found.id_kind} {found.id_value}")
        qids = sorted({q for q in (qid_of(v) for v in result.values("item")) if q is not None},
                      key=lambda q: int(q[1:]))
        if len(qids) != 1:
            check = "no_entity" if not qids else "ambiguous_entity"
            ctx.reject(key, candidate, check, f"{len(qids)} entities have {pid} = {found.id_value}"
                                              + (f" ({', '.join(qids)})" if qids else ""))
            continue
        qid = qids[0]
        candidate = {**candidate, "qid": qid}
        if qid in seen:
            ctx.reject(key, candidate, "duplicate_entity", f"{qid} is a candidate already")
            continue
        entity, failed = fetch_entity(sparql, qid, lang)
        if failed is None and entity is not None:
            entity["values"] = {**entity["values"], **found.values}
            missing = [p for p in topic["properties"] if p not in entity["values"]]
            if missing:
                failed = ("missing_property",
                          f"{found.id_kind} {found.id_value} ({qid}) lacks {', '.join(missing)}")
        if failed is not None or entity is None:
            assert failed is not None
            ctx.reject(key, candidate, *failed)
            continue
        seen.add(qid)
        rows.append({**entity, **candidate, "entry": candidate["identifier"],
                     "identifier": {"kind": found.id_kind, "value": found.id_value},
                     "sources": found.sources})
        kept += 1
        ctx.count_out()
    return kept


def discover(ctx: StageContext) -> None:
    s = ctx.settings
    lang = str(s["language"])
    rows: list[dict[str, Any]] = []
    report: list[dict[str, Any]] = []
    seen: set[str] = set()
    with sparql_of(ctx) as sparql, domain_api_of(ctx) as api:
        for ti, topic in enumerate(s["topics"]):
            domain = topic["domain"]
            if topic.get("entry"):
                kept = discover_entry(ctx, sparql, api, ti, topic, seen, rows, lang)
                report.append({"domain": domain, "found": len(topic["entry"]["ids"]), "from_seeds": 0,
                               "kept": kept, "topic": ti,
                               "warning": None if kept else "no entity found for this topic"})
                continue
            result = sparql.select(discover_query(topic["types"], topic["properties"], topic["min_sitelinks"],
                                                  topic["max_candidates"]), f"discover topic {ti} ({domain})")
            found = {q for q in (qid_of(v) for v in result.values("item")) if q is not None}
            ordered = [(q, "discovered") for q in sorted(found, key=lambda q: (sha256_hex(q), q))]
            if len(ordered) < topic["target"]:  # the fallback: seeds the query did not find
                ordered += [(q, "seed") for q in topic["seed_qids"] if q not in found]
            kept = 0
            for qid, source in ordered:
                ctx.count_in()
                key = f"{ti}:{qid}"
                candidate = {"domain": domain, "qid": qid, "source": source, "topic": ti}
                if qid in seen:
                    ctx.reject(key, candidate, "duplicate_entity",
                               f"{qid} is a candidate of an earlier topic")
                    continue
                if kept >= topic["target"]:
                    ctx.reject(key, candidate, "beyond_target", f"topic {ti} ({domain}) has its "
                                                                f"{topic['target']} entities already")
                    continue
                entity, failed = fetch_entity(sparql, qid, lang)
                if failed is None and entity is not None:
                    missing = [p for p in topic["properties"] if p not in entity["values"]]
                    if missing:
                        failed = ("missing_property", f"{qid} lacks {', '.join(missing)}")
                if failed is not None or entity is None:
                    assert failed is not None
                    ctx.reject(key, candidate, *failed)
                    continue
                seen.add(qid)
                rows.append({**entity, **candidate})
                kept += 1
                ctx.count_out()
            report.append({"domain": domain, "found": len(found), "from_seeds": sum(
                1 for r in rows if r["topic"] == ti and r["source"] == "seed"), "kept": kept, "topic": ti,
                "warning": None if kept else "no entity found for this topic"})
    ctx.write_jsonl("entities.jsonl", rows)
    ctx.write_json("discover.json", {"topics": report, "warnings": sum(1 for r in report if r["warning"])})


def _num(qid: str) -> int:
    return int(qid[1:])


def rank_chains(chains: list[dict[str, str]], max_chains: int) -> list[dict[str, str]]:
    """Rarest (p1, p2) pair first (fewest of the entity's paths share it), then by ids; one
    chain per pair, at most ``max_chains``."""
    pairs = Counter((c["p1"], c["p2"]) for c in chains)
    ordered = sorted(chains, key=lambda c: (pairs[(c["p1"], c["p2"])], _num(c["p1"]), _num(c["p2"]),
                                            _num(c["mid"]), _num(c["obj"])))
    picked: list[dict[str, str]] = []
    used: set[tuple[str, str]] = set()
    for c in ordered:
        if (c["p1"], c["p2"]) in used:
            continue
        used.add((c["p1"], c["p2"]))
        picked.append({**c, "rarity": str(pairs[(c["p1"], c["p2"])])})
        if len(picked) == max_chains:
            break
    return picked


def find_chains(sparql: CachedSparql, qid: str, cfg: dict[str, Any],
                lang: str) -> tuple[list[dict[str, str]], int]:
    """(the ranked chains of ``qid``, how many paths were found)."""
    result = sparql.select(chains_query(qid, cfg["exclude_predicates"], lang, cfg["max_rows"]),
                           f"chains {qid}")
    found = []
    for b in result.bindings:
        p1, p2 = pid_of(b["p1"]["value"]), pid_of(b["p2"]["value"])
        mid, obj = qid_of(b["mid"]["value"]), qid_of(b["obj"]["value"])
        if p1 and p2 and mid and obj:
            found.append({"mid": mid, "mid_label": b["midLabel"]["value"], "obj": obj,
                          "obj_label": b["objLabel"]["value"], "p1": p1, "p2": p2})
    return rank_chains(found, cfg["max_chains"]), len(found)


def chains(ctx: StageContext) -> None:
    s = ctx.settings
    cfg = s["chains"]
    items = ctx.read_jsonl("entities.jsonl")
    with sparql_of(ctx) as sparql:
        def process(entity: dict[str, Any]) -> Outcome:
            ranked, found = find_chains(sparql, entity["qid"], cfg, s["language"])
            if len(ranked) < cfg["min_chains"]:
                return Reject("too_few_chains", f"{entity['qid']} has {len(ranked)} distinct two-hop "
                                                f"chain(s) (of {found} paths) < {cfg['min_chains']}")
            return Keep({**entity, "chains": ranked})

        kept = ctx.map(items, lambda e: e["qid"], process, concurrency=int(s["kg"]["max_in_flight"]))
    ctx.write_jsonl("chains.jsonl", kept)


def _partner(sparql: CachedSparql, entity: dict[str, Any], pids: tuple[str, ...],
             lang: str) -> dict[str, Any] | None:
    """The first chain neighbour (chain rank order, intermediate before object) having ``pids``."""
    order: list[tuple[str, str]] = []
    for c in entity["chains"]:
        for qid, label in ((c["mid"], c["mid_label"]), (c["obj"], c["obj_label"])):
            if (qid, label) not in order and qid != entity["qid"]:
                order.append((qid, label))
    for qid, _label in order:
        row, failed = fetch_entity(sparql, qid, lang)
        if row is not None and failed is None and all(p in row["values"] for p in pids):
            return row
    return None


def gold(ctx: StageContext) -> None:
    s = ctx.settings
    seed = int(s["seed"])
    entities = ctx.read_jsonl("chains.jsonl")
    candidates: list[dict[str, Any]] = []
    for entity in entities:
        values = values_from_json(entity["values"])
        applicable = [n for n in s["templates"] if entity["domain"] in TEMPLATES[n].domains
                      and all(p in values for p in TEMPLATES[n].properties[0])]
        if not applicable:
            ctx.count_in()
            ctx.reject(entity["qid"], {"qid": entity["qid"]}, "no_template",
                       f"no configured template fits {entity['qid']} (domain {entity['domain']}, properties "
                       f"{', '.join(sorted(values)) or 'none'})")
            continue
        random.Random(f"{seed}:{entity['qid']}").shuffle(applicable)
        for i, name in enumerate(applicable):
            cid = f"{entity['qid']}:{name}"
            if i >= int(s["max_per_entity"]):
                ctx.count_in()
                ctx.reject(cid, {"qid": entity["qid"], "template": name}, "max_per_entity",
                           f"{entity['qid']} has {s['max_per_entity']} templates already")
                continue
            candidates.append({"cid": cid, "entity": entity, "template": name})

    with sparql_of(ctx) as sparql:
        def process(item: dict[str, Any]) -> Outcome:
            entity, template = item["entity"], TEMPLATES[item["template"]]
            members = [entity]
            if template.entities == 2:
                partner = _partner(sparql, entity, template.properties[1], str(s["language"]))
                if partner is None:
                    return Reject("no_partner", f"no chain neighbour of {entity['qid']} has "
                                                f"{', '.join(template.properties[1])}")
                # the question describes the partner too (withheld like the answer): its own chains
                ranked, found = find_chains(sparql, partner["qid"], s["chains"], str(s["language"]))
                if len(ranked) < s["chains"]["min_chains"]:
                    return Reject("too_few_chains", f"the partner {partner['qid']} has {len(ranked)} "
                                                    f"distinct two-hop chain(s) (of {found} paths) < "
                                                    f"{s['chains']['min_chains']}")
                members.append({**partner, "chains": ranked})
            values = [values_from_json(m["values"]) for m in members]
            try:
                params = draw_params(template, seed, item["cid"], values)
                g = compute_gold(template, values, params)
            except TemplateError as e:
                return Reject("template_error", str(e))
            used = [{"pid": p, "property": property_info(p).label, "qid": m["qid"],
                     "source": m.get("sources", {}).get(p, f"wikidata:{m['qid']}#{p}"),
                     "stated": m.get("stated", {}).get(p),
                     "unit": property_info(p).unit, "value": m["values"][p]["value"]}
                    for m, pids in zip(members, template.properties, strict=True) for p in pids]
            return Keep({"chains": entity["chains"], "cid": item["cid"], "domain": entity["domain"],
                         "cci": {"E": len(members), "P": len({(u["qid"], u["pid"]) for u in used}),
                                 "total": len(members) + len({(u["qid"], u["pid"]) for u in used})},
                         "entities": [{"aliases": m["aliases"], "label": m["label"], "qid": m["qid"],
                                       "role": "answer" if i == 0 else "partner", "values": m["values"],
                                       **({"entry": m["entry"]} if "entry" in m else {}),
                                       **({"chains": m["chains"]} if i else {})}
                                      for i, m in enumerate(members)],
                         "gold": {"formula": g.formula, "label": g.label, "tolerance": g.tolerance,
                                  "unit": g.unit, "value": str(g.value)},
                         "params": params, "properties": used, "qid": entity["qid"],
                         "template": template.name, "topic": entity["topic"]})

        kept = ctx.map(candidates, lambda c: c["cid"], process, concurrency=int(s["kg"]["max_in_flight"]))
    ctx.write_jsonl("gold.jsonl", kept)


__all__ = [
    "chains",
    "discover",
    "discover_entry",
    "fetch_entity",
    "gold",
    "kg_answers_name",
    "kg_fresh",
    "package_sha256",
    "property_info",
    "rank_chains",
    "recording_kg",
    "sparql_of",
]
