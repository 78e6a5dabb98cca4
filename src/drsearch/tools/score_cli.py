"""``drsearch score`` grades a run directory with an LLM judge (drsearch.benchmark;
docs/GRADING.md); ``drsearch compare`` and ``drsearch agreement`` read graded runs. One verb
per job::

    drsearch score RUN_DIR --questions FILE --judge-model M --base-url URL [--attempts RUN …] [...]
    drsearch score RUN_DIR --questions FILE --judge numeric [--tolerance 0.02]
    drsearch compare RUN_A RUN_B                  paired McNemar test and flip table
    drsearch compare RUN_A RUN_B --majority       the same on the majority of 3 attempts
    drsearch agreement GRADED_A GRADED_B          two judges on the same run: kappa, Spearman
    drsearch leaderboard RUN … --questions ITEMS  OpenBioRQ: graded runs side by side

``score --compare`` and ``score --agreement``, the former spellings of the last two, still
work, with a one-line note on stderr naming the new verb (same output, same exit codes).

``score`` writes ``scores.json`` (sorted keys; default RUN_DIR/scores.json) and, beside
it, ``scores.graded.jsonl`` (one graded question per line), and prints the table (with
``--json``: the scores.json object); a progress bar on a terminal's stderr counts judged
questions. Repeated
attempts (pass@k) are RUN_DIR then the ``--attempts`` runs, or, when RUN_DIR holds no
run.json, its ``attempt-0/``, ``attempt-1/``, … runs. ``compare``
and ``agreement`` read graded files (a run directory, a scores.json or a .graded.jsonl path).
Bad input exits 2 with one line on stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..contract import InvalidInputError
from .argtypes import fraction
from .blocking import add_blocklist_options, requested_blocklist
from .progress import progress_bar

# drsearch.benchmark's DATASET_KINDS and ANSWER_TYPES, spelled here so that building the parser
# (every `drsearch` command) does not import the benchmark layer and pydantic with it; a test
# (tests/tools/test_cli_startup.py) keeps the copies equal.
DATASET_KINDS = ("dr256", "deepsearchqa", "openbiorq")
ANSWER_TYPES = ("Single Answer", "Set Answer")

if TYPE_CHECKING:
    from ..agents.cost import PriceTable
    from ..benchmark import CitationAuditor, GradedQuestion, LLMJudge, RunEpisodes

_SETTING_OPTIONS = {"parse_attempts": "--parse-attempts", "max_attempts": "--max-attempts",
                    "backoff_s": "--backoff"}
"""The judge settings' field names as the options that set them (for error messages)."""
_RECORD_KINDS = ("pmid", "doi", "nct", "arxiv")
"""Citation kinds ``--record-url`` fetches from a record service (docids and URLs are the corpus's)."""


def graded_path(target: Path) -> Path:
    """The graded-questions file of a run directory, a scores.json or a .graded.jsonl path."""
    if target.is_dir():
        return target / "scores.graded.jsonl"
    if target.name.endswith(".graded.jsonl"):
        return target
    return target.with_name(target.stem + ".graded.jsonl")


@contextmanager
def _judge(args: argparse.Namespace, run_dir: Path) -> Iterator[LLMJudge]:
    import sqlite3

    from pydantic import ValidationError

    from ..agents import ChatClient, ReplayMissError, RetryPolicy
    from ..agents.errors import describe_validation_error
    from ..agents.llm import api_key_from_env
    from ..benchmark import JudgeCache, JudgeSettings, LLMJudge

    if not args.judge_model or (not args.base_url and args.judge_cache_mode != "replay"):
        raise InvalidInputError("score needs --judge-model and --base-url (or --judge-cache-mode replay)")
    try:
        settings = JudgeSettings(model=args.judge_model, parse_attempts=args.parse_attempts)
        retry = RetryPolicy(max_attempts=args.max_attempts, backoff_s=args.backoff)
    except ValidationError as e:
        raise InvalidInputError(f"judge settings: {describe_validation_error(e, _SETTING_OPTIONS)}") from None
    cache_path = None if args.judge_cache_mode == "off" else \
        (args.judge_cache or run_dir / "judge_cache.sqlite3")
    with ExitStack() as stack:
        try:
            cache = stack.enter_context(JudgeCache(cache_path, args.judge_cache_mode))
        except ReplayMissError as e:  # replay mode and no cache file: nothing to replay
            raise InvalidInputError(e.message) from None
        except sqlite3.Error as e:  # a directory, a missing parent, not SQLite
            raise InvalidInputError(f"--judge-cache {cache_path}: cannot open ({e})") from None
        client = None
        if args.base_url and args.judge_cache_mode != "replay":
            client = ChatClient.connect(args.base_url, api_key_from_env(args.api_key_env), retry=retry)
            stack.callback(client.close)
        llm = LLMJudge(client, settings, cache)
        yield llm
        stats = cache.stats()
        print(f"drsearch: judge cache {cache_path}: {stats['hits']} hits, {stats['misses']} misses, "
              f"{stats['stored']} stored", file=sys.stderr)


