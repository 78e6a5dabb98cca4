"""``construct select``: the seeded per-tier sample of the calibrated pool, assembled into a release.

From ``POOL/calibrate/tiers.jsonl`` the questions retained in each tier (``frontier``,
``challenge``; qid order) are sampled: ``random.Random("drsearch-select:SEED:TIER")``
draws ``per_tier`` of each, then ``random.Random("drsearch-select:SEED")`` shuffles the
drawn rows together and their positions are ``benchmark.index`` 0..2·per_tier−1 (so the
index says nothing about the tier). The rows are DR-256 rows
(:func:`.questions.question_row`) with:

- ``calibration_tier``: the question's tier;
- ``selection_bucket``: the stratum the row was drawn from and how:
  ``"TIER:seed=S:drawn=N/M"`` (N of the tier's M retained questions, seed S);
- ``base_pilot``: the reference agent's calibration behaviour on the question:
  ``{"model", "preset", "attempts", "solved", "outcomes", "statuses", "mean_turns"}`` of its
  three rollouts;
- the prompt rendered from the prompt template, which must give every selected question
  exactly the prompt its rollouts were sent (``prompt_sha256`` in each run's ``run.json``;
  exit 2 otherwise: the tier was measured with another prompt).

The stage's own outputs are ``POOL/select/questions.jsonl`` and ``selection.jsonl`` (every
calibrated question: tier, the calibration's reason code, selected or not, index). Then
the release is assembled (:func:`drsearch.release.assemble_release`) from the crawl's
documents (deduplicated as ``corpus build`` does; the built corpus must have the audited
corpus's content identity, exit 2 otherwise), the questions and the audit's blocklist,
with the construction evidence beside it::

    RELEASE/selection/summary.json     every stage's counts (consolidate … calibrate, select)
    RELEASE/selection/tiers.jsonl      the calibration's tiers, reasons and rollout stats
    RELEASE/selection/selection.jsonl  which retained questions were drawn, at which index
    RELEASE/selection/removals.jsonl   every removal of every stage: stage, key, reason code, reason
    RELEASE/audit/crawl_coverage.json  the corpus build's coverage summary and the crawl's fetch counts
    RELEASE/audit/robots.jsonl         each URL's robots decision and fetch outcome
    RELEASE/audit/shortcuts.jsonl      the shortcut audit's probes
    RELEASE/audit/leak_audit.jsonl     the rollouts' leak audit
    RELEASE/baselines/                 the calibration rollouts and their grades (.baselines)
    RELEASE/README.md, TERMS.md        from the completed templates given (release.documents)

and the manifest rewritten to inventory them. The paths those records hold are written
relative to the construction's work directory (``.portable``), so the same recipe run
anywhere gives the same release bytes. The release is written to a sibling
directory and renamed into place only after ``validate --deep`` passes, so a failure leaves
no half release. Refused, with nothing written: a tier with fewer retained questions than
``per_tier`` (exit 1 with the counts) unless ``allow_short`` (then all of them are taken);
a calibration older than the audit or the rollouts it read (exit 2: rerun it).
"""

from __future__ import annotations

import contextlib
import json
import random
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from ...benchmark.generate import StageContext
from ...contract import DrsearchError, InvalidInputError
from ...corpus import COVERAGE_FILE, read_records
from ...corpus.dedup import deduplicate, read_lines
from ...corpus.pipeline import DOCS_FILE, default_crawl_dir
from ...index import Engine, sha256_file
from ..assemble import assemble_release
from ..documents import ReleaseDocuments
from ..manifest import manifest_json, write_release_manifest
from ..validate import validate_release
from .baselines import write_baselines
from .calibrate import TIERS, audit_blocklist, read_audit_blocklist
from .portable import portable
from .questions import DEFAULT_TEMPLATE, prompt_sha256, question_row, read_template, render
from .work import (
    ANSWERS_FILE,
    POOL_FILE,
    SHORTCUTS_FILE,
    STAGE_ORDER,
    SUMMARY,
    read_rows,
    run_stage,
    stage_input,
)

