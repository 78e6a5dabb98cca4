"""``construct calibrate``: the toolkit's DR-256 tier rule over three reference-agent rollouts.

The rollouts are ordinary artefacts: ``drsearch run --preset dr256 --attempt 0|1|2`` of the
questions the shortcut audit kept, against ``drsearch serve`` of the pool's corpus with the
reviewed blocklist, graded by ``drsearch score`` (``scores.graded.jsonl``). The rule is the
generation toolkit's (:func:`drsearch.benchmark.generate.calibrate.dr256_bucket`, the one
``drsearch calibrate --rule dr256`` applies): every rollout complete, nonempty and graded,
mean turns >= 3; solved 3/3 → excluded, 1–2 → ``frontier``, 0 → ``challenge``.

Refused (exit 2, naming the run) before anything is written: an attempt missing or given
twice, a run recorded with another preset than ``dr256`` (attempt N's), rollouts of another
model, a run that answered other questions than the audit's kept ones, a run over another
corpus or with another blocklist than the audit's, grades missing an attempt or of another
answer. ``calibrate/tiers.jsonl`` has one line per kept question (tier, reason, the
rollouts' stats); every excluded question is a removal in ``candidates.jsonl`` with a reason
code (:data:`EXCLUSION_CODES`) and the rule's reason in words.

Every rollout is leak-audited too (:mod:`.leaks`, ``calibrate/leak_audit.jsonl``): a question
whose rollouts were sent an answer docid, or read their answer first in an unblocked
artifact candidate, is excluded under that code (:data:`~.leaks.LEAK_CODES`), whatever its
tier would have been; a rollout shown a blocked docid is exit 2 (served without the
audit's blocklist).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...agents.preset import DR256
from ...benchmark.generate import StageContext
from ...contract import InvalidInputError
from ...index import BlockList, sha256_file
from .leaks import LEAK_CODES, leak_audit
from .work import ANSWERS_FILE, ARTIFACTS_FILE, POOL_FILE, SHORTCUTS_FILE, read_rows, run_stage, stage_input

TIERS = ("frontier", "challenge")
_ATTEMPTS = 3  # the toolkit's DR256_ATTEMPTS (its module is imported lazily: it needs scipy)
EXCLUSION_CODES = {"solved": "solved_every_rollout", "mean turns": "too_few_turns",
                   "rollout": "incomplete_rollout", "empty final answer": "empty_answer",
                   "a rollout is not graded": "ungraded_rollout"}
"""Reason code of an excluded question, by the start of the rule's reason (longest first wins)."""


def exclusion_code(reason: str) -> str:
    """The reason code of the DR-256 rule's exclusion ``reason``."""
    for prefix in sorted(EXCLUSION_CODES, key=len, reverse=True):
        if reason.startswith(prefix):
            return EXCLUSION_CODES[prefix]
    raise ValueError(f"no reason code for {reason!r}")


def _audit_record(root: Path) -> tuple[list[str], str, str]:
    """(kept qids in audit order, corpus identity, blocklist SHA-256) of the shortcut audit."""
    shortcuts = stage_input(root, SHORTCUTS_FILE)
    kept = [line["qid"] for line in read_rows(shortcuts) if not line["removed"]]
    entry = json.loads((root / "audit" / "manifest.json").read_text(encoding="utf-8"))["stages"]["audit"]
    _, blocklist_sha256 = audit_blocklist(root)
    return kept, entry["settings"]["corpus_identity"], blocklist_sha256


def audit_blocklist(root: Path) -> tuple[Path, str]:
    """The blocklist file the shortcut audit applied and its recorded SHA-256."""
    entry = json.loads((root / "audit" / "manifest.json").read_text(encoding="utf-8"))["stages"]["audit"]
    earlier = {str((root / POOL_FILE).resolve()), str((root / ANSWERS_FILE).resolve())}
    ((path, sha),) = [(p, sha) for p, sha in entry["inputs"].items() if p not in earlier]
    return Path(path), sha


def read_audit_blocklist(root: Path) -> BlockList:
    """The audit's blocklist, as audited: InvalidInputError (exit 2) when the file is gone
    or has changed since (rerun the audit)."""
    path, sha = audit_blocklist(root)
    if not path.is_file() or sha256_file(path) != sha:
        raise InvalidInputError(f"{path}: the blocklist the shortcut audit applied is missing or changed "
                                "since (rerun `drsearch construct audit`)")
    return BlockList.from_file(path)


