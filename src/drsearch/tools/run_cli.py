"""``drsearch run``: an agent over benchmark questions (drsearch.agents; docs/AGENTS.md).

Prints a status table on stdout (``--json``: the run summary as one JSON line); the
progress bar goes to stderr. Exit codes: 0 when every selected question has a finished
episode; 1 when any ended in an infrastructure failure (rerun the same command to retry
those); 2 for bad options, a model endpoint that fails the probe, or a run directory that
holds a different run, or a ``--prices`` file that does not price the model. Questions a
spent ``--max-cost`` left unstarted (``not_run``) do not change the exit code. Ctrl-C cancels
the model calls in flight and exits 130 with one line naming what was kept.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

from .blocking import NONE, add_blocklist_options, policy
from .embed_cli import add_retriever_options

# RunSpec / RetryPolicy fields as the options that set them (for one-line error messages)
_OPTIONS = {"questions": "--questions", "out": "--out", "model": "--model", "base_url": "--base-url",
            "api_key_env": "--api-key-env", "search_url": "--search", "database": "--database",
            "retriever": "--retriever", "vectors": "--vectors", "rerank": "--rerank-url",
            "blocked_docids": "--blocked-docids",
            "release_blocklist": "--blocked-docids none/--override-release-blocklist",
            "preset": "--preset", "attempt": "--attempt",
            "concurrency": "--concurrency",
            "limit": "--limit", "ids": "--ids", "shard": "--shard",
            "cache_mode": "--cache-mode", "cache": "--cache",
            "replay_from": "--replay", "identity_check_every": "--identity-check-every",
            "max_attempts": "--max-attempts", "backoff_s": "--backoff",
            "prices": "--prices", "max_cost_usd": "--max-cost",
            "tool_snapshot": "--tool-snapshot", "tool_endpoints": "--tool-endpoints"}


def _rerank(args: argparse.Namespace) -> dict[str, Any] | None:
    """``--rerank-*`` as RerankConfig's fields (None without +rerank); InvalidInputError."""
    import dataclasses

    from .embed_cli import rerank_config

    config = rerank_config(args)
    return None if config is None else dataclasses.asdict(config)


def cmd_run(args: argparse.Namespace, out: TextIO) -> int:
    from pydantic import ValidationError

    from ..agents import RetryPolicy, RunSpec, execute_run  # the agents extra (httpx)
    from ..agents.errors import describe_validation_error

    if args.embed_model is not None:  # its replay-cache key needs the model's description first
        from ..contract import InvalidInputError

        raise InvalidInputError("--embed-model: not yet with drsearch run (the pinned model only); "
                                "search, eval, serve and mcp take it")
    try:
        spec = RunSpec(
            questions=args.questions, out=args.out, model=args.model, base_url=args.base_url,
            api_key_env=args.api_key_env, search_url=args.search, database=args.database,
            retriever=args.retriever, vectors=None if args.vectors is None else Path(args.vectors),
            rerank=_rerank(args),
            blocked_docids=None if args.blocked_docids in (None, NONE) else Path(args.blocked_docids),
            release_blocklist=policy(args.blocked_docids, args.override_release_blocklist),
            allow_missing_blocked=args.allow_missing_blocked,
            identity_check_every=args.identity_check_every,
            allow_unsandboxed_python=args.allow_unsandboxed_python,
            preset=args.preset, attempt=args.attempt,
            concurrency=args.concurrency,
            limit=args.limit, ids=tuple(args.ids or ()), shard=args.shard,
            cache_mode=args.cache_mode, cache=args.cache,
            replay_from=args.replay, quiet=args.quiet, prices=args.prices, max_cost_usd=args.max_cost,
            tool_snapshot=args.tool_snapshot, tool_endpoints=args.tool_endpoints,
            retry=RetryPolicy(max_attempts=args.max_attempts, backoff_s=args.backoff))
    except ValidationError as e:
        print(f"drsearch: error: {describe_validation_error(e, _OPTIONS)}", file=sys.stderr)
        return 2
    try:
        summary: dict[str, Any] = execute_run(spec)
    except KeyboardInterrupt:
        print(f"drsearch: interrupted: {_saved(spec.out)} finished episode(s) kept in {spec.out}; "
              "rerun the same command to resume", file=sys.stderr)
        return 130
    if args.json:
        print(json.dumps(summary, sort_keys=True), file=out)
    else:
        print(status_table(summary), file=out)
    return 1 if summary["statuses"].get("infra_error") or summary["io_errors"] else 0