@contextmanager
def _auditor(args: argparse.Namespace, llm: LLMJudge) -> Iterator[CitationAuditor | None]:
    if not args.audit_citations:
        if args.database or args.search or args.record_url or args.blocked_docids:
            raise InvalidInputError("--database, --search, --blocked-docids and --record-url "
                                    "need --audit-citations")
        yield None
        return
    if not (args.database or args.search or args.record_url):
        raise InvalidInputError("--audit-citations needs --database CORPUS or --search URL (docids, URLs) "
                                "and/or --record-url KIND=URL (PMID, DOI, NCT, arXiv)")
    if args.blocked_docids and not args.database:
        raise InvalidInputError("--blocked-docids needs --database (a server applies its own blocklist)")
    import httpx

    from ..agents import EngineSearcher, HttpSearcher
    from ..benchmark import CitationAuditor, CorpusResolver, HttpRecordResolver, RoutingResolver, SupportJudge
    from ..benchmark.citations import RESOLVE_RETRY
    from ..index import Engine

    routes: dict[str, Any] = {}
    with ExitStack() as stack:
        if args.database is not None:
            listed, policy = requested_blocklist(args)
            engine = stack.enter_context(Engine.open(args.database, listed, release_blocklist=policy))
            if not args.allow_missing_blocked:
                engine.check_blocklist_complete()
            routes["docid"] = routes["url"] = CorpusResolver(EngineSearcher(engine))
        elif args.search is not None:
            searcher = HttpSearcher.connect(args.search)
            stack.callback(searcher.close)
            if not args.allow_missing_blocked:
                searcher.corpus().check_blocklist_complete(args.search)
            routes["docid"] = routes["url"] = CorpusResolver(searcher)
        templates = dict(_record_url(t) for t in args.record_url or ())
        if templates:
            client = stack.enter_context(httpx.Client(timeout=RESOLVE_RETRY.timeout_s, follow_redirects=True))
            resolver = HttpRecordResolver(client, templates)
            routes.update(dict.fromkeys(templates, resolver))
        yield CitationAuditor(RoutingResolver(routes), SupportJudge(llm))


def _record_url(text: str) -> tuple[str, str]:
    kind, sep, template = text.partition("=")
    if not sep or kind not in _RECORD_KINDS or "{id}" not in template:
        raise InvalidInputError(f"--record-url {text!r}: expected {'|'.join(_RECORD_KINDS)}=URL "
                                "with {id} in it")
    return kind, template


def _tasks(args: argparse.Namespace) -> list[Any]:
    from ..benchmark import filter_tasks, load_tasks

    tasks = load_tasks(args.dataset, args.questions)
    if args.categories or args.answer_type or args.ids:
        tasks = filter_tasks(tasks, categories=args.categories, answer_type=args.answer_type, ids=args.ids)
    if not tasks:
        raise InvalidInputError("no questions selected")
    return tasks


ATTEMPT_DIR = re.compile(r"attempt-(\d+)")


def _run_dirs(args: argparse.Namespace) -> list[Path]:
    """RUN_DIR then ``--attempts`` runs; or RUN_DIR's ``attempt-N/`` runs (N = 0, 1, …)."""
    root = Path(args.run_dir)
    if not root.is_dir():
        raise InvalidInputError(f"{root}: not a run directory (no such directory)")
    if (root / "run.json").exists():
        dirs = [root, *(args.attempts or ())]
    else:
        numbered = sorted((int(m.group(1)), p) for p in root.iterdir()
                          if p.is_dir() and (m := ATTEMPT_DIR.fullmatch(p.name)))
        if not numbered:
            raise InvalidInputError(f"{root}: not a run directory (no run.json, no attempt-N/ runs)")
        if [n for n, _ in numbered] != list(range(len(numbered))):
            names = ", ".join(p.name for _, p in numbered)
            raise InvalidInputError(f"{root}: attempt directories must be attempt-0 … "
                                    f"attempt-{len(numbered) - 1}, found {names}")
        if args.attempts:
            raise InvalidInputError(f"{root}: holds attempt-N/ runs; do not give --attempts as well")
        dirs = [p for _, p in numbered]
    seen: dict[Path, Path] = {}
    for d in dirs:
        if (first := seen.setdefault(d.resolve(), d)) is not d:
            raise InvalidInputError(f"{d}: the same run given twice (as {first} too)")
    return dirs


def _check_runs(args: argparse.Namespace, runs: list[RunEpisodes], tasks: list[Any],
                questions_sha256: str) -> None:
    """One-line errors for runs that cannot be graded; warnings for doubtful ones."""
    for run in runs:
        if not run.episodes:
            raise InvalidInputError(f"{run.path}: no episodes in trajectories.jsonl (nothing to grade)")
        if not any(t.question_id in run.episodes for t in tasks):
            raise InvalidInputError(f"{run.path}: no episode answers any selected question of "
                                    f"{args.questions}")
        if unknown := run.unknown_ids(tasks):
            _warn(f"{run.path}: {len(unknown)} episode(s) of questions not selected (e.g. {unknown[0]}); "
                  "left out")
        recorded = run.manifest.get("questions_sha256")
        if args.dataset == "dr256" and isinstance(recorded, str) and recorded != questions_sha256:
            _warn(f"{run.path}: the run answered another questions file (SHA-256 {recorded[:12]}…) "
                  f"than {args.questions}; grading against the latter")
    seeds = [json.dumps((r.manifest.get("preset") or {}).get("seed_base")) for r in runs]
    if len(runs) > 1 and len(set(seeds)) == 1 and seeds[0] != "null":
        _warn(f"the {len(runs)} attempts ran with the same seeds (seed_base {seeds[0]}): a seeded endpoint "
              "repeats its answers, leaving pass@k at pass@1; give each attempt its own seed_base")


