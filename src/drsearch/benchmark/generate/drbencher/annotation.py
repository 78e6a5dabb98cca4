"""Human validation as the paper does it: an annotation sheet for a stratified sample of the
exported questions, and the agreement of two annotators' sheets.

The sheet (CSV, UTF-8, one row per question) shows what an annotator checks — the question,
the gold with its unit and computation, the withheld entities, the grounded clue facts with
their KG triples and the grounding articles — and leaves four columns to fill:

- ``entity_correct`` (``yes``/``no``): the gold entity chain is right given the clue facts;
- ``question_clear`` (``yes``/``no``): the question is unambiguous, with no erroneous description;
- ``error_class``: empty for a valid item, else one of :data:`ERROR_CLASSES` — ``DB``
  (incorrect or stale KG data), ``LLM`` (hallucination in fact extraction or composition),
  ``MH`` (multi-hop property flattening), ``Amb`` (ambiguous or non-unique entity
  description), ``Ent`` (entity misidentification);
- ``notes``: free text.

An item is *valid* when its entity is correct, its question clear and it names no error class.
:func:`agreement` compares two filled sheets of the same items: raw agreement and
Krippendorff's α (nominal, the ``krippendorff`` package) on validity and on each field, and
the error-taxonomy tally of each sheet (Table 3's Err, Acc, Acc* = accuracy without DB
errors) with the classes behind the disagreements (Table 12).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .errors import AnnotationError
from .tables import question_facts

ERROR_CLASSES = ("DB", "LLM", "MH", "Amb", "Ent")
"""The paper's error classes (Table 3), in its order."""

FILLED = ("entity_correct", "question_clear", "error_class", "notes")
"""The columns an annotator fills."""

SHOWN = ("item", "domain", "template", "cci", "question", "gold", "computation", "entities", "clues",
         "articles")
"""The columns the sheet shows (``item`` is the question id)."""

COLUMNS = SHOWN + FILLED
YES_NO = ("yes", "no")


def _questions(gen: Path) -> list[dict[str, Any]]:
    path = gen / "questions.jsonl"
    if not path.is_file():
        raise AnnotationError(f"{gen}: no questions.jsonl (give the output directory of "
                              "`drsearch generate drbencher`)")
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    rows = [r for r in rows if r.get("metadata", {}).get("drbencher") is not None]
    if not rows:
        raise AnnotationError(f"{path}: no DrBencher questions")
    return rows


def _rank(seed: int, qid: str) -> str:
    return hashlib.sha256(f"{seed}:{qid}".encode()).hexdigest()


def stratified_sample(rows: Sequence[Mapping[str, Any]], n: int | None, seed: int) -> list[Mapping[str, Any]]:
    """``n`` rows (all when None or ≥ the rows), stratified by domain: each domain gets its
    proportional share by largest remainder (ties to the larger domain, then its name), and
    at least one when ``n`` covers every domain; within a domain, the rows first in the order
    of SHA-256(seed:question id). Returned by domain, then question id. A pure function of its
    inputs."""
    by_domain: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_domain.setdefault(str(r["metadata"].get("category")), []).append(r)
    total = len(rows)
    if n is None or n >= total:
        quota = {d: len(v) for d, v in by_domain.items()}
    else:
        exact = {d: n * len(v) / total for d, v in by_domain.items()}
        quota = {d: int(x) for d, x in exact.items()}
        if n >= len(by_domain):
            for d in quota:
                quota[d] = max(quota[d], 1)
        order = sorted(by_domain, key=lambda d: (-(exact[d] - int(exact[d])), -len(by_domain[d]), d))
        i = 0
        while sum(quota.values()) < n:
            d = order[i % len(order)]
            if quota[d] < len(by_domain[d]):
                quota[d] += 1
            i += 1
        while sum(quota.values()) > n:  # the minimum of one overshot: take back from the largest
            d = max((d for d in quota if quota[d] > 1), key=lambda d: (quota[d], d))
            quota[d] -= 1
    picked = []
    for d in sorted(by_domain):
        ranked = sorted(by_domain[d], key=lambda r: _rank(seed, str(r["metadata"]["qid"])))[:quota[d]]
        picked += sorted(ranked, key=lambda r: str(r["metadata"]["qid"]))
    return picked


def _gold(label: str, unit: str) -> str:
    """The label with its unit, once (a label may already carry it: "14971 days")."""
    return label if not unit or label.endswith(unit) else f"{label} {unit}"


