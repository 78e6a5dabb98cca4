"""``drsearch calibrate``: difficulty buckets from graded rollouts (docs/GENERATE.md, "Calibration").

::

    drsearch calibrate --questions Q --runs A0 A1 A2 --rule dr256 --out calibration.json
    drsearch calibrate --questions Q --runs ROOT --rule drbencher-v2        (ROOT/attempt-N/ runs)
    drsearch calibrate --questions Q --runs M1 M2 M3 --rule openbiorq [--frozen-runs T1 T2 T3]

Every run directory must have been graded by ``drsearch score`` first: the grades are read
from ``--grades`` or by default from ``scores.graded.jsonl`` in ROOT (the ``attempt-N/``
layout), in the first attempt's directory (``--runs A0 A1 …``, graded as
``drsearch score A0 --attempts A1 …``), or, for ``openbiorq``, in each roster run.
Everything is checked before anything is written; bad input is one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..contract import InvalidInputError, canonical_json
from .argtypes import fraction, int_in

if TYPE_CHECKING:
    from ..benchmark import GradedQuestion, RunEpisodes

ATTEMPT_DIR = re.compile(r"attempt-(\d+)")
_RULES = ("dr256", "drbencher-v1", "drbencher-v2", "openbiorq")


def attempt_dirs(runs: list[Path]) -> tuple[list[Path], Path]:
    """One model's attempt directories and where their grades are by default.

    ``runs`` is either several run directories (attempt 0, 1, …: grades in the first) or one
    directory of ``attempt-0/`` … ``attempt-(k-1)/`` runs (grades in it).
    """
    if len(runs) == 1 and runs[0].is_dir() and not (runs[0] / "run.json").exists():
        root = runs[0]
        numbered = sorted((int(m.group(1)), p) for p in root.iterdir()
                          if p.is_dir() and (m := ATTEMPT_DIR.fullmatch(p.name)))
        if not numbered:
            raise InvalidInputError(f"--runs {root}: not a run directory (no run.json, no attempt-N/ runs)")
        if [n for n, _ in numbered] != list(range(len(numbered))):
            names = ", ".join(p.name for _, p in numbered)
            raise InvalidInputError(f"--runs {root}: attempt directories must be attempt-0 … "
                                    f"attempt-{len(numbered) - 1}, found {names}")
        return [p for _, p in numbered], root
    return runs, runs[0]


def _read_runs(dirs: list[Path], what: str) -> list[RunEpisodes]:
    from ..benchmark import read_run

    seen: dict[Path, Path] = {}
    for d in dirs:
        if not d.is_dir():
            raise InvalidInputError(f"{what} {d}: no such run directory")
        if (first := seen.setdefault(d.resolve(), d)) is not d:
            raise InvalidInputError(f"{what} {d}: the same run given twice (as {first} too)")
    return [read_run(d) for d in dirs]


def _check_same_setting(runs: list[RunEpisodes], questions_sha256: str, questions: Path) -> None:
    """Every run answered ``questions`` over one corpus with one blocklist."""
    first = runs[0]
    for run in runs:
        recorded = run.manifest.get("questions_sha256")
        if recorded != questions_sha256:
            raise InvalidInputError(f"{run.path}: the run answered another questions file (SHA-256 "
                                    f"{str(recorded)[:12]}…) than {questions} ({questions_sha256[:12]}…)")
        for field in ("corpus_identity", "blocklist_sha256"):
            if run.manifest.get(field) != first.manifest.get(field):
                raise InvalidInputError(f"{run.path}: {field} {run.manifest.get(field)!r} differs from "
                                        f"{first.path}'s {first.manifest.get(field)!r}")


def _grades(path: Path, runs: list[RunEpisodes]) -> list[GradedQuestion]:
    """The graded records of ``runs`` (attempt i = runs[i]) from ``path``."""
    from ..benchmark import read_graded
    from .score_cli import graded_path

    records = read_graded(graded_path(path))
    attempts = {g.attempt for g in records}
    if missing := [i for i in range(len(runs)) if i not in attempts]:
        raise InvalidInputError(f"{graded_path(path)}: no grades of attempt {missing[0]} "
                                f"({runs[missing[0]].path}); "
                                f"grade all {len(runs)} attempt(s) with `drsearch score`")
    if extra := sorted(a for a in attempts if a >= len(runs)):
        raise InvalidInputError(f"{graded_path(path)}: grades of attempt {extra[0]}, but only {len(runs)} "
                                "run(s) given")
    return records


def _check_closed_book(rule: str, runs: list[RunEpisodes]) -> None:
    """drbencher-v1 is closed-book: a run whose preset lists tools is not one."""
    for run in runs:
        tools = (run.manifest.get("preset") or {}).get("tools")
        if rule == "drbencher-v1" and tools not in (None, []):
            raise InvalidInputError(f"{run.path}: drbencher-v1 needs closed-book runs (preset tools []), "
                                    f"this one had {tools}")
        if rule == "drbencher-v2" and tools == []:
            raise InvalidInputError(f"{run.path}: drbencher-v2 needs tool-augmented runs, this one was "
                                    "closed-book")


def _model(run: RunEpisodes) -> str:
    model = run.manifest.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidInputError(f"{run.path}/run.json: no model recorded")
    return model


def cmd_calibrate(args: argparse.Namespace, out: TextIO) -> int:
    # the grading extra (Wilson intervals): without it, one line before any work
    import scipy  # type: ignore[import-untyped]  # noqa: F401

    from ..agents.questions import read_questions
    from ..benchmark.generate.calibrate import (
        DR256_ATTEMPTS,
        DR256_MIN_TURNS,
        bucket_counts,
        calibrate,
        dr256_bucket,
        drbencher_bucket,
        frozen_core,
        openbiorq_bucket,
        wilson_table,
    )
    from ..contract.atomic import write_json_atomic

    rule: str = args.rule
    if rule not in _RULES:
        raise InvalidInputError(f"--rule {rule!r}: unknown rule (expected one of {', '.join(_RULES)})")
    out_path: Path = args.out
    if out_path.is_dir() or not out_path.parent.is_dir():
        raise InvalidInputError(f"--out {out_path}: needs a file path in an existing directory")
    if rule != "openbiorq" and args.frozen_runs:
        raise InvalidInputError("--frozen-runs is for --rule openbiorq")
    questions, questions_sha256 = read_questions(args.questions)
    qids = [q.qid for q in sorted(questions, key=lambda q: (q.index, q.qid))]
    index_of = {q.qid: q.index for q in questions}

    runs_by_model: dict[str, list[RunEpisodes]] = {}
    grades: dict[str, list[GradedQuestion]] = {}
    grade_files: dict[str, str] = {}
    settings: dict[str, Any] = {}
    if rule == "openbiorq":
        runs = _read_runs(list(args.runs), "--runs")
        if args.grades and len(args.grades) != len(runs):
            raise InvalidInputError(f"--grades: give one per roster run ({len(runs)}), "
                                    f"got {len(args.grades)}")
        for i, run in enumerate(runs):
            model = _model(run)
            if model in runs_by_model:
                raise InvalidInputError(f"{run.path}: model {model!r} is in the roster twice")
            runs_by_model[model] = [run]
            path = args.grades[i] if args.grades else run.path
            grades[model] = _grades(path, [run])
            grade_files[model] = str(path)
        all_runs = list(runs)
        settings["threshold"] = args.threshold
    else:
        dirs, default_grades = attempt_dirs(list(args.runs))
        runs = _read_runs(dirs, "--runs")
        expected = DR256_ATTEMPTS if rule == "dr256" else args.k
        if len(runs) != expected:
            hint = "" if rule == "dr256" else f" (or pass --k {len(runs)})"
            raise InvalidInputError(f"--rule {rule} needs {expected} attempt runs, got {len(runs)}{hint}")
        models = {_model(r) for r in runs}
        if len(models) != 1:
            raise InvalidInputError("--runs: the attempts are of different models "
                                    f"({', '.join(sorted(models))})")
        if len(args.grades or ()) > 1:
            raise InvalidInputError("--grades: one graded file for all attempts of the model")
        _check_closed_book(rule, runs)
        (model,) = models
        runs_by_model[model] = runs
        path = args.grades[0] if args.grades else default_grades
        grades[model] = _grades(path, runs)
        grade_files[model] = str(path)
        all_runs = list(runs)
        settings.update({"k": len(runs), "tau": args.tau} if rule != "dr256"
                        else {"min_turns": DR256_MIN_TURNS})
        seeds = {json.dumps((r.manifest.get("preset") or {}).get("seed_base")) for r in runs}
        if len(seeds) == 1 and len(runs) > 1:
            raise InvalidInputError(f"--runs: the {len(runs)} attempts ran with the same seeds "
                                    f"(seed_base {seeds.pop()}): run them with --attempt 0, 1, …")

    frozen_by_model: dict[str, list[RunEpisodes]] = {}
    frozen_grades: dict[str, list[GradedQuestion]] = {}
    if args.frozen_runs:
        frozen = _read_runs(list(args.frozen_runs), "--frozen-runs")
        for run in frozen:
            model = _model(run)
            if (run.manifest.get("preset") or {}).get("temperature") != 0:
                raise InvalidInputError(f"{run.path}: a frozen-core run must be at temperature 0, its preset "
                                        f"has {(run.manifest.get('preset') or {}).get('temperature')!r}")
            if model in frozen_by_model:
                raise InvalidInputError(f"{run.path}: model {model!r} given twice in --frozen-runs")
            frozen_by_model[model] = [run]
            frozen_grades[model] = _grades(run.path, [run])
        if set(frozen_by_model) != set(runs_by_model):
            raise InvalidInputError(f"--frozen-runs: models {sorted(frozen_by_model)} are not the roster "
                                    f"{sorted(runs_by_model)}")
        all_runs += frozen
    _check_same_setting(all_runs, questions_sha256, args.questions)

    stats = calibrate(qids, runs_by_model, grades)
    frozen_stats = calibrate(qids, frozen_by_model, frozen_grades) if frozen_by_model else None
    items: list[dict[str, Any]] = []
    for qid in qids:
        by_model = stats[qid]
        if rule == "dr256":
            bucket, reason = dr256_bucket(next(iter(by_model.values())))
        elif rule == "openbiorq":
            bucket, reason = openbiorq_bucket(by_model, threshold=args.threshold)
        else:
            bucket, reason = drbencher_bucket(next(iter(by_model.values())), tau=args.tau)
        item: dict[str, Any] = {"bucket": bucket, "index": index_of[qid],
                                "models": {m: s.as_dict() for m, s in sorted(by_model.items())},
                                "qid": qid, "reason": reason}
        if rule == "openbiorq":
            item["frozen_core"] = None if frozen_stats is None or bucket != "core" else \
                frozen_core(frozen_stats[qid], threshold=args.threshold)
        items.append(item)
    counts = bucket_counts(rule, [i["bucket"] for i in items])
    if rule == "openbiorq" and frozen_stats is not None:
        counts["frozen_core"] = sum(1 for i in items if i["frozen_core"])
    first = all_runs[0].manifest
    report = {
        "blocklist_sha256": first.get("blocklist_sha256"), "corpus_identity": first.get("corpus_identity"),
        "counts": counts, "grades": grade_files, "intervals": wilson_table(counts), "items": items,
        "questions": str(args.questions), "questions_sha256": questions_sha256, "rule": rule,
        "runs": {m: [str(r.path) for r in rs] for m, rs in sorted(runs_by_model.items())},
        "frozen_runs": {m: [str(r.path) for r in rs] for m, rs in sorted(frozen_by_model.items())} or None,
        "settings": settings}
    write_json_atomic(out_path, report)
    if args.json:  # the file just written, as one line
        print(canonical_json(report), file=out)
        return 0
    _print_counts(report, out)
    print(f"wrote {out_path}", file=out)
    return 0


def _print_counts(report: dict[str, Any], out: TextIO) -> None:
    intervals = report["intervals"]
    n = sum(report["counts"][b] for b in intervals)
    print(f"{report['rule']}: {n} items", file=out)
    for bucket, row in intervals.items():
        low, high = row["ci95"]
        print(f"{bucket:>16} {row['count']:>5}  {row['rate']:6.1%}  95% Wilson [{low:.3f}, {high:.3f}]",
              file=out)
    if "frozen_core" in report["counts"]:
        print(f"{'frozen_core':>16} {report['counts']['frozen_core']:>5}  (core items failed by every "
              "roster model at temperature 0)", file=out)






def register(sub: Any) -> None:
    """Add the ``calibrate`` verb to the CLI's subparsers."""
    p = sub.add_parser("calibrate", help="difficulty tiers of questions from graded rollouts, by a rule "
                                         "(dr256, drbencher, openbiorq; docs/GENERATE.md)")
    p.add_argument("--questions", required=True, type=Path, metavar="Q.jsonl",
                   help="the questions the runs answered")
    p.add_argument("--runs", required=True, nargs="+", type=Path, metavar="DIR",
                   help="one model's attempts (A0 A1 … or a directory of attempt-N/); openbiorq: one run "
                        "per roster model")
    p.add_argument("--rule", required=True, metavar="RULE", help=f"one of {', '.join(_RULES)}")
    p.add_argument("--out", required=True, type=Path, metavar="FILE", help="calibration.json to write")
    p.add_argument("--json", action="store_true",
                   help="print calibration.json (one line) instead of the table")
    p.add_argument("--grades", nargs="+", type=Path, metavar="FILE",
                   help="graded files (scores.json / .graded.jsonl / run dir) instead of the defaults")
    p.add_argument("--k", type=int_in(1), default=10, help="drbencher: attempts per item (default 10)")
    p.add_argument("--tau", type=fraction, default=0.5,
                   help="drbencher: discard when accuracy > tau (default 0.5)")
    p.add_argument("--threshold", type=fraction, default=0.5,
                   help="openbiorq: solved when checklist score >= threshold (default 0.5)")
    p.add_argument("--frozen-runs", nargs="+", type=Path, metavar="DIR",
                   help="openbiorq: each roster model's run at temperature 0 (frozen core)")
    p.set_defaults(handler=cmd_calibrate)