def _warn(message: str) -> None:
    print(f"drsearch: warning: {message}", file=sys.stderr)


def _grade(args: argparse.Namespace, out: TextIO) -> int:
    from ..agents.canonical import sha256_hex
    from ..benchmark import grade_run, read_run, render_table, summarize, write_graded
    from ..benchmark.citations import rates_of_graded
    from ..benchmark.judges import judge_for
    from ..benchmark.leak_audit import render_leak_audit
    from ..contract.atomic import write_json_atomic

    run_dir = Path(args.run_dir)
    if args.concurrency < 1:
        raise InvalidInputError(f"--concurrency must be at least 1, got {args.concurrency}")
    if args.judge == "numeric":
        if args.dataset == "openbiorq":
            raise InvalidInputError("--judge numeric grades answers with a reference (dr256, deepsearchqa), "
                                    "not checklists")
        if args.audit_citations or args.judge_model or args.base_url:
            raise InvalidInputError("--judge numeric takes no --judge-model, --base-url or --audit-citations")
    dirs = _run_dirs(args)
    tasks = _tasks(args)
    scores = args.out or run_dir / "scores.json"
    if scores.is_dir() or not scores.parent.is_dir():
        raise InvalidInputError(f"--out {scores}: needs a file path in an existing directory")
    if graded_path(scores) == scores:  # the scores would overwrite the graded questions
        raise InvalidInputError(f"--out {scores}: name the scores file (scores.json), not a .graded.jsonl")
    runs = [read_run(p) for p in dirs]
    questions_sha256 = sha256_hex(args.questions.read_bytes())
    _check_runs(args, runs, tasks, questions_sha256)
    table = _price_table(args, runs)  # before any judge call: an unpriced model is exit 2
    if args.judge == "numeric":
        return _grade_numeric(args, out, runs, tasks, questions_sha256, scores, table)
    graded: list[GradedQuestion] = []
    with _judge(args, run_dir) as llm, _auditor(args, llm) as auditor:
        judge = judge_for(args.dataset, llm, threshold=args.threshold)
        bar = progress_bar("grading", " q", len(tasks) * len(runs), quiet=args.quiet)
        try:
            for attempt, run in enumerate(runs):
                graded_run = grade_run(run, tasks, judge, attempt=attempt, auditor=auditor,
                                       concurrency=args.concurrency, progress=bar.update)
                failed = sum(g.outcome == "missing" for g in graded_run)
                if failed:
                    _warn(f"{failed} question(s) graded `missing` in {run.path}: their latest attempt failed "
                          "for infrastructure (rerun `drsearch run` on that directory to retry them)")
                graded += graded_run
        finally:
            bar.close()
    summary = summarize(graded, expected_ids=[t.question_id for t in tasks], solved_threshold=args.threshold)
    summary["grading"] = {
        "dataset": args.dataset, "questions": str(args.questions),
        "questions_sha256": questions_sha256, "runs": [str(r.path) for r in runs],
        "agent_model": runs[0].manifest.get("model"), "judge_model": llm.settings.model,
        "judge_seed": llm.settings.seed, "judge_temperature": llm.settings.temperature,
        "prompt": judge.prompt.name, "prompt_sha256": judge.prompt.sha256,
        "threshold": args.threshold if args.dataset == "openbiorq" else None}
    _judge_independence(summary, llm.settings.model, runs)
    _valid_scores(args, summary)
    if auditor is not None:
        summary["citations"] = rates_of_graded([g.judge for g in graded if g.attempt == 0])
        unresolved = {k: n for k, n in summary["citations"]["no_resolver"].items() if n}
        if unresolved:
            _warn(f"citation audit: {sum(unresolved.values())} citation(s) of a kind with no resolver ("
                  + ", ".join(f"{n} {k}" for k, n in unresolved.items()) + "): transient, left out of the "
                  "existence rate (--record-url KIND=URL for pmid|doi|nct|arxiv; --database or --search "
                  "for docids and URLs)")
        summary["grading"]["citation_support"] = auditor.support.describe() if auditor.support else None
    _add_run_facts(summary, runs, tasks, graded, args.questions, questions_sha256)
    if table is not None:
        summary["cost"] = score_cost(table, runs, llm)
    if args.dataset == "openbiorq":
        from ..benchmark.openbiorq_tables import read_item_facts, run_tables

        selected = {t.question_id for t in tasks}
        items = [i for i in read_item_facts(args.questions) if i["task_id"] in selected]
        summary["openbiorq"] = run_tables(items, graded, runs[0].episodes)
    write_graded(graded_path(scores), graded)
    write_json_atomic(scores, summary)
    if args.json:  # the object just written to scores.json
        print(json.dumps(summary, sort_keys=True), file=out)
        return 0
    print(render_table(summary), file=out)
    _print_cost(summary, out)
    if "openbiorq" in summary:
        from ..benchmark.openbiorq_tables import render_run_tables

        print("\n" + render_run_tables(summary["openbiorq"]), file=out)
    if summary["leak_audit"]["totals"]["episodes"]:
        print("\n" + render_leak_audit(summary["leak_audit"]), file=out)
    print(f"\nwrote {scores} and {graded_path(scores)}", file=out)
    return 0


