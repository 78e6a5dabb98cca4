"""``construct consolidate``: upstream rows → one pool line per distinct question.

Upstream rows are JSON objects, one per line, with the fields of :data:`FIELDS` (each
renamable with ``--map FIELD=UPSTREAM_FIELD``). Rows whose question text has the same
:func:`~drsearch.benchmark.datasets.dr256.normalise_question` form (NFKC, case folded,
single-spaced: case, whitespace and ligature variants) are one group, whose ``qid`` is
``q-`` + the first 16 hex digits of that form's SHA-256 (DR-256's qids). A group keeps the
first row's question and answer as written, the ids and fingerprints (SHA-256 of the row's
canonical JSON) of all its rows, the union of their visited URLs and search queries (first
seen order), and each row's difficulty and teacher outcome. A group whose answers differ
after :func:`~drsearch.benchmark.leak_audit.normalise` (case, whitespace, thousands
separators) is removed as ``conflicting_labels``.

Bad input is exit 2 before anything is written: a line that is not a JSON object, a row
without a question or answer (``file:line``), a list field that is not a list of strings,
an unknown ``--map`` field or one no row has, an upstream file without rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...agents.canonical import canonical_json
from ...benchmark.datasets.dr256 import normalise_question
from ...benchmark.generate import Keep, Reject, StageContext
from ...benchmark.leak_audit import normalise as normalise_label
from ...contract import InvalidInputError, json_object_lines
from .work import run_stage

FIELDS = ("id", "question", "answer", "urls", "queries", "difficulty", "teacher_correct")
"""The pool's upstream fields; each defaults to the upstream field of the same name."""
_LISTS = ("urls", "queries")
CONFLICTING_LABELS = "conflicting_labels"


def qid_of(question: str) -> str:
    """DR-256's qid: ``q-`` + 16 hex digits of the SHA-256 of the normalised question."""
    return "q-" + hashlib.sha256(normalise_question(question).encode("utf-8")).hexdigest()[:16]