_ROW_LABELS = {"answered": "answered", "empty_answer": "empty answer", "budget": "turn cap / budget",
               "model_error": "model error", "infra_error": "infrastructure failure",
               "not_run": "not run (--max-cost)"}


def status_table(summary: dict[str, Any]) -> str:
    """The summary as a table: one row per outcome (episodes, tokens, episode wall time), the
    resumed count and cache use, then every infrastructure failure and local I/O error."""
    rows = summary["outcomes"]
    lines = [f"{'outcome':<24}{'episodes':>9}{'tokens':>12}{'time_s':>10}"]
    for name, label in _ROW_LABELS.items():
        r = rows[name]
        lines.append(f"{label:<24}{r['episodes']:>9}{r['tokens']:>12}{r['wall_s']:>10.1f}")
    tokens, wall = sum(r["tokens"] for r in rows.values()), sum(r["wall_s"] for r in rows.values())
    lines.append(f"{'total':<24}{summary['questions']:>9}{tokens:>12}{wall:>10.1f}")
    cache = ", ".join(f"{kind} {c['hits']} hit(s) {c['misses']} miss(es) {c['stored']} stored"
                      for kind, c in summary["cache"].items()) or "off"
    lines.append(f"resumed {summary['resumed']} of {summary['questions']}; cache: {cache}; "
                 f"{summary['wall_s_this_invocation']:.1f} s this invocation")
    lines.extend(_cost_lines(summary.get("cost")))
    failures = summary["infra_failures"]
    if failures:
        lines.append(f"{len(failures)} infrastructure failure(s), not finished: "
                     "rerun the same command to retry")
        lines.extend(f"  {f['qid']}: {str(f['reason'])[:240]}" for f in failures)
    lines.extend(f"local I/O error: {e}" for e in summary["io_errors"])
    return "\n".join(lines)


def _cost_lines(cost: dict[str, Any] | None) -> list[str]:
    if cost is None:
        return []
    tokens = "; ".join(f"{m} {c['input_tokens']} in / {c['output_tokens']} out tokens {c['total_usd']} USD"
                       for m, c in cost["models"].items())
    lines = [f"cost {cost['total_usd']} USD ({tokens}; tool calls {cost['tool_calls_usd']} USD), "
             f"prices {cost['prices']['path']}"]
    budget = cost.get("budget")
    if budget and budget["not_run"]:
        lines.append(f"--max-cost {budget['max_cost_usd']} USD spent: {budget['not_run']} question(s) "
                     "not run (no answer, not graded); rerun with a larger --max-cost to run them")
    return lines


def _saved(out_dir: Path) -> int:
    """Complete lines in OUT/trajectories.jsonl (a torn last line is not one)."""
    try:
        return (out_dir / "trajectories.jsonl").read_bytes().count(b"\n")
    except OSError:
        return 0


def cmd_run_merge(args: argparse.Namespace, out: TextIO) -> int:
    from ..agents.shards import merge_runs  # the agents extra

    result = merge_runs(args.shards, args.out)
    if args.json:
        print(json.dumps(result, sort_keys=True), file=out)
    else:
        print(f"merged {result['shards']} shards, {result['episodes']} episodes into {result['out']}",
              file=out)
    return 0


MERGE_VERB = "run-merge"  # `drsearch run merge ...` is parsed as this verb (cli.main rewrites it)