def _ambiguous_separators(summary: dict[str, Any], graded: list[GradedQuestion]) -> None:
    """``--judge numeric``: the answers whose verdict an ambiguous ``1,234`` / ``1.234`` decided
    (read the English way; the other reading would give the other verdict), in scores.json
    (``numeric_ambiguous``) and on stderr, so that no such reading is taken silently."""
    decided = [(g.question_id, g.attempt, g.correct) for g in graded
               if ((g.judge or {}).get("verdict") or {}).get("ambiguous", {}).get("decides")]
    if not decided:
        return
    correct = sum(ok for _, _, ok in decided)
    summary["numeric_ambiguous"] = {
        "count": len(decided), "correct_as_read": correct, "incorrect_as_read": len(decided) - correct,
        "questions": sorted({f"{qid}#{attempt}" for qid, attempt, _ in decided})}
    _warn(f"{len(decided)} numeric answer(s) hold an ambiguous separator (1,234 / 1.234) read the English "
          f"way, whose other reading would change the verdict ({correct} graded correct, "
          f"{len(decided) - correct} incorrect as read): scores.json numeric_ambiguous lists them")


def _not_numbers(summary: dict[str, Any], graded: list[GradedQuestion]) -> None:
    """``--judge numeric``: the answers that are not one number (none, several, a range) are
    graded incorrect; when there are any, say how many and why (stderr and scores.json
    ``numeric_unparsed``): a run whose answers are prose wants an LLM judge, and a silent 0%
    would look like the model's failure."""
    verdicts = [v for g in graded if (v := (g.judge or {}).get("verdict")) is not None]  # the answers given
    unparsed = Counter(e for v in verdicts if (e := v.get("parse_error")))
    if not unparsed:
        return
    total = sum(unparsed.values())
    summary["numeric_unparsed"] = {"count": total, "answers": len(verdicts),
                                   "by_error": dict(sorted(unparsed.items()))}
    why = ", ".join(f"{error}: {n}" for error, n in sorted(unparsed.items()))
    _warn(f"{total} of {len(verdicts)} answer(s) are not one number ({why}), graded incorrect: "
          "--judge numeric reads numbers only; free-text answers need an LLM judge (--judge-model)")


def _same_model(a: str, b: str) -> bool:
    """One model under two spellings: case, spaces, or a provider prefix (``org/name``)."""
    x, y = a.strip().casefold(), b.strip().casefold()
    return x == y or x.endswith("/" + y) or y.endswith("/" + x)


def _judge_independence(summary: dict[str, Any], judge_model: str, runs: list[RunEpisodes]) -> None:
    """Warn (stderr and ``scores.json["warnings"]``) when the judge is the model under test:
    AgentCompass's DeepSearchQA protocol asks for an independent judge, as self-grading is
    neither fair nor comparable across models."""
    agents = sorted({str(m) for r in runs if (m := r.manifest.get("model"))})
    same = [m for m in agents if _same_model(m, judge_model)]
    summary["grading"]["judge_is_agent_model"] = bool(same)
    if same:
        message = (f"the judge model {judge_model!r} is the model under test ({same[0]!r}): a model grading "
                   "its own answers is neither fair nor comparable; use an independent judge (--judge-model)")
        summary.setdefault("warnings", []).append(message)
        _warn(message)


def _valid_scores(args: argparse.Namespace, summary: dict[str, Any]) -> None:
    """DeepSearchQA: AgentCompass's accuracy over validly scored tasks beside ours over all."""
    from ..benchmark.scoring import accuracy_over_valid_scores

    if args.dataset == "deepsearchqa":
        summary["accuracy_over_valid_scores"] = accuracy_over_valid_scores(summary)


def _add_run_facts(summary: dict[str, Any], runs: list[RunEpisodes], tasks: list[Any],
                   graded: list[GradedQuestion], questions: Path, questions_sha256: str) -> None:
    """What every judge path reports beside its verdicts: ``behaviour`` (how the agent answered,
    first attempt), ``leak_audit`` (where the gold first appeared in the trajectories) and
    ``corpus`` (what each run searched, and whether it was the questions' release with its
    blocklist: warned on stderr where not)."""
    from ..benchmark.behaviour import behaviour_metrics
    from ..benchmark.leak_audit import audit_runs
    from ..benchmark.provenance import corpus_provenance

    summary["behaviour"] = behaviour_metrics(runs[0].episodes, [t.question_id for t in tasks])
    golds = {t.question_id: t.reference for t in tasks}
    summary["leak_audit"] = audit_runs([r.episodes for r in runs], golds,
                                       {(g.question_id, g.attempt): g.correct for g in graded})
    summary["corpus"] = corpus_provenance(questions, questions_sha256, runs)
    for line in summary["corpus"]["warnings"]:
        _warn(line)
        summary.setdefault("warnings", []).append(line)  # beside the judge's: every warning in one list


