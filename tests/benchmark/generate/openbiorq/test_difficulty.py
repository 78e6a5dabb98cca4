"""Difficulty, freeze and churn over OpenBioRQ calibrations (the calibration.json shape that
``drsearch calibrate --rule openbiorq`` writes), with the issue's known answers."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from drsearch.benchmark.generate.openbiorq.difficulty import churn, difficulty_report, freeze
from drsearch.benchmark.generate.openbiorq.textstages import rate
from drsearch.contract import InvalidInputError

from ..test_calibrate import QUESTIONS, ROWS, write_model_run
from ..test_calibrate import cli as calibrate_cli
from .conftest import generate

ROSTER = ("m1", "m2", "m3")


def calibration(scores: dict[str, tuple[float | None, ...]], *, frozen: set[str] | None = None,
                counts: dict[str, int] | None = None, questions: str = "q" * 64,
                path: str = "cal.json", roster: tuple[str, ...] = ROSTER) -> dict[str, Any]:
    items = [{"bucket": "core" if all(s is not None and s < 0.5 for s in v) else "discriminating",
              "frozen_core": (q in frozen) if frozen is not None else None,
              "models": {m: {"scores": [s]} for m, s in zip(roster, v, strict=True)}, "qid": q}
             for q, v in scores.items()]
    if counts is None:  # what drsearch calibrate writes: the tally of the items' buckets
        counts = {b: sum(1 for i in items if i["bucket"] == b) for b in ("core", "discriminating")}
        counts = {b: c for b, c in counts.items() if c}
    return {"_path": path, "counts": counts, "frozen_runs": {"m1": ["t0"]} if frozen is not None else None,
            "items": items, "questions_sha256": questions, "rule": "openbiorq"}


def test_bucket_shares_and_wilson_intervals_are_the_issues() -> None:
    report = difficulty_report(calibration({}, counts={"core": 256, "discriminating": 236, "easy": 33}))
    assert {b: r["rate_pct"] for b, r in report["buckets"].items()} == {
        "core": 48.8, "discriminating": 45.0, "easy": 6.3, "ungraded": 0.0}
    assert report["n"] == 525 and report["frozen_core"] is None
    assert rate(175, 657)["ci95_pct"] == [23.4, 30.1]
    frozen = {f"q{i}" for i in range(252)}
    cal = calibration({f"q{i}": (0.1, 0.1, 0.1) for i in range(423)}, frozen=frozen, counts={"core": 423})
    assert difficulty_report(cal)["frozen_core"]["ci95_pct"] == [54.8, 64.1]


def test_freeze_writes_sorted_ids_and_their_sha256() -> None:
    cal = calibration({"b#0": (0.1, 0.2, 0.3), "a#0": (0.0, 0.0, 0.0), "c#0": (0.9, 0.1, 0.1)},
                      frozen={"b#0", "a#0"})
    ids, text, digest = freeze(cal)
    assert ids == ["a#0", "b#0"] and text == "a#0\nb#0\n" and digest == hashlib.sha256(text.encode()).hexdigest()
    with pytest.raises(InvalidInputError, match="calibrated without temperature-0 runs"):
        freeze(calibration({"a#0": (0.0, 0.0, 0.0)}))


def test_seventeen_flips_of_forty_nine_boundary_items_is_34_7_percent() -> None:
    a: dict[str, tuple[float | None, ...]] = {}
    b: dict[str, tuple[float | None, ...]] = {}
    for i in range(49):  # max of three within ±0.15 of 0.5 (0.35 and 0.65 included)
        top = (0.35, 0.45, 0.65)[i % 3]
        a[f"b{i}"] = (top, 0.1, 0.0)
        flip = i < 17
        b[f"b{i}"] = (0.55 if flip and top < 0.5 else 0.45 if flip else top, 0.1, 0.0)
    a["far"], b["far"] = (0.9, 0.9, 0.9), (0.9, 0.9, 0.9)  # max 0.9: not a boundary item
    a["deep"], b["deep"] = (0.399, 0.2, 0.2), (0.7, 0.2, 0.2)  # max in [0.35, 0.40): a deep failure that flips
    report = churn(calibration(a), calibration(b))
    flips = report["boundary_flips"]
    assert (flips["yes"], flips["n"], flips["rate_pct"]) == (17 + 1, 49 + 1, 36.0)  # "deep" is on the boundary too
    del a["deep"], b["deep"]
    flips = churn(calibration(a), calibration(b))["boundary_flips"]
    assert (flips["yes"], flips["n"], flips["rate_pct"]) == (17, 49, 34.7)


def test_churn_deltas_agreement_deep_failures_and_core_jaccard() -> None:
    a = {"x": (0.2, 0.3, 0.38), "y": (0.1, 0.1, 0.1), "z": (0.8, 0.2, 0.2), "w": (0.2, 0.2, 0.2)}
    b = {"x": (0.2, 0.3, 0.60), "y": (0.1, 0.1, 0.1), "z": (0.8, 0.2, 0.2), "w": (None, 0.2, 0.2)}
    report = churn(calibration(a), calibration(b))
    assert report["ungraded"] == ["w"] and report["roster"] == list(ROSTER)
    assert report["mean_abs_delta"] == round(0.22 / 9, 6)
    assert (report["fail_label_agreement"]["yes"], report["fail_label_agreement"]["n"]) == (8, 9)
    assert report["deep_flips"]["ids"] == ["x"] and report["deep_flips"]["n"] == 1
    # core A = {x, y}; B = {y}: whole roster 1/2; substituting m3 alone moves x out, m1 or m2 alone nothing
    assert report["core_jaccard"] == {"one_model": {"m1": 1.0, "m2": 1.0, "m3": 0.5}, "whole_roster": 0.5}


def test_churn_refuses_other_questions_or_rosters() -> None:
    a = calibration({"x": (0.1, 0.1, 0.1)}, path="A")
    with pytest.raises(InvalidInputError, match=r"^B: calibrated over other questions"):
        churn(a, calibration({"x": (0.1, 0.1, 0.1)}, questions="f" * 64, path="B"))
    with pytest.raises(InvalidInputError, match=r"^B: other items than A"):
        churn(a, calibration({"y": (0.1, 0.1, 0.1)}, path="B"))
    with pytest.raises(InvalidInputError, match=r"^a roster swap keeps the roster's size: A has 3 models"):
        churn(a, calibration({"x": (0.1, 0.1)}, path="B", roster=("m1", "m4")))


def test_churn_under_a_single_model_swap_and_a_whole_roster_swap() -> None:
    """The paper's §5.5: the all-fail core re-derived from another triple, its Jaccard with A's core."""
    a = {"p": (0.1, 0.2, 0.3), "q": (0.1, 0.1, 0.1), "r": (0.6, 0.1, 0.1), "s": (0.2, 0.2, 0.4),
         "t": (0.1, 0.1, 0.45), "u": (None, 0.1, 0.1)}
    # m3 replaced by m4: m4 solves s, fails r's items as m3 did; m1 and m2 unchanged but on q (m2 0.1 → 0.7)
    b = {"p": (0.1, 0.2, 0.2), "q": (0.1, 0.7, 0.1), "r": (0.6, 0.1, 0.1), "s": (0.2, 0.2, 0.9),
         "t": (0.1, 0.1, 0.2), "u": (0.1, 0.1, 0.1)}
    report = churn(calibration(a, path="A"), calibration(b, path="B", roster=("m1", "m2", "m4")))
    # graded by both: p q r s t (u has no m1 score in A); core A = {p, q, s, t}, core B = {p, t}
    assert report["mode"] == "roster_swap" and report["swap"] == "single_model"
    assert report["replaced"] == {"in": ["m4"], "out": ["m3"]} and report["shared"] == ["m1", "m2"]
    assert report["ungraded"] == ["u"]
    assert report["core"] == {"a": 4, "b": 2, "both": 2, "only_a": ["q", "s"], "only_b": []}
    assert report["core_jaccard"] == {"swap": 0.5}  # |{p, t}| / |{p, q, s, t}|
    assert (report["recovered"]["yes"], report["recovered"]["n"]) == (2, 4)
    # shared models m1, m2 over the 5 graded items: one delta of 0.6 (q, m2), one fail-label flip
    assert report["mean_abs_delta_shared"] == round(0.6 / 10, 6)
    assert (report["fail_label_agreement_shared"]["yes"], report["fail_label_agreement_shared"]["n"]) == (9, 10)
    whole = churn(calibration(a, path="A"), calibration(b, path="B", roster=("m4", "m5", "m6")))
    assert whole["swap"] == "whole_roster" and whole["shared"] == [] and whole["mean_abs_delta_shared"] is None
    assert whole["core_jaccard"] == {"swap": 0.5}


def test_cli_reports_and_bad_input(tmp_path: Path) -> None:
    def write(name: str, cal: dict[str, Any]) -> Path:
        path = tmp_path / name
        path.write_text(json.dumps({k: v for k, v in cal.items() if k != "_path"}))
        return path

    out = tmp_path / "obrq"
    with_t0 = write("a.json", calibration({"a#0": (0.1, 0.1, 0.1), "b#0": (0.9, 0.1, 0.1)}, frozen={"a#0"},
                                          counts={"core": 1, "discriminating": 1}))
    rc, _, err = generate("freeze", out, "--calibration", str(with_t0), sources=None)
    assert rc == 0, err
    assert (out / "frozen_core.txt").read_text() == "a#0\n"
    recorded = json.loads((out / "frozen_core.json").read_text())
    assert recorded["frozen_core_sha256"] == hashlib.sha256(b"a#0\n").hexdigest() and recorded["count"] == 1
    rc, _, err = generate("difficulty", out, "--calibration", str(with_t0), sources=None)
    assert rc == 0 and json.loads((out / "difficulty.json").read_text())["buckets"]["core"]["count"] == 1
    no_t0 = write("b.json", calibration({"a#0": (0.1, 0.1, 0.1), "b#0": (0.9, 0.1, 0.1)}))
    rc, _, err = generate("churn", out, "--calibration", str(with_t0), "--against", str(no_t0), sources=None)
    assert rc == 0, err
    assert json.loads((out / "churn.json").read_text())["core_jaccard"]["whole_roster"] == 1.0
    swapped = write("s.json", calibration({"a#0": (0.1, 0.1, 0.9), "b#0": (0.9, 0.1, 0.1)}, roster=("m1", "m2", "m9")))
    rc, _, err = generate("churn", out, "--calibration", str(with_t0), "--against", str(swapped), sources=None)
    assert rc == 0, err
    swap = json.loads((out / "churn.json").read_text())
    assert swap["mode"] == "roster_swap" and swap["replaced"] == {"in": ["m9"], "out": ["m3"]}
    assert swap["core_jaccard"] == {"swap": 0.0} and swap["b"] == str(swapped)
    for args, message in [
        (("freeze", "--calibration", str(no_t0)), "calibrated without temperature-0 runs"),
        (("freeze",), "freeze needs --calibration CAL"),
        (("churn", "--calibration", str(with_t0)), "churn needs --calibration A --against B"),
        (("churn", "--calibration", str(with_t0), "--against",
          str(write("c.json", calibration({"a#0": (0.1, 0.1, 0.1), "b#0": (0.9, 0.1, 0.1)}, questions="e" * 64)))),
         "calibrated over other questions"),
        (("churn", "--calibration", str(with_t0), "--against",
          str(write("f.json", calibration({"a#0": (0.1, 0.1), "b#0": (0.9, 0.1)}, roster=("m1", "m9"))))),
         "a roster swap keeps the roster's size"),
        (("difficulty", "--calibration", str(tmp_path / "none.json")), "none.json: no such file"),
        (("difficulty", "--calibration",  # a hand edit: counts no longer the items' tally
          str(write("d.json", calibration({"a#0": (0.1, 0.1, 0.1)}, counts={"core": 5})))),
         "d.json: 'counts' disagree with its items (core: counts 5, items 1)"),
        (("difficulty", "--calibration",
          str(write("e.json", calibration({"a#0": (0.1, 0.1, 0.1)}, counts={"core": -1})))),
         "'counts' is not an object of non-negative integers"),
        (("extract",), "stage extract needs --sources"),
    ]:
        rc, _, err = generate(args[0], tmp_path / "o2", *args[1:], sources=None)
        assert rc == 2 and message in err and err.count("\n") == 1, (args, err)
    assert not (tmp_path / "o2").exists()


def test_freeze_t0_takes_temperature_0_runs_directly(tmp_path: Path) -> None:
    """``freeze --t0 RUN...`` over a calibration made without --frozen-runs gives the frozen core that
    ``drsearch calibrate --frozen-runs`` gives; a hot run, a run over other questions, or a roster
    model without a run is one line and exit 2, nothing written."""
    answers = {0: "a0", 1: "a1", 2: "a2", 3: "a3"}
    # item 0: failed by both, also at t=0; 1: easy; 2: discriminating; 3: core, but m2 solves it at t=0
    m1 = write_model_run(tmp_path / "m1", "m1", answers, {0: 0.1, 1: 0.9, 2: 0.5, 3: 0.0})
    m2 = write_model_run(tmp_path / "m2", "m2", answers, {0: 0.3, 1: 0.6, 2: 0.2, 3: 0.4})
    t1 = write_model_run(tmp_path / "t1", "m1", answers, {0: 0.1, 1: 0.9, 2: 0.5, 3: 0.0}, temperature=0)
    t2 = write_model_run(tmp_path / "t2", "m2", answers, {0: 0.2, 1: 0.6, 2: 0.2, 3: 0.5}, temperature=0)
    plain, with_frozen = tmp_path / "plain.json", tmp_path / "frozen.json"
    for out, extra in ((plain, []), (with_frozen, ["--frozen-runs", str(t1), str(t2)])):
        rc, text = calibrate_cli("calibrate", "--questions", str(QUESTIONS), "--runs", str(m1), str(m2),
                                 "--rule", "openbiorq", "--out", str(out), *extra)
        assert rc == 0, text
    qid = [r["metadata"]["qid"] for r in ROWS]

    by_t0, by_cal = tmp_path / "by_t0", tmp_path / "by_cal"
    rc, _, err = generate("freeze", by_t0, "--calibration", str(plain), "--t0", str(t2), str(t1), sources=None)
    assert rc == 0, err
    assert (by_t0 / "frozen_core.txt").read_text() == f"{qid[0]}\n"
    recorded = json.loads((by_t0 / "frozen_core.json").read_text())
    assert recorded["frozen_core_sha256"] == hashlib.sha256(f"{qid[0]}\n".encode()).hexdigest()
    assert recorded["t0_runs"] == {"m1": str(t1), "m2": str(t2)} and recorded["count"] == 1
    rc, _, err = generate("freeze", by_cal, "--calibration", str(with_frozen), sources=None)
    assert rc == 0, err
    assert (by_cal / "frozen_core.txt").read_bytes() == (by_t0 / "frozen_core.txt").read_bytes()

    hot = write_model_run(tmp_path / "hot", "m2", answers, {0: 0.2, 1: 0.6, 2: 0.2, 3: 0.5})
    other = write_model_run(tmp_path / "other", "m2", answers, {0: 0.2, 1: 0.6, 2: 0.2, 3: 0.5}, temperature=0)
    manifest = json.loads((other / "run.json").read_text())
    (other / "run.json").write_text(json.dumps({**manifest, "questions_sha256": "e" * 64}))
    stranger = write_model_run(tmp_path / "m9", "m9", answers, {0: 0.2, 1: 0.6, 2: 0.2, 3: 0.5}, temperature=0)
    for t0, message in [
        ((t1, hot), f"{hot}: recorded at temperature 0.6; freeze --t0 needs temperature-0 runs"),
        ((t1, other), f"{other}: the run answered other questions (SHA-256 eeeeeeeeeeee…) than {plain}"),
        ((t1,), "--t0: no temperature-0 run of roster model(s) m2"),
        ((t1, t2, stranger), f"{stranger}: model 'm9' is not in the roster ['m1', 'm2']"),
        ((t1, t1), "the same run given twice"),
    ]:
        rc, _, err = generate("freeze", tmp_path / "o3", "--calibration", str(plain),
                              "--t0", *map(str, t0), sources=None)
        assert rc == 2 and message in err and err.count("\n") == 1, (t0, err)
    rc, _, err = generate("freeze", tmp_path / "o3", "--calibration", str(plain), sources=None)
    assert rc == 2 and "calibrated without temperature-0 runs; freeze needs --t0" in err
    rc, _, err = generate("difficulty", tmp_path / "o3", "--calibration", str(plain), "--t0", str(t1),
                          sources=None)
    assert rc == 2 and "--t0 is for freeze" in err
    assert not (tmp_path / "o3").exists()