TIERS_FILE = "calibrate/tiers.jsonl"
LEAKS_FILE = "calibrate/leak_audit.jsonl"


class ShortTierError(DrsearchError):
    """A tier has fewer retained questions than the selection asks for (exit 1)."""

    exit_code = 1
    error_type = "short_tier"


def _calibration(root: Path) -> dict[str, Any]:
    """The calibrate stage's manifest entry, refused (exit 2) when any input it read has
    changed since it ran (the audit, the rollouts, the grades)."""
    tiers = stage_input(root, TIERS_FILE)
    manifest = json.loads((tiers.parent / "manifest.json").read_text(encoding="utf-8"))
    entry: dict[str, Any] = manifest["stages"]["calibrate"]
    for path, sha in sorted(entry["inputs"].items()):
        if not Path(path).is_file() or sha256_file(path) != sha:
            raise InvalidInputError(f"{root / 'calibrate'}: stale: {path} changed since the calibration ran "
                                    "(rerun `drsearch construct calibrate`)")
    return entry


def _prompts(root: Path, template: list[dict[str, str]], qids: list[str], runs: list[str]) -> dict[str, Any]:
    """Each question's rendered prompt, checked against what every rollout was sent."""
    pool = {r["qid"]: r for r in read_rows(stage_input(root, POOL_FILE))}
    prompts = {q: render(template, pool[q]["question"]) for q in qids}
    for run in runs:
        sent = json.loads((Path(run) / "run.json").read_text(encoding="utf-8")).get("prompt_sha256") or {}
        for q in qids:
            if sent.get(q) != prompt_sha256(prompts[q]):
                raise InvalidInputError(f"--prompt-template: {q}'s prompt is not the one its calibration "
                                        f"rollout {run} was sent (prompt_sha256); select with the template "
                                        "the "
                                        "rollouts' questions file was made with")
    return prompts


def draw(retained: dict[str, list[str]], per_tier: int, seed: int) -> list[tuple[str, str]]:
    """The selection: (tier, qid) in benchmark index order (see the module doc)."""
    drawn: list[tuple[str, str]] = []
    for tier in TIERS:
        pool = sorted(retained.get(tier, []))
        rng = random.Random(f"drsearch-select:{seed}:{tier}")
        drawn += [(tier, q) for q in rng.sample(pool, min(per_tier, len(pool)))]
    random.Random(f"drsearch-select:{seed}").shuffle(drawn)
    return drawn


def _pilot(item: dict[str, Any], model: str) -> dict[str, Any]:
    s = item["stats"]
    return {"attempts": s["attempts"], "mean_turns": s["mean_turns"], "model": model,
            "outcomes": s["outcomes"], "preset": "dr256", "solved": s["solved"], "statuses": s["statuses"]}


def _run(ctx: StageContext) -> None:
    s = ctx.settings
    root = Path(s["pool"])
    items = read_rows(Path(ctx.stage.inputs[0]))
    pool = {r["qid"]: r for r in read_rows(stage_input(root, POOL_FILE))}
    answers = {r["qid"]: r["answer_docids"] for r in read_rows(stage_input(root, ANSWERS_FILE))}
    retained = {t: [i["qid"] for i in items if i["tier"] == t] for t in TIERS}
    drawn = draw(retained, s["per_tier"], s["seed"])
    prompts = _prompts(root, read_template(ctx.stage.inputs[-1]), [q for _, q in drawn], s["runs"])
    count = {t: sum(tier == t for tier, _ in drawn) for t in TIERS}
    by_qid = {i["qid"]: i for i in items}
    rows = [question_row(pool[q], answers[q], prompts[q], index=n, tier=tier,
                         bucket=f"{tier}:seed={s['seed']}:drawn={count[tier]}/{len(retained[tier])}",
                         pilot=_pilot(by_qid[q], s["model"]))
            for n, (tier, q) in enumerate(drawn)]
    index = {q: n for n, (_, q) in enumerate(drawn)}
    selection = [{"code": i["code"], "index": index.get(i["qid"]), "qid": i["qid"],
                  "selected": i["qid"] in index, "tier": i["tier"]} for i in items]
    ctx.count_in(sum(len(v) for v in retained.values()))
    ctx.count_out(len(rows))
    ctx.write_jsonl("questions.jsonl", rows)
    ctx.write_jsonl("selection.jsonl", selection)
    ctx.write_json("facts.json", {"per_tier": s["per_tier"], "questions": len(rows), "seed": s["seed"],
                                  "allow_short": s["allow_short"],
                                  "tiers": {t: {"drawn": count[t], "retained": len(retained[t])}
                                            for t in TIERS}})


