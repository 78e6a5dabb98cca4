"""Difficulty, freeze and churn over the toolkit's OpenBioRQ calibration (``drsearch calibrate
--rule openbiorq``: one scored run per roster model, ``--frozen-runs`` at temperature 0).

- :func:`difficulty_report`: each bucket's count and share with its Wilson 95 % interval, the
  frozen core's share of the core, and each item's bucket with the roster scores it came from
  (what the ``export`` stage puts in ``metadata.openbiorq.difficulty``).
- :func:`freeze`: the frozen core (core items every roster model still fails at temperature 0)
  as sorted ids, one a line, and that text's SHA-256; a calibration made without
  temperature-0 runs is refused. :func:`freeze_t0` does the same from temperature-0 runs named
  directly (``freeze --t0 RUN...``), each checked against the calibration: temperature 0,
  the same questions, corpus and blocklist, one run per roster model.
- :func:`churn`: two calibrations of the same roster over the same questions (A, B): mean
  \\|Δscore\\| over (item, model) pairs, fail-label agreement (score < threshold in both or in
  neither), core-label flips among boundary items (max of the roster's A scores within
  ±``boundary`` of the threshold) and among deep failures (max in [0.35, 0.40)), and the
  Jaccard of A's core with the core after substituting one model's B scores (each model) and
  the whole roster's. When B's roster is another one of the same size (one model or more
  replaced), :func:`roster_swap` reports the Jaccard of the two rosters' cores instead.

Calibrations of other questions (different ``questions_sha256``) or other items, and rosters of
another size, are InvalidInputError (exit 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ....agents.canonical import sha256_hex
from ....contract import InvalidInputError, read_json_object
from ...grade import RunEpisodes
from ...records import GradedQuestion
from ..calibrate import BUCKETS, OPENBIORQ_THRESHOLD, calibrate, frozen_core
from .textstages import rate

BOUNDARY = 0.15
DEEP = (0.35, 0.40)


def read_calibration(path: Path) -> dict[str, Any]:
    """An OpenBioRQ ``calibration.json``; InvalidInputError for anything else."""
    value = read_json_object(path)
    if value.get("rule") != "openbiorq" or not isinstance(value.get("items"), list):
        raise InvalidInputError(f"{path}: not a calibration of rule openbiorq (drsearch calibrate --rule "
                                "openbiorq)")
    _check_consistent(value, path)
    value["_path"] = str(path)
    return value


def _check_consistent(cal: dict[str, Any], path: Path) -> None:
    """A calibration whose items are not well formed, or whose ``counts`` disagree with the
    buckets of its items (a hand edit), is refused: the rates computed from it would be wrong."""
    counts = cal.get("counts")
    if not isinstance(counts, dict) or not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0
                                               for c in counts.values()):
        raise InvalidInputError(f"{path}: 'counts' is not an object of non-negative integers")
    tally: dict[str, int] = {}
    for n, item in enumerate(cal["items"]):
        if not isinstance(item, dict) or "qid" not in item or not isinstance(item.get("models"), dict) \
                or item.get("bucket") not in BUCKETS["openbiorq"]:
            raise InvalidInputError(f"{path}: item {n} is not a calibrated item (qid, bucket in "
                                    f"{'/'.join(BUCKETS['openbiorq'])}, models)")
        tally[item["bucket"]] = tally.get(item["bucket"], 0) + 1
    wrong = [f"{b}: counts {counts.get(b, 0)}, items {tally.get(b, 0)}" for b in BUCKETS["openbiorq"]
             if counts.get(b, 0) != tally.get(b, 0)]
    if wrong:
        raise InvalidInputError(f"{path}: 'counts' disagree with its items ({'; '.join(wrong)}); "
                                "was it edited by hand? Recalibrate with drsearch calibrate")


def difficulty_report(cal: dict[str, Any]) -> dict[str, Any]:
    counts = {b: int(cal["counts"].get(b, 0)) for b in BUCKETS["openbiorq"]}
    n = sum(counts.values())
    report: dict[str, Any] = {"buckets": {b: {**rate(c, n), "count": c} for b, c in counts.items()}, "n": n,
                              "questions_sha256": cal.get("questions_sha256"), "frozen_core": None,
                              "threshold": (cal.get("settings") or {}).get("threshold", OPENBIORQ_THRESHOLD),
                              "items": {str(i["qid"]): {
                                  "bucket": i["bucket"], "frozen_core": i.get("frozen_core"),
                                  "reason": i.get("reason"),
                                  "scores": {m: (s["scores"][0] if s["scores"] else None)
                                             for m, s in sorted(i["models"].items())}}
                                  for i in cal["items"]}}
    if cal.get("frozen_runs"):
        frozen = sum(1 for i in cal["items"] if i.get("frozen_core"))
        report["frozen_core"] = {**rate(frozen, counts["core"]), "count": frozen}
    return report


def freeze(cal: dict[str, Any]) -> tuple[list[str], str, str]:
    """``(ids, text, sha256)`` of the frozen core; InvalidInputError without temperature-0 runs."""
    if not cal.get("frozen_runs"):
        raise InvalidInputError(f"{cal['_path']}: calibrated without temperature-0 runs; freeze needs "
                                "--t0 T1 T2 T3 or a calibration made with `drsearch calibrate --rule "
                                "openbiorq --frozen-runs T1 T2 T3`")
    ids = sorted(str(i["qid"]) for i in cal["items"] if i.get("frozen_core"))
    text = "".join(f"{i}\n" for i in ids)
    return ids, text, sha256_hex(text)


def freeze_t0(cal: dict[str, Any], t0: Sequence[tuple[RunEpisodes, Sequence[GradedQuestion]]]
              ) -> tuple[list[str], str, str]:
    """``(ids, text, sha256)`` of the frozen core: the calibration's core items that every roster
    model, in its run ``t0[i]`` (graded by ``t0[i][1]``), still fails at temperature 0.

    InvalidInputError, naming the run, for a run not recorded at temperature 0, over other
    questions (``questions_sha256``), another corpus or blocklist, of a model outside the roster
    or given twice; and when the runs do not cover the roster.
    """
    where = cal["_path"]
    roster = sorted(cal.get("runs") or next((i["models"] for i in cal["items"]), {}))
    by_model: dict[str, list[RunEpisodes]] = {}
    grades: dict[str, Sequence[GradedQuestion]] = {}
    for run, graded in t0:
        temperature = (run.manifest.get("preset") or {}).get("temperature")
        if temperature != 0:
            raise InvalidInputError(f"{run.path}: recorded at temperature {temperature!r}; freeze --t0 needs "
                                    "temperature-0 runs")
        recorded = run.manifest.get("questions_sha256")
        if recorded != cal.get("questions_sha256"):
            raise InvalidInputError(f"{run.path}: the run answered other questions (SHA-256 "
                                    f"{str(recorded)[:12]}…) than {where} "
                                    f"({str(cal.get('questions_sha256'))[:12]}…)")
        for field in ("corpus_identity", "blocklist_sha256"):
            if run.manifest.get(field) != cal.get(field):
                raise InvalidInputError(f"{run.path}: {field} {run.manifest.get(field)!r} differs from "
                                        f"{where}'s {cal.get(field)!r}")
        model = run.manifest.get("model")
        if not isinstance(model, str) or model not in roster:
            raise InvalidInputError(f"{run.path}: model {model!r} is not in the roster {roster} of {where}")
        if model in by_model:
            raise InvalidInputError(f"{run.path}: model {model!r} given twice in --t0")
        by_model[model], grades[model] = [run], graded
    if missing := sorted(set(roster) - set(by_model)):
        raise InvalidInputError(f"--t0: no temperature-0 run of roster model(s) {', '.join(missing)}")
    threshold = (cal.get("settings") or {}).get("threshold", OPENBIORQ_THRESHOLD)
    core = [str(i["qid"]) for i in cal["items"] if i["bucket"] == "core"]
    stats = calibrate(core, by_model, grades)
    ids = sorted(q for q in core if frozen_core(stats[q], threshold=threshold))
    text = "".join(f"{i}\n" for i in ids)
    return ids, text, sha256_hex(text)


def _scores(cal: dict[str, Any]) -> dict[str, dict[str, float | None]]:
    return {str(i["qid"]): {m: (s["scores"][0] if s["scores"] else None) for m, s in i["models"].items()}
            for i in cal["items"]}


def _core(scores: dict[str, dict[str, float | None]], threshold: float) -> set[str]:
    return {q for q, by in scores.items() if all(s is not None and s < threshold for s in by.values())}


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 1.0


def churn(a: dict[str, Any], b: dict[str, Any], *, threshold: float = OPENBIORQ_THRESHOLD,
          boundary: float = BOUNDARY, deep: tuple[float, float] = DEEP) -> dict[str, Any]:
    if a.get("questions_sha256") != b.get("questions_sha256"):
        raise InvalidInputError(f"{b['_path']}: calibrated over other questions (SHA-256 "
                                f"{str(b.get('questions_sha256'))[:12]}…) than {a['_path']} "
                                f"({str(a.get('questions_sha256'))[:12]}…)")
    sa, sb = _scores(a), _scores(b)
    roster = sorted(next(iter(sa.values()), {}))
    other = sorted(next(iter(sb.values()), {}))
    if set(sa) != set(sb) or any(sorted(sa[q]) != roster or sorted(sb[q]) != other for q in sa):
        raise InvalidInputError(f"{b['_path']}: other items than {a['_path']} (or a roster that changes "
                                "from item to item)")
    if other != roster:
        return roster_swap(a, sa, sb, roster, other, threshold=threshold)
    graded = [q for q in sa if all(sa[q][m] is not None and sb[q][m] is not None for m in roster)]
    pairs = [(sa[q][m], sb[q][m]) for q in graded for m in roster]
    deltas = [abs(float(x) - float(y)) for x, y in pairs]  # type: ignore[arg-type]
    agree = sum((float(x) < threshold) == (float(y) < threshold) for x, y in pairs)  # type: ignore[arg-type]
    ga, gb = {q: sa[q] for q in graded}, {q: sb[q] for q in graded}
    core_a, core_b = _core(ga, threshold), _core(gb, threshold)

    def flips(select: list[str]) -> dict[str, Any]:
        flipped = sorted(q for q in select if (q in core_a) != (q in core_b))
        return {**rate(len(flipped), len(select)), "ids": flipped}

    top = {q: max(float(s) for s in ga[q].values()) for q in graded}  # type: ignore[arg-type]
    one_model = {m: round(_jaccard(core_a, _core({q: {**ga[q], m: gb[q][m]} for q in graded}, threshold)), 6)
                 for m in roster}
    # rounded as the similarity module rounds cosines: 0.65 - 0.5 must be within 0.15, not 0.15000000000000002
    near = [q for q in graded if round(abs(top[q] - threshold), 9) <= boundary]
    return {"boundary": boundary, "boundary_flips": flips(near),
            "core_jaccard": {"one_model": one_model, "whole_roster": round(_jaccard(core_a, core_b), 6)},
            "deep": list(deep), "deep_flips": flips([q for q in graded if deep[0] <= top[q] < deep[1]]),
            "fail_label_agreement": rate(agree, len(pairs)),
            "mean_abs_delta": round(sum(deltas) / len(deltas), 6) if deltas else None, "roster": roster,
            "threshold": threshold, "ungraded": sorted(set(sa) - set(graded))}


Scores = dict[str, dict[str, float | None]]


def roster_swap(a: dict[str, Any], sa: Scores, sb: Scores, roster: list[str], other: list[str], *,
                threshold: float) -> dict[str, Any]:
    """Churn under a roster swap (the paper's §5.5): B calibrates another roster of the same size over
    the same items, one model replaced (``single_model``) or more (``whole_roster``). Reports the
    Jaccard of the two all-fail cores over the items both graded fully, how much of A's core B's
    recovers, and, over the models both rosters share, the mean |Δscore| and fail-label agreement."""
    if len(other) != len(roster):
        raise InvalidInputError(f"a roster swap keeps the roster's size: {a['_path']} has {len(roster)} "
                                f"models ({', '.join(roster)}), the other {len(other)} ({', '.join(other)})")
    shared = sorted(set(roster) & set(other))
    graded = [q for q in sa if all(s is not None for s in sa[q].values())
              and all(s is not None for s in sb[q].values())]
    core_a = _core({q: sa[q] for q in graded}, threshold)
    core_b = _core({q: sb[q] for q in graded}, threshold)
    pairs = [(float(sa[q][m]), float(sb[q][m])) for q in graded for m in shared]  # type: ignore[arg-type]
    agree = sum((x < threshold) == (y < threshold) for x, y in pairs)
    return {"core": {"a": len(core_a), "b": len(core_b), "both": len(core_a & core_b),
                     "only_a": sorted(core_a - core_b), "only_b": sorted(core_b - core_a)},
            "core_jaccard": {"swap": round(_jaccard(core_a, core_b), 6)},
            "fail_label_agreement_shared": rate(agree, len(pairs)),
            "mean_abs_delta_shared": round(sum(abs(x - y) for x, y in pairs) / len(pairs), 6)
            if pairs else None,
            "mode": "roster_swap", "recovered": rate(len(core_a & core_b), len(core_a)),
            "replaced": {"in": sorted(set(other) - set(roster)), "out": sorted(set(roster) - set(other))},
            "roster": roster, "roster_b": other, "shared": shared,
            "swap": "single_model" if len(shared) == len(roster) - 1 else "whole_roster",
            "threshold": threshold, "ungraded": sorted(set(sa) - set(graded))}


__all__ = ["BOUNDARY", "DEEP", "churn", "difficulty_report", "freeze", "freeze_t0", "read_calibration",
           "roster_swap"]
