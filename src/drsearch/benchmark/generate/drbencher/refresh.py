"""The staleness audit (``drsearch generate drbencher refresh GEN_DIR``): every exported question
re-executed against the knowledge graph as it is now.

For each row of ``GEN_DIR/questions.jsonl``: its entities (the answer and a partner) are
fetched again with the Gold stage's query (:func:`.kgstages.fetch_entity`), its template run
again on their values with the recorded parameters, and the new gold compared with the
exported one under the template's tolerance (relative; 0 = exact); each grounded clue fact of
its chains is asked again (``ASK { wd:S wdt:P wd:O }``). An item's ``status``:

- ``ok``: the gold holds and every grounded fact is still in the graph;
- ``unavailable``: the gold can no longer be computed (an entity lost its label or a value, a
  value became ambiguous or is in an unknown unit, the template fails);
- ``moved``: the new gold differs from the exported one beyond the tolerance;
- ``chain_broken``: the gold holds, but a grounded fact the question states is gone.

The endpoint and client settings are those the Gold stage recorded in ``manifest.json``
(``endpoint`` overrides the URL). An API domain's entity (biochemistry, financial, security)
has its values asked again from the registry (its entry identifier, the ``domain_apis`` the
discover stage recorded): an XBRL restatement moves a financial gold. Nothing is cached: the
point is the endpoint *now*.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from .domainapi import DomainAPI, DomainAPISettings, Resolved, resolve
from .errors import AnnotationError, KGDataError
from .kgstages import fetch_entity
from .queries import PREFIXES
from .sparql import CachedSparql, SparqlClient, SparqlSettings
from .tables import question_facts
from .templates import TEMPLATES, TemplateError, compute_gold, values_from_json

STATUSES = ("ok", "unavailable", "moved", "chain_broken")


def _domain_apis(gen: Path) -> DomainAPISettings:
    """The domain APIs the discover stage asked (the defaults when it asked none)."""
    try:
        stages = json.loads((gen / "manifest.json").read_text(encoding="utf-8"))["stages"]
        return DomainAPISettings.model_validate(stages["discover"]["settings"].get("domain_apis", {}))
    except (OSError, ValueError, KeyError, TypeError):
        return DomainAPISettings()


def _settings(gen: Path, endpoint: str | None) -> tuple[SparqlSettings, str]:
    """The Gold stage's recorded client settings and language (``endpoint`` replaces the URL)."""
    manifest = gen / "manifest.json"
    try:
        gold = json.loads(manifest.read_text(encoding="utf-8"))["stages"]["gold"]["settings"]
        kg, language = dict(gold["kg"]), str(gold["language"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise KGDataError(f"{manifest}: no recorded gold stage to take the endpoint from "
                          f"({e.__class__.__name__}: {e})") from None
    if endpoint is not None:
        kg["endpoint"] = endpoint
    try:
        return SparqlSettings.model_validate(kg), language
    except ValueError as e:
        raise KGDataError(f"endpoint {kg.get('endpoint')!r}: not an http(s) URL") from e


def _rows(gen: Path) -> list[dict[str, Any]]:
    path = gen / "questions.jsonl"
    if not path.is_file():
        raise AnnotationError(f"{gen}: no questions.jsonl (give the output directory of "
                              "`drsearch generate drbencher`)")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [r for r in rows if r.get("metadata", {}).get("drbencher") is not None]


def _gold_value(label: str) -> Decimal:
    return Decimal(label.split(" ", 1)[0])


def _moved(then: Decimal, now: Decimal, tolerance: Decimal) -> tuple[bool, float | None]:
    """(beyond the tolerance?, relative change when the old gold is not 0)."""
    rel = abs(now - then) / abs(then) if then else None
    if tolerance == 0 or rel is None:
        return now != then, None if rel is None else float(rel)
    return rel > tolerance, float(rel)


def _fact_holds(sparql: CachedSparql, triple: list[str]) -> bool:
    s, p, o = triple
    query = PREFIXES + f"ASK {{ wd:{s} wdt:{p} wd:{o} }}"
    return bool(sparql.select(query, f"fact {s} {p} {o}").boolean)


def _audit(row: dict[str, Any], entity: Any, sparql: CachedSparql,
           api: DomainAPI | None = None) -> dict[str, Any]:
    meta = row["metadata"]["drbencher"]
    template = TEMPLATES[meta["template"]]
    then = str(row["label"])
    item: dict[str, Any] = {
        "domain": row["metadata"].get("category"), "entities": [e["qid"] for e in meta["entities"]],
        "gold_now": None, "gold_then": then, "item": row["metadata"]["qid"], "reason": None,
        "relative_change": None, "template": template.name, "tolerance": str(meta["tolerance"]),
        "values_changed": []}
    missing = [f["triple"] for f in question_facts(meta) if not _fact_holds(sparql, f["triple"])]
    item["facts_missing"] = missing
    members = []
    for e in meta["entities"]:
        found, why = entity(e["qid"])
        if found is None:
            return {**item, "reason": f"{why[0]}: {why[1]}", "status": "unavailable"}
        if "entry" in e and api is not None:  # an API domain's values: the registry's answer now
            fresh = resolve(api, e["entry"]["kind"], e["entry"]["value"])
            if not isinstance(fresh, Resolved):
                return {**item, "reason": f"domain_record_missing: {fresh}", "status": "unavailable"}
            found = {**found, "values": {**found["values"], **fresh.values}}
        members.append(found)
    now_values = {(m["qid"], pid): v["value"] for m in members for pid, v in m["values"].items()}
    for p in meta["properties"]:
        now = now_values.get((p["qid"], p["pid"]))
        if now != p["value"]:
            item["values_changed"].append({"now": now, "pid": p["pid"], "qid": p["qid"], "then": p["value"]})
    try:
        gold = compute_gold(template, [values_from_json(m["values"]) for m in members], meta["params"])
    except TemplateError as e:
        return {**item, "reason": f"template_error: {e}", "status": "unavailable"}
    moved, rel = _moved(_gold_value(then), gold.value, Decimal(str(meta["tolerance"])))
    item.update({"gold_now": gold.label, "relative_change": rel})
    if moved:
        return {**item, "reason": f"gold {then} -> {gold.label}", "status": "moved"}
    if missing:
        gone = f"{len(missing)} grounded fact(s) no longer in the graph"
        return {**item, "reason": gone, "status": "chain_broken"}
    return {**item, "status": "ok"}


def refresh(gen: Path, endpoint: str | None = None) -> dict[str, Any]:
    """The audit of ``gen`` (see the module): ``{endpoint, items: [...], flagged: [item ids],
    counts: {status: n}}``; items in the file's order.

    Raises ``AnnotationError``/``KGDataError`` (exit 2) for a directory without questions or a
    manifest, ``KGEndpointError`` (exit 2) when the endpoint does not answer its probe,
    ``SparqlError`` (exit 1) when a query fails for good mid-audit."""
    from ....agents import ReplayCache

    rows = _rows(gen)
    settings, language = _settings(gen, endpoint)
    client = SparqlClient(settings)
    try:
        client.probe()
        sparql = CachedSparql(ReplayCache(None, "off"), client, settings.endpoint)
        seen: dict[str, Any] = {}

        def entity(qid: str) -> Any:
            if qid not in seen:
                seen[qid] = fetch_entity(sparql, qid, language)
            return seen[qid]

        api = DomainAPI(_domain_apis(gen), lambda kind, key, describe, live: live())  # always asked anew
        try:
            items = [_audit(r, entity, sparql, api) for r in rows]
        finally:
            api.close()
    finally:
        client.close()
    counts = {s: sum(i["status"] == s for i in items) for s in STATUSES}
    return {"counts": counts, "endpoint": settings.endpoint,
            "flagged": [i["item"] for i in items if i["status"] != "ok"], "items": items}


def render_refresh(result: dict[str, Any]) -> str:
    """The printed table of :func:`refresh`'s result."""
    header = ("item", "status", "gold then", "gold now", "change")
    rows = [(i["item"], i["status"], i["gold_then"], i["gold_now"] or "-",
             "-" if i["relative_change"] is None else f"{100 * i['relative_change']:.2f}%")
            for i in result["items"]]
    widths = [max(len(str(r[k])) for r in [header, *rows]) for k in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
             for r in [header, *rows]]
    lines += [f"  {i['item']}: {i['reason']}" for i in result["items"] if i["status"] != "ok"]
    counts = ", ".join(f"{s} {n}" for s, n in result["counts"].items())
    lines.append(f"{len(result['items'])} item(s) against {result['endpoint']}: {counts}")
    return "\n".join(lines)


__all__ = ["STATUSES", "refresh", "render_refresh"]