def rollout_leaks(root: Path, kept: list[str], runs: list[Any]) -> list[dict[str, Any]]:
    """The leak audit of the rollouts (:func:`.leaks.leak_audit`) with the pool's answers,
    answer documents, the audit's blocklist and the unblocked artifact candidates."""
    golds = {r["qid"]: r["answer"] for r in read_rows(stage_input(root, POOL_FILE))}
    answer_docids = {d for r in read_rows(stage_input(root, ANSWERS_FILE)) for d in r["answer_docids"]}
    blocked = read_audit_blocklist(root).docids
    artifacts = {r["docid"] for r in read_rows(stage_input(root, ARTIFACTS_FILE))} - set(blocked)
    return leak_audit(kept, runs, golds, answer_docids, set(blocked), artifacts)


def _attempt_of(run: Any) -> int:
    """Which dr256 attempt a run is (its recorded preset is exactly ``DR256.for_attempt(n)``)."""
    preset = run.manifest.get("preset") or {}
    for n in range(_ATTEMPTS):
        if preset == DR256.for_attempt(n).model_dump(mode="json"):
            return n
    raise InvalidInputError(f"{run.path}: recorded with preset {preset.get('name')!r}, not dr256 "
                            "(run it with `drsearch run --preset dr256 --attempt 0|1|2`)")


def load_rollouts(runs: Sequence[str | Path], grades: str | Path | None, kept: list[str],
                  corpus_identity: str, blocklist_sha256: str) -> tuple[list[Any], list[Any], Path]:
    """The three runs in attempt order, their graded records and the graded file (``grades``,
    default attempt 0's ``scores.graded.jsonl``), every refusal checked."""
    from ...benchmark import read_graded, read_run

    seen: dict[Path, str] = {}
    for r in runs:
        if not Path(r).is_dir():
            raise InvalidInputError(f"--runs {r}: no such run directory")
        key = Path(r).resolve()
        if key in seen:
            raise InvalidInputError(f"--runs {r}: the same run given twice (as {seen[key]} too)")
        seen[key] = str(r)
    read = [read_run(r) for r in runs]
    by_attempt: dict[int, Any] = {}
    for run in read:
        n = _attempt_of(run)
        if n in by_attempt:
            raise InvalidInputError(f"{run.path}: attempt {n} given twice (as {by_attempt[n].path} too)")
        by_attempt[n] = run
    if missing := [n for n in range(_ATTEMPTS) if n not in by_attempt]:
        raise InvalidInputError(f"--runs: attempt {missing[0]} is missing (run it with `drsearch run "
                                f"--preset dr256 --attempt {missing[0]}`)")
    ordered = [by_attempt[n] for n in range(_ATTEMPTS)]
    wanted = set(kept)
    for run in ordered:
        if run.manifest.get("model") != ordered[0].manifest.get("model"):
            raise InvalidInputError(f"{run.path}: model {run.manifest.get('model')!r} differs from "
                                    f"{ordered[0].path}'s {ordered[0].manifest.get('model')!r}")
        asked = set(run.manifest.get("prompt_sha256") or {}) | set(run.episodes)
        if extra := sorted(asked - wanted):
            raise InvalidInputError(f"{run.path}: answered {extra[0]}, not a question the shortcut audit "
                                    f"kept ({len(extra)} such)")
        if lacking := sorted(wanted - asked):
            raise InvalidInputError(f"{run.path}: did not answer {lacking[0]}, a question the shortcut audit "
                                    f"kept ({len(lacking)} such)")
        if run.manifest.get("corpus_identity") != corpus_identity:
            raise InvalidInputError(f"{run.path}: ran over corpus {run.manifest.get('corpus_identity')!r}, "
                                    f"not the audited corpus {corpus_identity!r}")
        if run.manifest.get("blocklist_sha256") != blocklist_sha256:
            raise InvalidInputError(f"{run.path}: ran with blocklist SHA-256 "
                                    f"{str(run.manifest.get('blocklist_sha256'))[:12]}…, not the audit's "
                                    f"({blocklist_sha256[:12]}…)")
    grades = Path(grades) if grades is not None else Path(ordered[0].path) / "scores.graded.jsonl"
    records = read_graded(grades)
    attempts = {g.attempt for g in records}
    if missing := [n for n in range(_ATTEMPTS) if n not in attempts]:
        raise InvalidInputError(f"{grades}: no grades of attempt {missing[0]} ({ordered[missing[0]].path}); "
                                "grade all three with `drsearch score`")
    if extra_attempts := sorted(a for a in attempts if a >= _ATTEMPTS):
        raise InvalidInputError(f"{grades}: grades of attempt {extra_attempts[0]}, but dr256 has three")
    return ordered, records, grades.resolve()


