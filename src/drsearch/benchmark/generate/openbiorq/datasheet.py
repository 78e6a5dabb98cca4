"""A datasheet for an export (``drsearch generate openbiorq datasheet``): what the paper's release
section says an agentic benchmark's datasheet must carry beyond the usual sourcing.

From ``OBRQ_DIR`` (its ``manifest.json``, ``items.jsonl``, ``frozen_core.json`` when frozen) and
the sources file the extract stage read:

- ``as_of``: the snapshot date that fixes the openness labels and difficulty buckets. The
  pipeline records no clock in its outputs (they regenerate byte for byte), so the publisher
  states it (``--as-of``), and the datasheet says it was stated;
- ``endpoints``: every service the export depends on, as the manifest recorded it: the model
  endpoints of each stage (model, base URL) and the openness stage's evidence routes (Europe PMC,
  ClinicalTrials.gov, Semantic Scholar, a drsearch corpus), each with its access date where one
  was given (``--accessed NAME=DATE``), else ``null`` and ``access_date_recorded: false``;
- ``counts``: items per level-one domain, per track, per difficulty bucket, per identifier kind
  and per openness label, and the frozen core's size and SHA-256;
- ``licences``: exported items per source licence, from the sources' ``licence`` (or
  ``license``) field, ``not recorded`` where a source has none;
- ``items_sha256`` and the export stage's settings SHA-256, so the datasheet names its export;
- ``tool_snapshot`` (``--tool-snapshot SNAP``): the biomedical tools' frozen answers the agents
  are evaluated against, each tool's service, endpoints and access dates, and the digest.

Deterministic: the same directory and arguments give the same bytes (keys sorted, counts in the
paper's order). InvalidInputError (CLI exit 2) for a directory without an export, a bad date,
an access date for a route the manifest does not name, or an unreadable sources file.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ....agents.canonical import sha256_hex
from ....contract import InvalidInputError
from ...datasets._jsonl import read_objects
from ...datasets.openbiorq_taxonomy import DOMAIN_LABELS, TRACK_NAMES, TRACKS, domain_name

NOT_RECORDED = "not recorded"
BUCKETS = ("core", "discriminating", "easy")


def iso_date(text: str, what: str) -> str:
    """``text`` if it is a ``YYYY-MM-DD`` date, else InvalidInputError naming ``what``."""
    try:
        return dt.date.fromisoformat(text).isoformat()
    except ValueError:
        raise InvalidInputError(f"{what}: {text!r} is not a date (YYYY-MM-DD)") from None


def _ordered(counter: Counter[str], order: tuple[str, ...]) -> dict[str, int]:
    keys = [k for k in order if k in counter] + sorted(k for k in counter if k not in order)
    return {k: counter[k] for k in keys}


def _endpoints(manifest: Mapping[str, Any], accessed: Mapping[str, str]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for stage in manifest.get("stage_order") or manifest["stages"]:
        entry = manifest["stages"].get(stage) or {}
        for m in entry.get("models") or ():
            name = f"model:{m['model']}"
            row = rows.setdefault(name, {"kind": "model", "model": m["model"], "name": name,
                                         "stages": [], "url": m["base_url"]})
            row["stages"].append(stage)
        for route, url in ((entry.get("settings") or {}).get("routes") or {}).items():
            row = rows.setdefault(route, {"kind": "evidence", "name": route, "stages": [], "url": url})
            row["stages"].append(stage)
    unknown = sorted(set(accessed) - set(rows))
    if unknown:
        raise InvalidInputError(f"--accessed {unknown[0]}: the export names no such endpoint (known: "
                                f"{', '.join(sorted(rows))})")
    for name, row in rows.items():
        row["access_date"] = accessed.get(name)
        row["access_date_recorded"] = name in accessed
    return [rows[k] for k in sorted(rows)]


def _licences(sources: Path, exported_sources: list[str]) -> dict[str, int]:
    """Exported items per licence of their source."""
    licence_of: dict[str, str] = {}
    for _where, row in read_objects(sources):
        value = row.get("licence", row.get("license"))
        named = isinstance(value, str) and bool(value.strip())
        licence_of[str(row.get("source_id"))] = str(value) if named else NOT_RECORDED
    counts = Counter(licence_of.get(s, NOT_RECORDED) for s in exported_sources)
    return dict(sorted(counts.items()))


def _tool_snapshot(path: Path) -> dict[str, Any]:
    """What a tool snapshot (``drsearch snapshot freeze``) says the agents' tools answered from:
    each tool's service and endpoints and the dates its rows were fetched, the snapshot's digest.
    The snapshot is checked whole first (a damaged one: SnapshotError, exit 2)."""
    from ....agents.snapshot import load_snapshot

    snap = load_snapshot(path)
    dates: dict[str, set[str]] = {}
    for entry in snap.entries:
        dates.setdefault(str(entry["tool"]), set()).add(str(json.loads(entry["body"]).get("accessed")))
    return {"digest": snap.digest, "path": str(path), "rows": len(snap.entries),
            "tools": {name: {**sig, "access_dates": sorted(dates.get(name, ()))}
                      for name, sig in sorted(snap.tools.items())}}


def datasheet(obrq_dir: Path, as_of: str, accessed: Mapping[str, str],
              sources: Path | None = None, tool_snapshot: Path | None = None) -> dict[str, Any]:
    """The datasheet of ``obrq_dir``'s export (module doc). ``sources`` defaults to the file the
    extract stage recorded as its input; ``tool_snapshot``: the snapshot the agents' biomedical
    tools answer from (its tools, endpoints and access dates go into the datasheet)."""
    items_path, manifest_path = obrq_dir / "items.jsonl", obrq_dir / "manifest.json"
    if not items_path.is_file() or not manifest_path.is_file():
        raise InvalidInputError(f"{obrq_dir}: no export (items.jsonl and manifest.json); run the export "
                                "stage")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    if sources is None:  # the extract stage's one input: {absolute path: SHA-256}
        recorded = list((manifest["stages"].get("extract") or {}).get("inputs") or {})
        if not recorded:
            raise InvalidInputError(f"{manifest_path}: no extract stage input recorded (give --sources)")
        sources = Path(recorded[0])
    if not sources.is_file():
        raise InvalidInputError(f"sources {sources}: no such file (give --sources)")
    rows = [row for _where, row in read_objects(items_path)]
    meta = [(r.get("metadata") or {}).get("openbiorq") or {} for r in rows]
    difficulty = [m.get("difficulty") or {} for m in meta]
    frozen_path = obrq_dir / "frozen_core.json"
    frozen = json.loads(frozen_path.read_text(encoding="utf-8")) if frozen_path.is_file() else None
    counts = {
        "bucket": _ordered(Counter(d.get("bucket") or "not bucketed" for d in difficulty),
                           (*BUCKETS, "not bucketed")),
        "domain": {domain_name(k): v for k, v in _ordered(Counter(str(m.get("taxonomy")) for m in meta),
                                                             DOMAIN_LABELS).items()},
        "frozen_core": sum(d.get("frozen_core") is True for d in difficulty),
        "identifier_kind": dict(sorted(Counter(str((m.get("source") or {}).get("id_kind"))
                                               for m in meta).items())),
        "items": len(rows),
        "openness_label": dict(sorted(Counter(str((m.get("openness") or {}).get("label"))
                                              for m in meta).items())),
        "track": _ordered(Counter(str(r.get("track")) for r in rows), TRACK_NAMES)}
    exported_sources = [str((m.get("source") or {}).get("source_id")) for m in meta]
    export = manifest["stages"].get("export") or {}
    return {
        "as_of": {"date": as_of, "stated_by": "publisher (--as-of): the pipeline records no clock",
                  "fixes": "openness labels (the openness stage's evidence) and difficulty buckets"},
        "counts": counts,
        "endpoints": _endpoints(manifest, accessed),
        "export": {"items_sha256": sha256_hex(items_path.read_bytes()),
                   "settings_sha256": export.get("settings_sha256"), "generator": manifest.get("generator")},
        "frozen_core": None if frozen is None else {"count": frozen.get("count"),
                                                     "sha256": frozen.get("frozen_core_sha256")},
        "intended_use": ("research-assistance evaluation of literature synthesis and grounding; not a "
                         "clinical decision-support tool and not for patient care"),
        "licences": {"by_licence": _licences(sources, exported_sources),
                     "field": "sources' licence (or license)", "sources": str(sources)},
        "tool_snapshot": None if tool_snapshot is None else _tool_snapshot(tool_snapshot),
        "tracks": {t.name: t.why_open for t in TRACKS},
    }


def render_markdown(sheet: Mapping[str, Any]) -> str:
    """The datasheet as a short Markdown page (``datasheet.md``)."""
    c = sheet["counts"]
    lines = ["# Datasheet", "", f"As of {sheet['as_of']['date']} ({sheet['as_of']['stated_by']}); it fixes "
             f"{sheet['as_of']['fixes']}.", "", f"Export: {c['items']} items, SHA-256 "
             f"{sheet['export']['items_sha256']}.", ""]
    if sheet["frozen_core"]:
        frozen = sheet["frozen_core"]
        lines += [f"Frozen core: {frozen['count']} items, SHA-256 {frozen['sha256']}.", ""]
    lines += ["## Endpoints", "", "| name | url | stages | accessed |", "|---|---|---|---|"]
    lines += [f"| {e['name']} | {e['url']} | {', '.join(e['stages'])} | {e['access_date'] or NOT_RECORDED} |"
              for e in sheet["endpoints"]]
    snap = sheet.get("tool_snapshot")
    if snap:
        lines += ["", "## Tool snapshot", "", f"`{snap['path']}`: {snap['rows']} recorded calls, digest "
                  f"{snap['digest']}.", "", "| tool | service | endpoints | accessed |", "|---|---|---|---|"]
        lines += [f"| {name} | {t.get('service')} | {', '.join(t.get('endpoints', []))} | "
                  f"{', '.join(t['access_dates']) or NOT_RECORDED} |" for name, t in snap["tools"].items()]
    for key, title in (("domain", "Level-one domain"), ("track", "Track"), ("bucket", "Difficulty bucket"),
                       ("identifier_kind", "Identifier kind"), ("openness_label", "Openness label")):
        lines += ["", f"## {title}", "", "| value | items |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in c[key].items()]
    lines += ["", "## Licences of sources", "", "| licence | items |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in sheet["licences"]["by_licence"].items()]
    lines += ["", "## Tracks: why open", ""] + [f"- `{k}`: {v}" for k, v in sheet["tracks"].items()]
    lines += ["", f"Intended use: {sheet['intended_use']}.", ""]
    return "\n".join(lines)


__all__ = ["NOT_RECORDED", "datasheet", "iso_date", "render_markdown"]