def register(sub: Any) -> None:
    """Add the ``run`` verb (and ``run merge``) to the CLI's subparsers."""
    # No help=: argparse then lists no entry for it in `drsearch --help` (help=SUPPRESS
    # would print "==SUPPRESS==" there); `drsearch run merge` is what users type.
    m = sub.add_parser(MERGE_VERB, prog="drsearch run merge",
                       description="join the shard directories of one run into one run")
    m.add_argument("shards", nargs="+", type=Path, metavar="DIR",
                   help="the run directories of --shard 0/N .. N-1/N")
    m.add_argument("--out", required=True, type=Path, metavar="RUN",
                   help="the merged run directory (new or empty)")
    m.add_argument("--json", action="store_true", help="print the result as one JSON line")
    m.set_defaults(handler=cmd_run_merge)
    p = sub.add_parser("run", help="run an LLM agent on benchmark questions (see docs/AGENTS.md); "
                                   "`drsearch run merge DIR... --out RUN` joins --shard runs",
                       epilog="drsearch run merge DIR... --out RUN: join the run directories of "
                              "--shard 0/N .. N-1/N into one run (docs/AGENTS.md)")
    p.add_argument("--questions", required=True, type=Path, metavar="Q.jsonl", help="DR-256 question rows")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--search", metavar="URL", help="a drsearch server, e.g. http://127.0.0.1:8000")
    g.add_argument("--database", type=Path, metavar="CORPUS",
                   help="search an index file (or a release directory) in-process")
    add_blocklist_options(p)  # with --database (a server applies its own)
    add_retriever_options(p)  # with --database (a server ranks with its own)
    p.add_argument("--identity-check-every", type=int, default=0, metavar="N",
                   help="with --search behind a gateway that strips x-drsearch-identity: accept answers "
                        "without it and check the identity in /health's body after a random gap of "
                        "mean N answers (default 0: every answer must carry the header; docs/SCALING.md)")
    p.add_argument("--allow-unsandboxed-python", action="store_true",
                   help="run the python tool with resource limits only where this machine cannot "
                        "sandbox it (no user namespaces); default: refuse such a run (exit 2)")
    p.add_argument("--model", help="model name sent to the endpoint")
    p.add_argument("--base-url", metavar="URL", help="OpenAI-compatible base URL ending in /v1")
    p.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    p.add_argument("--out", required=True, type=Path, metavar="DIR",
                   help="run directory (resumed if present)")
    p.add_argument("--concurrency", type=int, default=1, help="episodes at once (default 1)")
    p.add_argument("--preset", metavar="NAME|FILE.json",
                   help="evaluation preset: a name (dr256, closed-book, openbiorq, openbiorq-web) or a JSON "
                        "file of preset fields, "
                        'e.g. {"base": "dr256", "name": "mine", "max_turns": 8, '
                        '"tools": ["search", "python"]} (default dr256; with --replay, the recorded run\'s)'),
    p.add_argument("--attempt", type=int, default=0, metavar="N",
                   help="repeated attempt N of the same questions (pass@k): the preset's seeds "
                        "move by N x 1,000,000 and its name gets -attemptN (default 0)")
    p.add_argument("--limit", type=int, help="only the first N selected questions")
    p.add_argument("--ids", nargs="+", metavar="QID", help="only these question ids")
    p.add_argument("--shard", metavar="I/N",
                   help="answer only shard I (0..N-1) of the selected questions: those whose "
                        "sha256(qid) mod N is I, the same on every machine; join the N run "
                        "directories with `drsearch run merge` (docs/SCALING.md)")
    p.add_argument("--cache-mode", default="record", choices=["off", "record", "replay", "replay-then-live"],
                   help="response cache (default record into DIR/cache.sqlite3)")
    p.add_argument("--cache", type=Path, metavar="FILE", help="cache file (default DIR/cache.sqlite3)")
    p.add_argument("--replay", type=Path, metavar="RUN_DIR",
                   help="answer every model and tool call from RUN_DIR's cache (offline)")
    p.add_argument("--tool-snapshot", type=Path, metavar="SNAP",
                   help="answer the biomedical tools' calls from this frozen tool snapshot (`drsearch "
                        "snapshot freeze`): with --cache-mode replay (or --replay) a call it lacks is an "
                        "infrastructure failure; with replay-then-live it is made live and DIR/tool-snapshot "
                        "is written: SNAP extended by those calls")
    p.add_argument("--tool-endpoints", type=Path, metavar="FILE.json",
                   help='base URL per biomedical tool, e.g. {"pubmed": "http://127.0.0.1:8300"} '
                        "(`drsearch dev apis` prints one); default: the public services")
    p.add_argument("--max-attempts", type=int, default=6, help="tries per model call (default 6)")
    p.add_argument("--backoff", type=float, default=1.0, metavar="S", help="first retry wait (default 1 s)")
    p.add_argument("--prices", type=Path, metavar="FILE",
                   help="price file (JSON or TOML: USD per million input/output tokens per model, per "
                        "tool call): the run's cost goes into run.json (docs/AGENTS.md, Cost)")
    p.add_argument("--max-cost", type=_usd, metavar="USD",
                   help="with --prices: start no episode once the run's episodes cost this much; the "
                        "rest are recorded not_run (a rerun with a larger budget runs them)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true",
                   help="print the run summary as one JSON line instead of the status table")
    p.set_defaults(handler=cmd_run)


def _usd(text: str) -> float:
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of USD: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a number of USD >= 0, got {text}")
    return value