def _grade_numeric(args: argparse.Namespace, out: TextIO, runs: list[RunEpisodes], tasks: list[Any],
                   questions_sha256: str, scores: Path, table: PriceTable | None) -> int:
    """``--judge numeric``: the deterministic grader (no endpoint, no judge cache)."""
    from ..benchmark import grade_run, render_table, summarize, write_graded
    from ..benchmark.numeric import NumericJudge
    from ..contract.atomic import write_json_atomic

    judge = NumericJudge(tolerance=args.tolerance)
    graded = [g for attempt, run in enumerate(runs) for g in grade_run(run, tasks, judge, attempt=attempt)]
    summary = summarize(graded, expected_ids=[t.question_id for t in tasks], solved_threshold=args.threshold)
    summary["grading"] = {
        "dataset": args.dataset, "questions": str(args.questions),
        "questions_sha256": questions_sha256, "runs": [str(r.path) for r in runs],
        "agent_model": runs[0].manifest.get("model"), "judge_model": "numeric", "judge_seed": None,
        "judge_temperature": None, "numeric": judge.describe(),
        "prompt": judge.prompt.name, "prompt_sha256": judge.prompt.sha256, "threshold": None}
    from ..benchmark.generate.drbencher.scoring import drbencher_summary

    _valid_scores(args, summary)
    _ambiguous_separators(summary, graded)
    _not_numbers(summary, graded)
    drbencher = drbencher_summary(args.questions, graded, runs)  # DrBencher rows: docs/GENERATE.md
    if drbencher is not None:
        summary["drbencher"] = drbencher
    _add_run_facts(summary, runs, tasks, graded, args.questions, questions_sha256)
    if table is not None:
        summary["cost"] = score_cost(table, runs, None)
    write_graded(graded_path(scores), graded)
    write_json_atomic(scores, summary)
    if args.json:  # the object just written to scores.json, as the LLM judge's path prints it
        print(json.dumps(summary, sort_keys=True), file=out)
        return 0
    print(render_table(summary), file=out)
    if drbencher is not None:  # the paper's tables (docs/GENERATE.md, "Scoring a run on it")
        from ..benchmark.generate.drbencher.tabletext import render_drbencher

        print(f"\n{render_drbencher(drbencher)}", file=out)
    _print_cost(summary, out)
    print(f"\nwrote {scores} and {graded_path(scores)}", file=out)
    return 0


def _price_table(args: argparse.Namespace, runs: list[RunEpisodes]) -> PriceTable | None:
    """``--prices``, checked to price every run's model and the LLM judge's (exit 2 if not)."""
    from ..agents.cost import load_prices

    if args.prices is None:
        return None
    table = load_prices(args.prices)
    for run in runs:
        table.require(str(run.manifest.get("model")), f"agent (of {run.path})")
    if args.judge != "numeric" and args.judge_model:
        table.require(args.judge_model, "judge")
    return table


def score_cost(table: PriceTable, runs: list[RunEpisodes], llm: LLMJudge | None) -> dict[str, Any]:
    """scores.json's ``cost``: each run's agent cost (as run.json's), the judge's (every judgement
    asked, verdicts and citation support, at the tokens recorded with its reply; null for the
    numeric judge), and their total (docs/GRADING.md, Cost)."""
    from decimal import Decimal

    from ..agents.cost import cost_object, run_cost, usd

    agent = [{"run": str(r.path), **run_cost(table, str(r.manifest.get("model")), r.episodes.values())}
             for r in runs]
    judge = None
    if llm is not None:
        tokens = {llm.settings.model: (llm.usage["prompt_tokens"], llm.usage["completion_tokens"])}
        priced = cost_object(table, tokens, {}, "judge", llm.judgements)
        judge = {**{k: v for k, v in priced.items() if k != "episodes"}, "judgements": llm.judgements,
                 "judgements_without_usage": llm.judgements_without_usage}
    total = sum((Decimal(str(c["total_usd"])) for c in [*agent, *([judge] if judge else [])]), Decimal(0))
    return {"agent": agent, "currency": "USD", "judge": judge, "prices": table.provenance(),
            "total_usd": usd(total)}


def _print_cost(summary: dict[str, Any], out: TextIO) -> None:
    cost = summary.get("cost")
    if cost is None:
        return
    judge = cost["judge"]
    agent = sum(Decimal(str(c["total_usd"])) for c in cost["agent"])
    line = f"\ncost {cost['total_usd']} USD: agent {float(agent)} USD"
    if judge is not None:
        line += f", judge {judge['total_usd']} USD over {judge['judgements']} judgement(s)"
        if judge["judgements_without_usage"]:
            line += f" ({judge['judgements_without_usage']} cached before usage was kept: not priced)"
    print(f"{line} (prices {cost['prices']['path']})", file=out)