def _sheet_row(row: Mapping[str, Any]) -> dict[str, str]:
    meta, m = row["metadata"], row["metadata"]["drbencher"]
    entities = "; ".join(f"{e['role']}: {e['label']} ({e['qid']})" for e in m["entities"])
    clues = "\n".join(f"{f['text']} [{' '.join(f['triple'])}; hops {f['hops']}]" for f in question_facts(m))
    articles = [m.get("article_docid"), *(e.get("article_docid") for e in m["entities"][1:])]
    return {"item": str(meta["qid"]), "domain": str(meta.get("category")), "template": str(m["template"]),
            "cci": f"{m['cci']['total']} (E {m['cci']['E']}, P {m['cci']['P']})",
            "question": str(meta["question"]), "gold": _gold(str(row["label"]), str(m.get("unit") or "")),
            "computation": str(m.get("computation", "")), "entities": entities, "clues": clues,
            "articles": " ".join(a for a in articles if a),
            **dict.fromkeys(FILLED, "")}


def annotation_sheet(gen: Path, n: int | None = None, seed: int = 0) -> tuple[str, int]:
    """(the CSV text of the sheet for ``n`` questions of ``gen``/questions.jsonl, sampled by
    :func:`stratified_sample`; how many rows). ``AnnotationError`` when there are no questions."""
    rows = stratified_sample(_questions(gen), n, seed)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow(_sheet_row(r))
    return buf.getvalue(), len(rows)