def field_map(pairs: Sequence[str]) -> dict[str, str]:
    """``--map FIELD=UPSTREAM`` options as {field: upstream field}; every field of
    :data:`FIELDS` is present. InvalidInputError (exit 2) for a malformed pair or an
    unknown field."""
    mapping = {f: f for f in FIELDS}
    for pair in pairs:
        name, sep, upstream = pair.partition("=")
        if not sep or not name or not upstream:
            raise InvalidInputError(f"--map {pair}: expected FIELD=UPSTREAM_FIELD")
        if name not in mapping:
            raise InvalidInputError(f"--map {pair}: unknown field {name!r} (fields: {', '.join(FIELDS)})")
        mapping[name] = upstream
    return mapping


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def read_upstream(path: Path, mapping: Mapping[str, str]) -> list[dict[str, Any]]:
    """The upstream rows, mapped onto :data:`FIELDS` (plus ``line`` and ``fingerprint``).

    Raises InvalidInputError (exit 2): ``path:line`` for a line that is not a JSON object,
    a row without a question or answer, or a list field of another type; an unreadable or
    empty file; a mapped upstream field that no row has (a misspelt ``--map``)."""
    try:
        lines = path.read_text(encoding="utf-8").split("\n")
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidInputError(f"cannot read upstream rows {path}: {e}") from None
    objects: list[tuple[int, dict[str, Any]]] = []
    seen_fields: set[str] = set()
    for n, raw in json_object_lines(lines, path):
        seen_fields.update(raw)
        objects.append((n, raw))
    if not objects:
        raise InvalidInputError(f"{path}: no upstream rows (the pool would be empty)")
    # a misspelt --map first: otherwise it would read as "row 1 has no answer"
    unused = sorted(f"{name}={up}" for name, up in mapping.items() if up != name and up not in seen_fields)
    if unused:
        raise InvalidInputError(f"--map {unused[0]}: no row of {path} has that field")
    rows: list[dict[str, Any]] = []
    for n, raw in objects:
        fingerprint = hashlib.sha256(canonical_json(raw).encode("utf-8")).hexdigest()
        row: dict[str, Any] = {"line": n, "fingerprint": fingerprint}
        for name in ("question", "answer"):
            value = _text(raw.get(mapping[name]))
            if value is None:
                raise InvalidInputError(f"{path}:{n}: no {name} (field {mapping[name]!r} missing or empty)")
            row[name] = value
        for name in _LISTS:
            value = raw.get(mapping[name], [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise InvalidInputError(f"{path}:{n}: {name} (field {mapping[name]!r}) is not a list of "
                                        "strings")
            row[name] = [v.strip() for v in value if v.strip()]
        ident = raw.get(mapping["id"])
        row["id"] = str(ident) if ident is not None and str(ident).strip() else f"line:{n}"
        row["difficulty"] = raw.get(mapping["difficulty"])
        row["teacher_correct"] = raw.get(mapping["teacher_correct"])
        rows.append(row)
    return rows


def group_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows grouped by normalised question, groups in qid order, rows in file order."""
    groups: dict[str, dict[str, Any]] = {}
    for row in rows:
        qid = qid_of(row["question"])
        g = groups.setdefault(qid, {"qid": qid, "rows": []})
        g["rows"].append(dict(row))
    return [groups[q] for q in sorted(groups)]


def _union(lists: Sequence[Sequence[str]]) -> list[str]:
    out: dict[str, None] = {}
    for values in lists:
        out.update(dict.fromkeys(values))
    return list(out)


def pool_line(group: Mapping[str, Any]) -> Keep | Reject:
    """The pool line of a group, or its removal as ``conflicting_labels``."""
    rows = group["rows"]
    labels = sorted({normalise_label(r["answer"]) for r in rows})
    if len(labels) > 1:
        given = sorted({r["answer"] for r in rows})
        return Reject(CONFLICTING_LABELS, f"{len(labels)} different answers after normalisation: "
                      + "; ".join(f"{a!r}" for a in given))
    first = rows[0]
    return Keep({
        "qid": group["qid"],
        "question": first["question"],
        "answer": first["answer"],
        "dataset_rows": [r["id"] for r in rows],
        "upstream_lines": [r["line"] for r in rows],
        "row_fingerprints": [r["fingerprint"] for r in rows],
        "urls": _union([r["urls"] for r in rows]),
        "queries": _union([r["queries"] for r in rows]),
        "difficulty": [r["difficulty"] for r in rows],
        "teacher_correct": [r["teacher_correct"] for r in rows],
    })


def _run(ctx: StageContext) -> None:
    mapping = dict(ctx.settings["map"])
    rows = read_upstream(Path(ctx.stage.inputs[0]), mapping)
    groups = group_rows(rows)
    kept = ctx.map(groups, key=lambda g: g["qid"], process=pool_line)
    ctx.write_jsonl("pool.jsonl", kept)
    ctx.write_json("facts.json", {"rows": len(rows), "groups": len(groups),
                                  "merged_rows": len(rows) - len(groups),
                                  "conflicts": len(groups) - len(kept), "kept": len(kept)})


def consolidate(upstream: str | Path, pool: str | Path, mapping: Mapping[str, str]) -> dict[str, Any]:
    """Write ``POOL/consolidate/pool.jsonl`` from the upstream rows; returns the stage's
    record (``counts``; the facts rows, groups, merged_rows, conflicts, kept are in
    ``POOL/consolidate/facts.json`` and ``POOL/summary.json``).

    Bad rows raise InvalidInputError before anything is written (see the module doc)."""
    source = Path(upstream).resolve()
    groups = group_rows(read_upstream(source, mapping))  # bad input is refused before anything is written
    if all(isinstance(pool_line(g), Reject) for g in groups):
        raise InvalidInputError(f"{upstream}: all {len(groups)} question groups have conflicting labels: "
                                "the pool would be empty")
    return run_stage(pool, "consolidate", _run, inputs=(source,), outputs=("pool.jsonl", "facts.json"),
                     settings={"map": dict(sorted(mapping.items()))})


__all__ = ["CONFLICTING_LABELS", "FIELDS", "consolidate", "field_map", "group_rows", "pool_line", "qid_of",
           "read_upstream"]