def _tolerance(text: str) -> Any:
    from fractions import Fraction

    try:
        value = Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def _paired(args: argparse.Namespace, out: TextIO, paths: list[Path],
            fn: Callable[[list[GradedQuestion], list[GradedQuestion]], dict[str, Any]],
            report: Callable[[dict[str, Any], TextIO], None]) -> int:
    """``fn`` over two graded files, printed as JSON (``--json``) or by ``report``.

    ``fn``'s ValueError (files that cannot be paired) is bad input.
    """
    from ..benchmark import read_graded

    a, b = read_graded(graded_path(paths[0])), read_graded(graded_path(paths[1]))
    try:
        result = fn(a, b)
    except ValueError as e:
        raise InvalidInputError(f"{paths[0]} vs {paths[1]}: {e}") from None
    if args.json:
        print(json.dumps(result, sort_keys=True), file=out)
    else:
        report(result, out)
    return 0


def _report_compare(result: dict[str, Any], out: TextIO) -> None:
    t, flips = result["table"], result["flips"]
    acc_a, acc_b = result["accuracy_a"], result["accuracy_b"]
    print(f"paired questions {result['n_paired']} (only in A: {result['unpaired']['n_only_a']}, "
          f"only in B: {result['unpaired']['n_only_b']})", file=out)
    print(f"accuracy A {acc_a['rate']}  B {acc_b['rate']}  difference B-A {result['difference']}", file=out)
    print(f"{'':>14}{'B correct':>12}{'B wrong':>10}", file=out)
    print(f"{'A correct':>14}{t['both_correct']:>12}{t['a_only']:>10}", file=out)
    print(f"{'A wrong':>14}{t['b_only']:>12}{t['both_incorrect']:>10}", file=out)
    print(f"exact McNemar p = {result['mcnemar_p']}", file=out)
    for name, ids in (("correct -> incorrect", flips["correct_to_incorrect"]),
                      ("incorrect -> correct", flips["incorrect_to_correct"])):
        print(f"{name} ({len(ids)}): {' '.join(ids) if ids else '-'}", file=out)


def _report_majority(result: dict[str, Any], out: TextIO) -> None:
    acc_a, acc_b, flips = result["accuracy_a"], result["accuracy_b"], result["flips"]
    print(f"questions {result['n']}, majority of {result['attempts']} attempts each", file=out)
    print(f"majority accuracy A {acc_a['rate']}  B {acc_b['rate']}", file=out)
    print(f"{'':>14}{'B correct':>12}{'B wrong':>10}", file=out)
    print(f"{'A correct':>14}{result['both_correct']:>12}{result['a_only']:>10}", file=out)
    print(f"{'A wrong':>14}{result['b_only']:>12}{result['both_incorrect']:>10}", file=out)
    print(f"majority-vote exact McNemar p = {result['p']}", file=out)
    for name, ids in (("correct -> incorrect", flips["correct_to_incorrect"]),
                      ("incorrect -> correct", flips["incorrect_to_correct"])):
        print(f"{name} ({len(ids)}): {' '.join(ids) if ids else '-'}", file=out)


def _report_agreement(result: dict[str, Any], out: TextIO) -> None:
    agree, failed = result["agreement"], result["judge_failed"]
    print(f"paired records {result['n_records']} (only in A: {result['unpaired']['only_a']}, "
          f"only in B: {result['unpaired']['only_b']}): judged by both {result['n']}, "
          f"no judge needed {result['not_judged']}, judge failed A {failed['a']} / B {failed['b']}", file=out)
    print(f"agreement {agree['rate']} {agree['ci']}  Cohen's kappa {result['kappa']}", file=out)
    if result["n_scored"]:
        print(f"checklist scores: Spearman rho {result['spearman']} over {result['n_scored']}", file=out)
    print(f"disagreements ({len(result['disagreements'])}): "
          f"{' '.join(q for q, _ in result['disagreements']) or '-'}", file=out)
    wp = result["wrong_paper"]
    if wp["n"]:
        agree = wp["agreement"]
        print(f"wrong-paper verdicts on {wp['n']} citation(s) judged by both: agreement {agree['rate']} "
              f"{agree['ci']}  Cohen's kappa {wp['kappa']} (both {wp['both']}, A only {wp['a_only']}, "
              f"B only {wp['b_only']}, neither {wp['neither']})", file=out)