def _removals(root: Path) -> list[dict[str, Any]]:
    out = []
    for stage in STAGE_ORDER:
        path = root / stage / "candidates.jsonl"
        if path.is_file():
            out += [{"check": r["check"], "key": r["key"], "reason": r["reason"], "stage": stage}
                    for r in read_rows(path)]
    return out


def _robots(crawl: Path) -> list[dict[str, Any]]:
    """Each URL's robots decision and fetch outcome, in canonical URL order (the crawl keeps its
    records in fetch-completion order, which concurrency makes differ between runs)."""
    records = sorted(read_records(crawl).records, key=lambda r: r.canonical_url)
    return [{"canonical_url": r.canonical_url, "error": r.error, "outcome": r.outcome, "robots": r.robots,
             "status": r.status, "url": r.url} for r in records]


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")


def _evidence(root: Path, release: Path, crawl: Path, database: Path) -> None:
    """The selection/ and audit/ folders of the release (see the module doc)."""
    (release / "selection").mkdir()
    (release / "audit").mkdir()
    summary = json.loads((root / SUMMARY).read_text(encoding="utf-8"))
    base = str(root.resolve().parent)
    (release / "selection" / "summary.json").write_bytes(manifest_json(portable(summary, base)))
    shutil.copyfile(root / TIERS_FILE, release / "selection" / "tiers.jsonl")
    shutil.copyfile(root / "select" / "selection.jsonl", release / "selection" / "selection.jsonl")
    _write_jsonl(release / "selection" / "removals.jsonl", _removals(root))
    coverage_file = database.parent / COVERAGE_FILE
    fetch_file = crawl / "fetch_summary.json"
    def read(path: Path) -> Any:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None

    coverage = {"corpus_coverage": read(coverage_file), "fetch_summary": read(fetch_file)}
    (release / "audit" / "crawl_coverage.json").write_bytes(manifest_json(coverage))
    _write_jsonl(release / "audit" / "robots.jsonl", _robots(crawl))
    shutil.copyfile(root / SHORTCUTS_FILE, release / "audit" / "shortcuts.jsonl")
    shutil.copyfile(root / LEAKS_FILE, release / "audit" / "leak_audit.jsonl")