def tier_items(kept: list[str], runs: list[Any], records: list[Any]) -> list[dict[str, Any]]:
    """One line per kept question: the DR-256 rule's tier and reason, the rollouts' stats."""
    from ...benchmark.generate.calibrate import calibrate, dr256_bucket

    model = str(runs[0].manifest.get("model"))
    stats = calibrate(kept, {model: runs}, {model: records})
    items = []
    for qid in kept:
        s = stats[qid][model]
        tier, reason = dr256_bucket(s)
        items.append({"code": exclusion_code(reason) if reason is not None else None, "qid": qid,
                      "reason": reason, "stats": s.as_dict(), "tier": tier})
    return items


def _run(ctx: StageContext) -> None:
    s = dict(ctx.settings)
    root = Path(s["pool"])
    kept, identity, blocklist_sha256 = _audit_record(root)
    runs, records, _ = load_rollouts(s["runs"], s["grades"], kept, identity, blocklist_sha256)
    items = tier_items(kept, runs, records)
    leaks = {line["qid"]: line for line in rollout_leaks(root, kept, runs)}
    for item in items:
        leak = leaks[item["qid"]]
        if leak["code"] is not None:  # a leaked rollout measured nothing: excluded whatever its tier
            item.update(code=leak["code"], reason=leak["reason"], tier="excluded")
        if item["tier"] == "excluded":
            ctx.reject(item["qid"], item, item["code"], item["reason"])
    ctx.count_in(len(items))
    ctx.count_out(sum(item["tier"] != "excluded" for item in items))
    ctx.write_jsonl("tiers.jsonl", items)
    ctx.write_jsonl("leak_audit.jsonl", [leaks[q] for q in kept])
    tiers = {t: sum(item["tier"] == t for item in items) for t in (*TIERS, "excluded")}
    codes = sorted({*EXCLUSION_CODES.values(), *LEAK_CODES})
    ctx.write_json("facts.json", {"questions": len(items), **tiers,
                                  "excluded_by_code": {c: sum(item["code"] == c for item in items)
                                                       for c in codes},
                                  "rollouts_leak_audited": sum(r.get("episode", True) is not None
                                                               for line in leaks.values()
                                                               for r in line["rollouts"])})


def calibrate_tiers(pool: str | Path, runs: Sequence[str | Path],
                    grades: str | Path | None = None) -> dict[str, Any]:
    """Write ``POOL/calibrate/tiers.jsonl``; returns the stage's record. ``runs``: the three
    rollout directories (any order); ``grades``: their graded records (default: attempt 0's
    ``scores.graded.jsonl``)."""
    root = Path(pool)
    kept, identity, blocklist_sha256 = _audit_record(root)
    ordered, records, graded = load_rollouts(runs, grades, kept, identity, blocklist_sha256)
    tier_items(kept, ordered, records)  # grades of another answer: refused before the stage touches POOL/
    rollout_leaks(root, kept, ordered)  # so is a rollout shown a blocked docid
    inputs = (stage_input(root, SHORTCUTS_FILE), (root / "audit" / "manifest.json").resolve(),
              stage_input(root, ARTIFACTS_FILE),
              *[(Path(r.path) / name).resolve() for r in ordered
                for name in ("run.json", "trajectories.jsonl") if (Path(r.path) / name).is_file()], graded)
    settings = {"attempts": _ATTEMPTS, "blocklist_sha256": blocklist_sha256, "corpus_identity": identity,
                "grades": str(graded), "min_turns": 3.0, "model": ordered[0].manifest.get("model"),
                "pool": str(root.resolve()), "preset": DR256.name, "rule": "dr256",
                "runs": [str(Path(r.path).resolve()) for r in ordered]}
    return run_stage(pool, "calibrate", _run, inputs=inputs,
                     outputs=("tiers.jsonl", "leak_audit.jsonl", "facts.json"), settings=settings)


__all__ = ["EXCLUSION_CODES", "TIERS", "audit_blocklist", "calibrate_tiers", "exclusion_code",
           "load_rollouts", "read_audit_blocklist", "rollout_leaks", "tier_items"]