def cmd_leaderboard(args: argparse.Namespace, out: TextIO) -> int:
    """``drsearch leaderboard RUN … --questions ITEMS``: graded OpenBioRQ runs side by side
    (openbiorq_tables.leaderboard)."""
    from ..agents.canonical import sha256_hex
    from ..benchmark import read_graded, read_run
    from ..benchmark.openbiorq_tables import leaderboard, read_item_facts, render_leaderboard

    if args.questions is None:
        raise InvalidInputError("--leaderboard needs --questions ITEMS.jsonl (the export the runs answered)")
    items = read_item_facts(args.questions)
    questions_sha256 = sha256_hex(args.questions.read_bytes())
    runs, seen = [], set()
    for path in args.runs:
        scores = path / "scores.json" if path.is_dir() else path
        if scores.resolve() in seen:
            raise InvalidInputError(f"{path}: the same run given twice")
        seen.add(scores.resolve())
        try:
            summary = json.loads(scores.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise InvalidInputError(f"{scores}: not a scores.json of `drsearch score` "
                                    f"({e.__class__.__name__}); grade the run first") from None
        grading = summary.get("grading") if isinstance(summary, dict) else None
        if not isinstance(grading, dict) or grading.get("dataset") != "openbiorq":
            raise InvalidInputError(f"{scores}: not graded as --dataset openbiorq")
        graded = read_graded(graded_path(scores))
        if {g.question_id for g in graded} != {i["task_id"] for i in items}:
            raise InvalidInputError(f"{scores}: graded other items than {args.questions} (task ids differ)")
        if grading.get("questions_sha256") != questions_sha256:  # e.g. the export re-run with difficulty
            _warn(f"{scores}: graded against another file of the same items (SHA-256 "
                  f"{str(grading.get('questions_sha256'))[:12]}…); domains, tracks and buckets are read from "
                  f"{args.questions}")
        # the run's trajectories (zero-tool, coverage): the directory given, else the one scores.json names
        recorded = [Path(r) for r in grading.get("runs") or []]
        run_dir = path if (path / "run.json").is_file() else recorded[0] if recorded else None
        if run_dir is None or not (run_dir / "run.json").is_file():
            raise InvalidInputError(f"{path}: no run directory beside it (give the run directory)")
        episodes = read_run(run_dir).episodes
        runs.append({"episodes": episodes, "graded": graded,
                     "questions_sha256": grading.get("questions_sha256"),
                     "model": grading.get("agent_model"), "name": str(path)})
    body = leaderboard(items, runs)
    body["questions"], body["questions_sha256"] = str(args.questions), questions_sha256
    if args.out is not None:
        from ..contract.atomic import write_json_atomic

        write_json_atomic(args.out, body)
    if args.json:
        print(json.dumps(body, sort_keys=True), file=out)
    else:
        print(render_leaderboard(body), file=out)
    return 0


def _note_renamed(old: str, new: str) -> None:
    """The one line an old spelling prints (stderr), naming the verb that now does its job."""
    print(f"drsearch: note: `drsearch {old}` is now `drsearch {new}` (the old spelling still works)",
          file=sys.stderr)


def _grading_extra() -> None:
    """The grading extra (judges: httpx, statistics: scipy): without it, one line before any work."""
    import httpx  # noqa: F401
    import scipy  # type: ignore[import-untyped]  # noqa: F401


def cmd_compare(args: argparse.Namespace, out: TextIO) -> int:
    """``drsearch compare RUN_A RUN_B [--majority]``: paired McNemar test and flip table."""
    _grading_extra()
    from ..benchmark import compare_runs

    if args.majority:
        from ..benchmark.generate.drbencher.scoring import majority_compare

        return _paired(args, out, args.runs, majority_compare, _report_majority)
    return _paired(args, out, args.runs, compare_runs, _report_compare)


def cmd_agreement(args: argparse.Namespace, out: TextIO) -> int:
    """``drsearch agreement GRADED_A GRADED_B``: two judges' grades of one run."""
    _grading_extra()
    from ..benchmark import judge_agreement

    return _paired(args, out, args.graded, judge_agreement, _report_agreement)


def cmd_score(args: argparse.Namespace, out: TextIO) -> int:
    forms = [args.run_dir is not None, args.compare is not None, args.agreement is not None,
             args.leaderboard is not None]
    if sum(forms) != 1:
        raise InvalidInputError("give exactly one of RUN_DIR, --compare RUN_A RUN_B, --agreement A B or "
                                "--leaderboard RUN …")
    _grading_extra()
    if args.majority and args.compare is None:
        raise InvalidInputError("--majority goes with --compare RUN_A RUN_B")
    if args.compare is not None:  # the former spelling of `drsearch compare`
        _note_renamed("score --compare", "compare")
        args.runs = args.compare
        return cmd_compare(args, out)
    if args.agreement is not None:  # the former spelling of `drsearch agreement`
        _note_renamed("score --agreement", "agreement")
        args.graded = args.agreement
        return cmd_agreement(args, out)
    if args.leaderboard is not None:  # the former spelling of `drsearch leaderboard`
        _note_renamed("score --leaderboard", "leaderboard")
        args.runs = args.leaderboard
        return cmd_leaderboard(args, out)
    if args.questions is None:
        raise InvalidInputError("score RUN_DIR needs --questions FILE")
    return _grade(args, out)




_MAJORITY_HELP = ("majority vote of 3 attempts per question (attempt-0/ … attempt-2/ runs graded together) "
                  "on each side, then the exact McNemar test")


def register(sub: Any) -> None:
    """Add the ``score``, ``compare`` and ``agreement`` verbs to the CLI's subparsers."""
    p = sub.add_parser("score", help="grade a run with a judge (see docs/GRADING.md)")
    p.add_argument("run_dir", nargs="?", type=Path, metavar="RUN_DIR", help="run directory of `drsearch run`")
    # the former spellings of `drsearch compare` / `drsearch agreement` (aliases that say so)
    p.add_argument("--compare", nargs=2, type=Path, metavar=("RUN_A", "RUN_B"),
                   help="old spelling of `drsearch compare RUN_A RUN_B`")
    p.add_argument("--majority", action="store_true", help="with --compare: " + _MAJORITY_HELP)
    p.add_argument("--agreement", nargs=2, type=Path, metavar=("GRADED_A", "GRADED_B"),
                   help="old spelling of `drsearch agreement GRADED_A GRADED_B`")
    p.add_argument("--leaderboard", nargs="+", type=Path, metavar="RUN",
                   help="old spelling of `drsearch leaderboard RUN … --questions ITEMS`")
    p.add_argument("--json", action="store_true", help="print the scores.json object as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--questions", type=Path, metavar="FILE", help="the dataset the run answered")
    p.add_argument("--dataset", choices=DATASET_KINDS, default="dr256", help="dataset format (default dr256)")
    p.add_argument("--judge", choices=["llm", "numeric"], default="llm",
                   help="llm (default: the dataset's LLM judge) or numeric (deterministic: within "
                        "--tolerance relative error of the reference; no endpoint)")
    p.add_argument("--tolerance", type=_tolerance, default="0.02", metavar="T",
                   help="--judge numeric: relative tolerance (default 0.02)")
    p.add_argument("--judge-model", metavar="M", help="judge model name")
    p.add_argument("--base-url", metavar="URL", help="judge's OpenAI-compatible base URL ending in /v1")
    p.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the judge's API key")
    p.add_argument("--out", type=Path, metavar="FILE", help="scores file (default RUN_DIR/scores.json)")
    p.add_argument("--attempts", nargs="+", type=Path, metavar="RUN_DIR",
                   help="further runs of the same questions, graded as attempts 1, 2, … (pass@k)")
    p.add_argument("--threshold", type=fraction, default=0.5,
                   help="checklist solved threshold (default 0.5)")
    p.add_argument("--categories", nargs="+", metavar="C", help="DeepSearchQA: only these categories")
    p.add_argument("--answer-type", choices=ANSWER_TYPES,
                   help="DeepSearchQA: one answer type")
    p.add_argument("--ids", nargs="+", metavar="ID", help="only these question ids")
    p.add_argument("--judge-cache", type=Path, metavar="FILE",
                   help="verdict cache (default RUN_DIR/judge_cache.sqlite3)")
    p.add_argument("--judge-cache-mode", choices=["off", "record", "replay", "replay-then-live"],
                   default="replay-then-live", help="replay = re-grade offline from the cache only")
    p.add_argument("--concurrency", type=int, default=4, help="judge calls at once (default 4)")
    p.add_argument("--prices", type=Path, metavar="FILE",
                   help="price file (as drsearch run's): each run's and the judge's cost go into "
                        "scores.json (docs/GRADING.md, Cost)")
    p.add_argument("--parse-attempts", type=int, default=3, help="re-asks after an unparseable verdict")
    p.add_argument("--max-attempts", type=int, default=6, help="tries per judge HTTP call (default 6)")
    p.add_argument("--backoff", type=float, default=1.0, metavar="S", help="first retry wait (default 1 s)")
    p.add_argument("--audit-citations", action="store_true",
                   help="check cited docids/URLs (needs --database or --search) and PMID/DOI/NCT/arXiv "
                        "(--record-url)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--database", type=Path, metavar="CORPUS", help="citation audit: the corpus in-process")
    g.add_argument("--search", metavar="URL", help="citation audit: a drsearch server")
    add_blocklist_options(p)  # with --database (a server applies its own)
    p.add_argument("--record-url", action="append", metavar="KIND=URL",
                   help="citation audit: fetch pmid|doi|nct|arxiv records from URL with {id} (repeatable; "
                        "arXiv: https://arxiv.org/abs/{id})")
    p.set_defaults(handler=cmd_score)

    c = sub.add_parser("compare", help="compare two graded runs: exact McNemar test, flipped questions "
                                       "(docs/GRADING.md)")
    c.add_argument("runs", nargs=2, type=Path, metavar="RUN",
                   help="two graded runs of the same questions (run directories, scores.json or "
                        ".graded.jsonl)")
    c.add_argument("--majority", action="store_true", help=_MAJORITY_HELP)
    c.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    c.set_defaults(handler=cmd_compare)

    a = sub.add_parser("agreement", help="agreement of two judges' grades of one run: Cohen's kappa, "
                                         "Spearman (docs/GRADING.md)")
    a.add_argument("graded", nargs=2, type=Path, metavar="GRADED",
                   help="two gradings of one run (scores.json or .graded.jsonl paths, or run directories)")
    a.add_argument("--json", action="store_true", help="print the agreement as one JSON object")
    a.set_defaults(handler=cmd_agreement)

    lb = sub.add_parser("leaderboard", help="OpenBioRQ: graded runs side by side, Wilson intervals "
                                            "(docs/GENERATE.md)")
    lb.add_argument("runs", nargs="+", type=Path, metavar="RUN",
                    help="graded runs (run directories or scores.json): solve rate on the whole set, the "
                         "core and the frozen core (Wilson 95%%), per-domain/track micro- and macro-averages")
    lb.add_argument("--questions", type=Path, metavar="ITEMS", help="the export the runs answered (required)")
    lb.add_argument("--out", type=Path, metavar="FILE", help="also write the JSON here")
    lb.add_argument("--json", action="store_true", help="print the leaderboard as one JSON object")
    lb.set_defaults(handler=cmd_leaderboard)