def read_sheet(path: Path) -> dict[str, dict[str, str]]:
    """``{item: {entity_correct, question_clear, error_class}}`` of a filled sheet.

    ``AnnotationError`` (one line naming the file, and the row where there is one) for a file
    that cannot be read, a missing column, an item twice, an empty or unknown yes/no, or an
    error class outside :data:`ERROR_CLASSES` (matched case-insensitively, stored as spelled
    there)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as e:
        raise AnnotationError(f"{path}: cannot read ({e.__class__.__name__}: {e})") from None
    reader = csv.DictReader(io.StringIO(text))
    need = ("item", "entity_correct", "question_clear", "error_class")
    missing = [c for c in need if c not in (reader.fieldnames or [])]
    if missing:
        raise AnnotationError(f"{path}: missing column(s) {', '.join(missing)}")
    classes = {c.casefold(): c for c in ERROR_CLASSES}
    out: dict[str, dict[str, str]] = {}
    for line, r in enumerate(reader, start=2):
        item = (r["item"] or "").strip()
        if not item:
            raise AnnotationError(f"{path}:{line}: empty item")
        if item in out:
            raise AnnotationError(f"{path}:{line}: item {item} appears twice")
        verdict: dict[str, str] = {}
        for col in ("entity_correct", "question_clear"):
            value = (r[col] or "").strip().casefold()
            if value not in YES_NO:
                raise AnnotationError(f"{path}:{line}: {col} must be yes or no, got {r[col]!r}")
            verdict[col] = value
        cls = (r["error_class"] or "").strip()
        if cls and cls.casefold() not in classes:
            raise AnnotationError(f"{path}:{line}: unknown error_class {cls!r} (one of "
                                  f"{', '.join(ERROR_CLASSES)}, or empty for a valid item)")
        verdict["error_class"] = classes.get(cls.casefold(), "")
        out[item] = verdict
    if not out:
        raise AnnotationError(f"{path}: no items")
    return out


def is_valid(verdict: Mapping[str, str]) -> bool:
    """Entity correct, question clear, no error class."""
    clear = verdict["question_clear"] == "yes"
    return verdict["entity_correct"] == "yes" and clear and not verdict["error_class"]


def krippendorff_alpha(reliability: Sequence[Sequence[str | None]]) -> float | None:
    """Nominal Krippendorff's α of coders × units labels (None: a missing label), by the
    ``krippendorff`` package; None when undefined (fewer than two distinct labels in all)."""
    import krippendorff  # the grading extra
    import numpy as np

    labels = sorted({v for row in reliability for v in row if v is not None})
    if len(labels) < 2:
        return None
    code = {v: float(i) for i, v in enumerate(labels)}
    data = np.array([[np.nan if v is None else code[v] for v in row] for row in reliability], dtype=float)
    return float(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))


def _field(a: Mapping[str, Mapping[str, str]], b: Mapping[str, Mapping[str, str]], items: Sequence[str],
           key: str) -> dict[str, Any]:
    xs = [str(is_valid(a[i])) if key == "valid" else a[i][key] or "none" for i in items]
    ys = [str(is_valid(b[i])) if key == "valid" else b[i][key] or "none" for i in items]
    agree = sum(x == y for x, y in zip(xs, ys, strict=True))
    return {"agreement": agree / len(items), "agreed": agree,
            "krippendorff_alpha": krippendorff_alpha([xs, ys])}


def tally(sheet: Mapping[str, Mapping[str, str]]) -> dict[str, Any]:
    """One sheet's Table 3 row: ``n``, ``errors`` (invalid items), ``by_class`` (every class,
    plus ``unclassified`` for an invalid item without one), ``accuracy`` (valid / n) and
    ``accuracy_excluding_db`` (valid / (n − DB items), the paper's Acc*)."""
    by_class = dict.fromkeys([*ERROR_CLASSES, "unclassified"], 0)
    valid = 0
    for v in sheet.values():
        if is_valid(v):
            valid += 1
        else:
            by_class[v["error_class"] or "unclassified"] += 1
    n = len(sheet)
    rest = n - by_class["DB"]
    return {"accuracy": valid / n, "accuracy_excluding_db": valid / rest if rest else None,
            "by_class": by_class, "errors": n - valid, "n": n, "valid": valid}


def agreement(path_a: Path, path_b: Path) -> dict[str, Any]:
    """Two annotators' sheets of the same items compared (see the module): ``n``, ``fields``
    (``valid``, ``entity_correct``, ``question_clear``, ``error_class``: each ``{agreement,
    agreed, krippendorff_alpha}``, α None where undefined), ``tally`` (``a``, ``b``: see
    :func:`tally`), ``disagreements`` (items whose validity differs, sorted) and
    ``disagreements_by_class`` (the class either annotator gave such an item; an item both
    classed differently counts for both). ``AnnotationError`` for a bad sheet or sheets of
    different items."""
    a, b = read_sheet(path_a), read_sheet(path_b)
    only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
    if only_a or only_b:
        sides = ((path_a, only_a), (path_b, only_b))
        parts = [f"{len(ids)} only in {p} (e.g. {ids[0]})" for p, ids in sides if ids]
        raise AnnotationError(f"the sheets cover different items: {'; '.join(parts)}")
    items = sorted(a)
    split = [i for i in items if is_valid(a[i]) != is_valid(b[i])]
    by_class = dict.fromkeys([*ERROR_CLASSES, "unclassified"], 0)
    for i in split:
        for c in sorted({a[i]["error_class"], b[i]["error_class"]} - {""}) or ["unclassified"]:
            by_class[c] += 1
    return {"disagreements": split, "disagreements_by_class": by_class,
            "fields": {k: _field(a, b, items, k) for k in ("valid", "entity_correct", "question_clear",
                                                           "error_class")},
            "n": len(items), "tally": {"a": tally(a), "b": tally(b)}}


def render_agreement(result: Mapping[str, Any]) -> str:
    """The printed form of :func:`agreement`'s result."""
    def alpha(v: float | None) -> str:
        return "undefined" if v is None else f"{v:.4f}"

    lines = [f"items {result['n']}", f"{'field':<16}{'agreement':>10}  Krippendorff's alpha (nominal)"]
    for k, f in result["fields"].items():
        lines.append(f"{k:<16}{100 * f['agreement']:>9.1f}%  {alpha(f['krippendorff_alpha'])}")
    lines.append("")
    lines.append(f"{'sheet':<8}{'n':>5}{'Err':>5}{'Acc %':>8}{'Acc* %':>8}" +
                 "".join(f"{c:>6}" for c in ERROR_CLASSES) + "  unclassified")
    for side in ("a", "b"):
        t = result["tally"][side]
        star = "-" if t["accuracy_excluding_db"] is None else f"{100 * t['accuracy_excluding_db']:.1f}"
        by_class = t["by_class"]
        counts = "".join(f"{by_class[c]:>6}" for c in ERROR_CLASSES) + f"{by_class['unclassified']:>14}"
        acc = f"{100 * t['accuracy']:>8.1f}"
        lines.append(f"{side.upper():<8}{t['n']:>5}{t['errors']:>5}{acc}{star:>8}{counts}")
    split = result["disagreements"]
    lines.append("")
    lines.append(f"validity disagreements ({len(split)}): {' '.join(split) if split else '-'}")
    lines.append("  by class: " + ", ".join(f"{c} {n}" for c, n in result["disagreements_by_class"].items()))
    return "\n".join(lines)


__all__ = ["COLUMNS", "ERROR_CLASSES", "FILLED", "agreement", "annotation_sheet", "is_valid",
           "krippendorff_alpha", "read_sheet", "render_agreement", "stratified_sample", "tally"]