def select_release(pool: str | Path, out: str | Path, *, per_tier: int, seed: int,
                   template: str | Path | None = None, allow_short: bool = False,
                   name: str = "drsearch-construct", revision: str = "1.0.0",
                   crawl: str | Path | None = None,
                   documents: ReleaseDocuments | None = None) -> dict[str, Any]:
    """Select and assemble the release ``out`` (see the module doc); returns the select
    stage's record plus ``release`` (its manifest counts) and ``validation`` (the deep
    validation's verdict). ``crawl``: the crawl directory of the audited corpus (default
    the one ``corpus build --urls`` keeps beside it). ``documents``: the release's README.md
    and TERMS.md (``assemble_release``'s; checked before anything is written)."""
    root = Path(pool)
    dest = Path(out)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise InvalidInputError(f"{dest} exists and is not an empty directory")
    if not dest.parent.is_dir():
        raise InvalidInputError(f"directory {dest.parent} does not exist (create it first)")
    source = Path(template) if template is not None else DEFAULT_TEMPLATE
    read_template(source)
    if documents is not None:
        documents.check()
    calibration = _calibration(root)
    settings = calibration["settings"]
    items = read_rows(root / TIERS_FILE)
    retained = {t: [i["qid"] for i in items if i["tier"] == t] for t in TIERS}
    short = [t for t in TIERS if len(retained[t]) < per_tier]
    counts = ", ".join(f"{t} {len(retained[t])}" for t in TIERS)
    if short and not allow_short:
        raise ShortTierError(f"--per-tier {per_tier}: tier {short[0]} has only {len(retained[short[0]])} "
                             f"retained question(s) ({counts}); nothing written (--allow-short takes what "
                             "there is)")
    if not any(retained.values()):
        raise ShortTierError(f"no retained question in any tier ({counts}); nothing to select")
    _prompts(root, read_template(source), [q for _, q in draw(retained, per_tier, seed)], settings["runs"])
    audit_manifest = json.loads((root / "audit" / "manifest.json").read_text(encoding="utf-8"))
    audit = audit_manifest["stages"]["audit"]["settings"]
    database = Path(audit["database"])
    crawl_dir = Path(crawl) if crawl is not None else default_crawl_dir(database)
    if not (crawl_dir / DOCS_FILE).is_file():
        raise InvalidInputError(f"{crawl_dir / DOCS_FILE}: missing (the crawl's documents; --crawl-dir names "
                                "the crawl directory of the audited corpus)")
    blocked, _ = audit_blocklist(root)
    read_audit_blocklist(root)
    inputs = (stage_input(root, TIERS_FILE), stage_input(root, LEAKS_FILE), stage_input(root, POOL_FILE),
              stage_input(root, ANSWERS_FILE), source.resolve())
    record = run_stage(pool, "select", _run, inputs=inputs, outputs=("questions.jsonl", "selection.jsonl",
                                                                    "facts.json"),
                       settings={"allow_short": allow_short, "model": settings["model"], "per_tier": per_tier,
                                 "pool": str(root.resolve()), "runs": settings["runs"], "seed": seed})
    partial = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        docs = partial.parent / f"{partial.name}.docs" / DOCS_FILE
        docs.parent.mkdir()
        _write_jsonl(docs, deduplicate(read_lines(crawl_dir / DOCS_FILE)).documents)
        manifest = assemble_release(partial, docs, root / "select" / "questions.jsonl", blocked, name=name,
                                    revision=revision, documents=documents)
        shutil.rmtree(docs.parent)
        with Engine.open(partial / "search" / "corpus.sqlite3", release_blocklist="ignore") as engine:
            identity = engine.meta["content_identity"]
        if identity != audit["corpus_identity"]:
            raise InvalidInputError(f"{crawl_dir / DOCS_FILE}: builds corpus {identity}, not the audited "
                                    f"corpus {audit['corpus_identity']} ({database}); --crawl-dir names its "
                                    "crawl")
        _evidence(root, partial, crawl_dir, database)
        write_baselines(partial, settings["runs"], settings.get("grades"), base=str(root.resolve().parent))
        manifest = write_release_manifest(partial, name, revision)
        report = validate_release(partial, deep=True)
        if not report.ok():
            failed = next(c for c in report.checks if c.status == "FAIL")
            raise DrsearchError(f"the selected release fails validate --deep: {failed.name}: "
                                f"{failed.message}")
        if dest.exists():
            dest.rmdir()
        partial.rename(dest)
    finally:
        with contextlib.suppress(OSError):
            shutil.rmtree(partial.parent / f"{partial.name}.docs")
        if partial.exists():
            shutil.rmtree(partial, ignore_errors=True)
    return {**record, "release": manifest.counts, "validation": "PASS", "tiers": dict(Counter(
        r["tier"] for r in read_rows(root / "select" / "selection.jsonl") if r["selected"]))}


__all__ = ["ShortTierError", "draw", "select_release"]
