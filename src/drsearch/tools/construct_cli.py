"""The construction verbs: ``drsearch construct
consolidate|urls|answers|artifacts|audit|questions|calibrate|select`` (docs/CONSTRUCT.md).

``register(sub)`` adds ``construct`` to the main parser (cli.py calls it). Each action runs
one stage of :mod:`drsearch.release.construct` into ``POOL/<stage>/`` and prints one summary
line (``--json``: the stage's counts and facts). Handlers follow cli.py's contract: an exit
code, DrsearchError for bad input (exit 2, one line on stderr).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from ..contract import canonical_json
from .argtypes import int_in
from .release_cli import add_document_options, release_documents, warn_without_documents

# drsearch.release.construct stands on the generators' pipeline machinery, which imports the
# agents extra (httpx): each command imports it, so that registering them needs no extra.


def _facts(pool: str, stage: str) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((Path(pool) / stage / "facts.json").read_text(encoding="utf-8"))
    return facts


def _report(args: argparse.Namespace, out: TextIO, stage: str, record: dict[str, Any], line: str,
            extra: dict[str, Any] | None = None) -> int:
    facts = _facts(args.pool, stage)
    if args.json:
        print(canonical_json({"counts": record["counts"], "facts": facts, "ran": record["ran"],
                              "stage": stage, **(extra or {})}), file=out)
        return 0
    removed = record["counts"]["rejected"]
    why = "; removed: " + ", ".join(f"{n} {code}" for code, n in removed.items()) if removed else ""
    state = "" if record["ran"] else " (up to date: nothing rerun)"
    print(f"construct {stage}{state}: {line.format(**facts)}{why}", file=out)
    return 0


def cmd_consolidate(args: argparse.Namespace, out: TextIO) -> int:
    from ..release.construct import consolidate, field_map

    record = consolidate(args.upstream, args.pool, field_map(args.map or []))
    return _report(args, out, "consolidate", record,
                   "{rows} rows -> {groups} question groups ({merged_rows} rows merged), "
                   "{conflicts} with conflicting labels, {kept} in the pool")


def cmd_urls(args: argparse.Namespace, out: TextIO) -> int:
    from ..release.construct import collect_urls

    record = collect_urls(args.pool)
    return _report(args, out, "urls", record,
                   "{urls_given} visited URLs of {questions} questions -> {distinct_urls} distinct canonical "
                   "URLs in urls.txt ({invalid_urls} invalid)")


def cmd_answers(args: argparse.Namespace, out: TextIO) -> int:
    from ..release.construct import find_answers

    record = find_answers(args.pool, args.database)
    return _report(args, out, "answers", record,
                   "{with_answer_doc} of {questions} questions have an independent answer document "
                   "({answer_docids} answer docids; {provenance_urls_not_in_corpus} of {provenance_urls} "
                   "provenance URLs not in the corpus)")


def cmd_artifacts(args: argparse.Namespace, out: TextIO) -> int:
    from ..release.construct import URL_PATTERNS, check_blocklist, find_artifacts, read_url_patterns

    patterns = read_url_patterns(args.url_patterns) if args.url_patterns else URL_PATTERNS
    record = find_artifacts(args.pool, args.database, url_patterns=patterns)
    review = check_blocklist(args.pool, args.blocked_docids) if args.blocked_docids else None
    code = _report(args, out, "artifacts", record,
                   "{flagged} leak-artifact candidates among {documents} documents "
                   "({text_candidates_scanned} scanned for questions and answers)",
                   {"blocklist": review} if review is not None else None)
    if review is not None and not args.json:
        print(f"blocklist {args.blocked_docids}: {review['blocked']} docids, blocks "
              f"{review['candidates_blocked']} of {review['candidates']} candidates, no answer document",
              file=out)
    return code


def cmd_audit(args: argparse.Namespace, out: TextIO) -> int:
    from ..release.construct import audit_shortcuts

    settings = {name: getattr(args, name) for name in ("snippet_k", "queries", "open_top", "single_rank")}
    record = audit_shortcuts(args.pool, args.database, args.blocked_docids, **settings)
    return _report(args, out, "audit", record, "{kept} of {questions} questions pass the shortcut probes")


def cmd_calibrate(args: argparse.Namespace, out: TextIO) -> int:
    # the grading extra (the toolkit's calibration module): without it, one line before any work
    import scipy  # type: ignore[import-untyped]  # noqa: F401

    from ..release.construct import calibrate_tiers
    from .score_cli import graded_path

    grades = graded_path(Path(args.grades)) if args.grades else None
    record = calibrate_tiers(args.pool, args.runs, grades)
    return _report(args, out, "calibrate", record,
                   "{questions} questions -> {frontier} frontier, {challenge} challenge, {excluded} excluded "
                   "(DR-256 rule over 3 rollouts)")


def cmd_questions(args: argparse.Namespace, out: TextIO) -> int:
    from ..release.construct import write_kept_questions

    record = write_kept_questions(args.pool, args.prompt_template)
    return _report(args, out, "questions", record,
                   "{questions} questions the audit kept -> questions/kept.jsonl (uncalibrated; what the "
                   "calibration rollouts answer)")


def cmd_select(args: argparse.Namespace, out: TextIO) -> int:
    from ..release.construct import select_release

    documents = release_documents(args)
    record = select_release(args.pool, args.out, per_tier=args.per_tier, seed=args.seed,
                            template=args.prompt_template, allow_short=args.allow_short, name=args.name,
                            revision=args.revision, crawl=args.crawl_dir, documents=documents)
    warn_without_documents(documents)
    facts = _facts(args.pool, "select")
    if args.json:
        print(canonical_json({"counts": record["counts"], "facts": facts, "ran": record["ran"],
                              "stage": "select", "release": record["release"], "out": str(args.out),
                              "validation": record["validation"]}), file=out)
        return 0
    tiers = ", ".join(f"{v['drawn']} of {v['retained']} {t}" for t, v in facts["tiers"].items())
    print(f"construct select: {facts['questions']} questions ({tiers}; seed {facts['seed']}) -> release "
          f"{args.out}: {record['release']['documents']} documents, "
          f"{record['release']['blocked_docids']} blocked; "
          "validate --deep: PASS", file=out)
    return 0


def register(sub: Any) -> None:
    """Add ``construct consolidate|urls|answers|artifacts|audit|questions|calibrate|select`` to the
    CLI's subparsers."""
    construct = sub.add_parser("construct", help="build a release's inputs from an upstream pool "
                                                 "(docs/CONSTRUCT.md)")
    stages = construct.add_subparsers(dest="construct_stage", required=True, metavar="STAGE")

    p = stages.add_parser("consolidate",
                          help="merge repeated upstream questions into POOL/consolidate/pool.jsonl")
    p.add_argument("--upstream", required=True, metavar="ROWS.jsonl",
                   help="upstream rows, one JSON object a line")
    p.add_argument("--map", action="append", metavar="FIELD=UPSTREAM",
                   help="read FIELD (id, question, answer, urls, queries, difficulty, teacher_correct) from "
                        "another upstream field (repeatable)")
    p.add_argument("--out", dest="pool", required=True, metavar="POOL", help="the pool directory (resumable)")
    p.add_argument("--json", action="store_true", help="print the stage's counts and facts as JSON")
    p.set_defaults(handler=cmd_consolidate)

    p = stages.add_parser("urls",
                          help="the pool's visited URLs, canonical and deduplicated (POOL/urls/urls.txt)")
    p.add_argument("pool", metavar="POOL", help="the pool directory")
    p.add_argument("--json", action="store_true", help="print the stage's counts and facts as JSON")
    p.set_defaults(handler=cmd_urls)

    p = stages.add_parser("answers",
                          help="each question's independent answer documents in the crawled corpus")
    p.add_argument("pool", metavar="POOL", help="the pool directory")
    p.add_argument("--database", required=True, metavar="CORPUS", help="the corpus built from urls.txt")
    p.add_argument("--json", action="store_true", help="print the stage's counts and facts as JSON")
    p.set_defaults(handler=cmd_answers)

    p = stages.add_parser("artifacts", help="leak-artifact candidates (dumps, raw data files, Q&A pages)")
    p.add_argument("pool", metavar="POOL", help="the pool directory")
    p.add_argument("--database", required=True, metavar="CORPUS", help="the corpus built from urls.txt")
    p.add_argument("--url-patterns", metavar="FILE",
                   help="regular expressions of artifact URLs, one a line (default: dataset hubs, raw data "
                        "files, Q&A sites)")
    p.add_argument("--blocked-docids", metavar="FILE",
                   help="a reviewed blocklist to check: exit 2 if it blocks an independent answer document")
    p.add_argument("--json", action="store_true", help="print the stage's counts and facts as JSON")
    p.set_defaults(handler=cmd_artifacts)

    p = stages.add_parser("audit", help="shortcut probes through the engine with the blocklist applied "
                                        "(POOL/audit/shortcuts.jsonl)")
    p.add_argument("pool", metavar="POOL", help="the pool directory")
    p.add_argument("--database", required=True, metavar="CORPUS", help="the corpus built from urls.txt")
    p.add_argument("--blocked-docids", required=True, metavar="FILE", help="the reviewed blocklist")
    p.add_argument("--snippet-k", type=int_in(1, 100), default=10, metavar="K",
                   help="results shown per probe search (answer_in_snippet; default 10)")
    p.add_argument("--queries", type=int_in(0, 100), default=2, metavar="N",
                   help="upstream search queries probed besides the question (default 2)")
    p.add_argument("--open-top", type=int_in(0, 100), default=3, metavar="N",
                   help="top results whose first page is opened (answer_in_early_open; default 3)")
    p.add_argument("--single-rank", type=int_in(1, 100), default=3, metavar="R",
                   help="an answer document ranked <= R for the question text is single_retrieval "
                        "(default 3)")
    p.add_argument("--json", action="store_true", help="print the stage's counts and facts as JSON")
    p.set_defaults(handler=cmd_audit)

    p = stages.add_parser("calibrate", help="DR-256 tiers of the pool from three graded reference-agent "
                                            "rollouts (`drsearch calibrate --rule dr256` applied to a pool: "
                                            "POOL/calibrate/tiers.jsonl)")
    p.add_argument("pool", metavar="POOL", help="the pool directory (audited)")
    p.add_argument("--runs", nargs="+", required=True, metavar="RUN",
                   help="the run directories of `drsearch run --preset dr256 --attempt 0|1|2` (any order)")
    p.add_argument("--grades", metavar="GRADED",
                   help="their graded records (scores.json or .graded.jsonl of `drsearch score`; default: "
                        "attempt 0's scores.graded.jsonl)")
    p.add_argument("--json", action="store_true", help="print the stage's counts and facts as JSON")
    p.set_defaults(handler=cmd_calibrate)

    p = stages.add_parser("questions", help="the audit's kept questions as a questions file for the "
                                            "calibration rollouts (POOL/questions/kept.jsonl)")
    p.add_argument("pool", metavar="POOL", help="the pool directory (audited)")
    p.add_argument("--prompt-template", metavar="FILE",
                   help="the frozen prompt's template (JSON; placeholder {question}; default: the shipped "
                        "one)")
    p.add_argument("--json", action="store_true", help="print the stage's counts and facts as JSON")
    p.set_defaults(handler=cmd_questions)

    p = stages.add_parser("select", help="a seeded per-tier sample of the calibrated pool, assembled into a "
                                         "release and validated --deep")
    p.add_argument("pool", metavar="POOL", help="the pool directory (calibrated)")
    p.add_argument("--per-tier", type=int_in(1, 100_000), required=True, metavar="N",
                   help="questions drawn per tier (frontier, challenge)")
    p.add_argument("--seed", type=int_in(0, 2**63 - 1), required=True, metavar="S", help="the sampling seed")
    p.add_argument("--out", required=True, metavar="RELEASE",
                   help="the release directory (must not exist or be empty)")
    p.add_argument("--prompt-template", metavar="FILE",
                   help="the frozen prompt's template: the one kept.jsonl was made with (default: the "
                        "shipped one)")
    p.add_argument("--allow-short", action="store_true",
                   help="take every retained question of a tier with fewer than N (default: exit 1)")
    p.add_argument("--crawl-dir", metavar="CRAWL",
                   help="the crawl directory of the audited corpus (default: CORPUS.crawl/ beside it)")
    p.add_argument("--name", default="drsearch-construct",
                   help="the release's name (default drsearch-construct)")
    p.add_argument("--revision", default="1.0.0", help="the release's revision (default 1.0.0)")
    add_document_options(p)
    p.add_argument("--json", action="store_true",
                   help="print the stage's counts, facts and the release's counts")
    p.set_defaults(handler=cmd_select)


__all__ = ["register"]
