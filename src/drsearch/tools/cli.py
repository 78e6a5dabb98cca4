"""``drsearch <verb>``: a thin argparse front end over the library.

Exit codes: 0 success; 2 bad usage or input (argparse, InvalidInputError, CorpusFileError)
or a missing optional extra (MissingExtraError, extras.py); 1 other failures (not found,
timeouts, build errors); 130 interrupted. Errors are one line on stderr, never a traceback.

Building the parser imports only the core install (``drsearch --help`` lists every verb on
``pip install drsearch``): the verb modules import what needs an extra inside their command
functions.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from .. import __version__
from ..contract import (
    DEFAULT_TIME_LIMIT_S,
    MAX_K,
    CorpusFileError,
    DrsearchError,
    InvalidInputError,
    Retriever,
    canonical_json,
    number_from_text,
    parse_open,
    parse_search,
)
from ..index import BlockList, Engine, build, locate, policy_for, read_jsonl
from .argtypes import build_threads, int_in, seconds
from .binding import add_connection_arguments, check_bindable
from .blocking import (
    add_blocklist_options,
    requested_blocklist,
    serve_blocklist,
    show_release_warnings,
)
from .cache_cli import register as register_cache_verb
from .calibrate_cli import register as register_calibrate_verb
from .construct_cli import register as register_construct_verbs
from .corpus_cli import register as register_corpus_verbs
from .dedup_cli import register as register_dedup_verb
from .dev_cli import register as register_dev_verb
from .embed_cli import add_retriever_options, chosen_spec, open_checked, open_chosen, rerank_config
from .embed_cli import register as register_embed_verb
from .extras import missing_extra
from .generate_cli import register as register_generate_verb
from .kg_cli import register as register_kg_verb
from .mcp_cli import register as register_mcp_verb
from .progress import StageBars
from .release_cli import register as register_release_verbs
from .report_cli import register as register_report_verb
from .run_cli import MERGE_VERB
from .run_cli import register as register_run_verb
from .score_cli import register as register_score_verb
from .shard_cli import add_build_shard_options, build_shards_cli, serve_shards
from .shard_cli import register as register_shard_verb
from .snapshot_cli import register as register_snapshot_verb
from .trec_cli import add_batch_options, cmd_search_topics
from .trec_cli import register as register_eval_verb

Handler = Callable[[argparse.Namespace, TextIO], int]


def _engine(args: argparse.Namespace, *, check_blocklist: bool = True) -> Engine:
    """The engine of ``--database`` with ``--blocked-docids`` (a release's own list by default,
    ``drsearch.index.releases``); refuses (BlocklistError, exit 2) a blocklist naming docids
    the corpus lacks unless ``--allow-missing-blocked``."""
    listed, policy = requested_blocklist(args)
    engine = Engine.open(args.database, listed, release_blocklist=policy)
    if check_blocklist and not getattr(args, "allow_missing_blocked", False):
        try:
            engine.check_blocklist_complete()
        except BaseException:
            engine.close()
            raise
    return engine


def _retriever(args: argparse.Namespace) -> Retriever:
    """The retriever ``--retriever`` names (the engine for bm25), its blocklist checked as
    :func:`_engine` checks it."""
    listed, policy = requested_blocklist(args)
    return open_checked(args, listed, policy, check_blocklist=not args.allow_missing_blocked)


def cmd_build(args: argparse.Namespace, out: TextIO) -> int:
    from ..index import BuildSettings  # pydantic: only for the verbs that build

    settings = BuildSettings(tokenizer=args.tokenizer, threads=args.threads)
    if args.shards is not None:
        return build_shards_cli(args, settings, out)
    split_only = [flag for flag, given in (("--blocked-docids", args.blocked_docids is not None),
                                           ("--allow-missing-blocked", args.allow_missing_blocked)) if given]
    if split_only:
        raise InvalidInputError(f"{', '.join(split_only)}: only with --shards (a plain index takes its "
                                "blocklist when served)")
    bars = StageBars(args.quiet)
    exclude = BlockList.from_file(args.exclude_docids) if args.exclude_docids else None
    try:  # the bar opens once the documents are read, so early errors print one clean line
        report = build(read_jsonl(args.docs), args.out, settings, overwrite=args.force,
                       progress=bars.build if bars.draw else None,
                       on_start=bars.build_start if bars.draw else None, exclude=exclude)
    finally:
        bars.close()
    if args.json:
        print(canonical_json(report.to_dict()), file=out)
        return 0
    print(
        f"built {report.path}: {report.documents} documents ({report.empty_documents} empty), "
        f"{report.chunks} chunks, {report.vocabulary} terms, identity {report.content_identity}",
        file=out,
    )
    if exclude is not None:
        print(f"excluded {report.excluded_documents} of {len(exclude)} docids in {args.exclude_docids} "
              f"(sha256 {exclude.sha256})", file=out)
    return 0


def cmd_search(args: argparse.Namespace, out: TextIO) -> int:
    if args.topics is not None:
        return cmd_search_topics(args, out)
    if args.query is None:
        raise InvalidInputError("give a QUERY, or --topics TOPICS.tsv --output RUN.trec")
    batch_only = [flag for flag, given in (("--output", args.output is not None), ("--force", args.force),
                                           ("--threads", args.threads != 1),
                                           ("--run-tag", args.run_tag != "drsearch")) if given]
    if batch_only:
        raise InvalidInputError(f"{', '.join(batch_only)}: only with --topics")
    # checked as POST /search checks its body (the request contract; --k read as a JSON number)
    request = parse_search(_given(query=args.query, k=args.k))
    retriever = _retriever(args)
    try:
        result = retriever.search(request.query, request.k)
    finally:
        retriever.close()
    if args.json:
        print(canonical_json(result.to_dict()), file=out)
        return 0
    if not result.hits:
        print("no results", file=out)
    for h in result.hits:
        print(f"{h.rank:>3}. {h.score:8.4f}  {h.docid}  {h.url}", file=out)
        if h.title:
            print(f"     {h.title}", file=out)
        print(f"     {h.snippet}", file=out)
    return 0


def _given(**options: str | None) -> dict[str, object]:
    """The options given, as the request body they stand for: numbers read as the JSON
    numbers an HTTP body would carry (``5``, ``5.0``; ``true`` and ``5.5`` then refused by
    the contract, as over HTTP), text as text."""
    numeric = {"k", "offset", "length"}
    return {key: number_from_text(value) if key in numeric else value
            for key, value in options.items() if value is not None}


def cmd_open(args: argparse.Namespace, out: TextIO) -> int:
    # checked as POST /open checks its body: exit 2 where the server answers 422
    request = parse_open(_given(docid=args.docid, url=args.url, offset=args.offset, length=args.length))
    offset, length = request.offset, request.length
    with _engine(args) as engine:
        doc = engine.open_document(docid=request.docid, url=request.url)
    if args.json:  # the body of POST /open with the same offset/length, byte for byte
        print(canonical_json(doc.to_dict(offset, length)), file=out)
        return 0
    page = doc.to_dict(offset, length)
    print(f"{doc.docid}  {doc.url}\n{doc.title}\n\n{page['text']}", file=out)
    if page["next_offset"] is not None or offset:
        end = offset + len(page["text"])
        more = f"; next page: --offset {page['next_offset']}" if page["next_offset"] is not None else ""
        print(f"\n[characters {min(offset, end)}-{end} of {page['total_length']}{more}]", file=out)
    return 0


def cmd_stats(args: argparse.Namespace, out: TextIO) -> int:
    with _engine(args, check_blocklist=False) as engine:  # reports listed and matched counts
        stats = engine.stats()
    if args.json:
        print(canonical_json(stats), file=out)
        return 0
    for key, value in stats.items():
        print(f"{key:>20}: {canonical_json(value) if isinstance(value, dict) else value}", file=out)
    return 0




def _release_of(args: argparse.Namespace) -> tuple[Path, Path | None]:
    """The database file and the release directory it belongs to: ``--release-dir``, or as
    every verb finds it (``drsearch.index.releases.locate``: DIR/search/corpus.sqlite3 beside
    DIR/manifest.json, or DIR itself)."""
    database, release = locate(args.database)
    if args.release_dir is not None:
        root = Path(args.release_dir).resolve()
        if database.resolve() != root / "search" / "corpus.sqlite3":
            raise InvalidInputError(f"--database {args.database} is not the corpus of release "
                                    f"{args.release_dir} (expected {root / 'search' / 'corpus.sqlite3'})")
        return database, root
    return database, None if release is None else release.root


def _validate_release_before_serving(root: Path, deep: bool) -> None:
    """Run ``drsearch validate`` on the release; raise on the first failed check."""
    from ..release import validate_release

    print(f"drsearch: validating release {root}{' (deep)' if deep else ''} before serving",
          file=sys.stderr)
    report = validate_release(root, deep=deep)
    failed = [c for c in report.checks if c.status == "FAIL"]
    if failed:
        raise CorpusFileError(f"release {root} failed validation ({len(failed)} check(s)): "
                              f"{failed[0].name}: {failed[0].message}")
    print(f"drsearch: release {root}: {report.count('PASS')} checks passed", file=sys.stderr)


def _resolved_model(model: str | None) -> str | None:
    """``--embed-model`` as a worker (another working directory) finds it: a path made absolute."""
    if model is None or not Path(model).exists():
        return model
    return str(Path(model).resolve())


def cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    # the server extra, imported first: without it, one line naming it before any other check
    from ..server import ServeConfig, ServerSettings, open_verified, serve

    if args.shards:
        return serve_shards(args)
    if args.database is None:
        raise InvalidInputError("serve needs --database CORPUS (or --shards URL... for a broker)")

    check_bindable(args.host, args.port)
    args.database, release_dir = _release_of(args)
    chosen = serve_blocklist(args.blocked_docids, release_dir, args.override_release_blocklist)
    blocklist = None if chosen.path is None else BlockList.from_file(chosen.path)
    if release_dir is not None and args.verify != "none":
        _validate_release_before_serving(release_dir, args.verify == "deep")
    policy = policy_for(chosen.origin)
    settings = ServerSettings(max_k=args.max_k, time_limit_s=args.time_limit,
                              max_query_terms=args.max_query_terms, idle_timeout_s=args.idle_timeout,
                              header_timeout_s=args.header_timeout, max_header_bytes=args.max_header_bytes,
                              max_connections=args.max_connections,
                              max_client_connections=args.max_client_connections,
                              max_batch_queries=args.max_batch_queries, batch_threads=args.batch_threads,
                              max_batch_results=args.max_batch_results,
                              max_response_bytes=args.max_response_bytes)
    rerank = rerank_config(args)
    # one engine for every check of this process; a single worker (uvicorn in this process)
    # serves on it; several workers open their own (one each)
    engine, report = open_verified(args.database, args.verify, blocklist, release_blocklist=policy,
                                   require_complete=not args.allow_missing_blocked,
                                   time_limit_s=settings.time_limit_s)
    plain_bm25 = str(chosen_spec(args)) == "bm25" and rerank is None
    if args.workers != 1 or not plain_bm25:
        engine.close()
    if not plain_bm25:  # vectors, model, reranker: before any worker
        open_chosen(args, blocklist, release_blocklist=policy).close()
    where = f"http://{args.host}:{args.port}"
    print(f"drsearch: serving {report.path} (identity {report.identity}, {report.documents} documents, "
          f"{report.chunks} chunks; verify={args.verify}) on {where} with {args.workers} worker(s)",
          file=sys.stderr)
    if blocklist is None:
        why = "no --blocked-docids" if args.blocked_docids is None else "--blocked-docids none"
        print(f"drsearch: {why}: every document is served (no blocklist)", file=sys.stderr)
    else:
        print(f"drsearch: blocklist {chosen.path} ({chosen.origin}): {len(blocklist)} docids "
              f"({report.blocked_documents} in this corpus), sha256 {blocklist.sha256}", file=sys.stderr)
    if args.verify == "fast":
        print("drsearch: deep verification runs in the background at low priority "
              "(its state on /health: pending, ok, failed)", file=sys.stderr)
    config = ServeConfig(database=report.path.resolve(), settings=settings,
                         blocked_docids=None if chosen.path is None else chosen.path.resolve(),
                         blocklist_sha256=None if blocklist is None else blocklist.sha256,
                         blocklist_origin=chosen.origin, release_blocklist_sha256=chosen.release_sha256,
                         retriever=str(chosen_spec(args)),
                         rerank=None if rerank is None else dataclasses.asdict(rerank),
                         vectors=None if args.vectors is None else Path(args.vectors).resolve(),
                         embed_model=_resolved_model(args.embed_model))
    serve(config, host=args.host, port=args.port, workers=args.workers, log_level=args.log_level,
          access_log=args.access_log, verified=args.verify,
          engine=engine if args.workers == 1 and plain_bm25 else None)
    return 0


def _database_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--database", required=True, metavar="CORPUS",
                   help="index file (.sqlite3), or a release directory (its search/corpus.sqlite3)")
    add_blocklist_options(p)
    p.add_argument("--json", action="store_true", help="print the HTTP response body (JSON)")


def make_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="drsearch", description=__doc__.splitlines()[0],
                                 epilog="One verb per job: README.md, \"Which verb does what\". "
                                        "`drsearch VERB --help` for a verb's options.")
    ap.add_argument("--version", action="version", version=f"drsearch {__version__}")
    sub = ap.add_subparsers(dest="verb", required=True, metavar="VERB")

    p = sub.add_parser("build", help="build a frozen index from documents (JSONL)")
    p.add_argument("docs", metavar="DOCS.jsonl", help='lines of {"docid","url","title","text"}')
    p.add_argument("--out", required=True, metavar="CORPUS.sqlite3",
                   help="index file to write (its directory must exist); with --shards the directory "
                        "for shard-I-of-S.sqlite3 (must exist)")
    p.add_argument("--tokenizer", choices=["porter", "unicode61"], default="porter",
                   help="FTS5 tokenizer (default porter: porter unicode61)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the build report as JSON")
    p.add_argument("--exclude-docids", metavar="FILE",
                   help="leave these documents out (a blocklist file): physically absent, so BM25 "
                        "statistics do not count them; the exclusion is recorded in the file's meta")
    p.add_argument("--threads", type=build_threads, default=1, metavar="N",
                   help="1 (default) or 2: tokenize in a worker process alongside SQLite's writes; "
                        "the file is the same bytes either way")
    add_build_shard_options(p)
    p.set_defaults(handler=cmd_build)

    p = sub.add_parser("search", help="search an index (one query, or --topics to a TREC run file)")
    _database_args(p)
    p.add_argument("--k", metavar="K", default=None,
                   help="results to return (1..100, default 10; with --topics 1..10000, default 1000)")
    p.add_argument("query", metavar="QUERY", nargs="?", help="free text (never query syntax)")
    add_batch_options(p)
    add_retriever_options(p)
    p.set_defaults(handler=cmd_search)

    p = sub.add_parser("open", help="print a document")
    _database_args(p)
    # exactly one of --docid/--url: checked by the request contract, as POST /open checks it
    p.add_argument("--docid", help="the document's docid (give it or --url)")
    p.add_argument("--url", help="any spelling of any of its URLs (canonicalised)")
    p.add_argument("--offset", metavar="N", help="first character of the text to print (>= 0; default 0)")
    p.add_argument("--length", metavar="N", help="characters of text to print (>= 1; default all)")
    p.set_defaults(handler=cmd_open)

    p = sub.add_parser("stats", help="index statistics")
    _database_args(p)
    p.set_defaults(handler=cmd_stats)

    p = sub.add_parser("serve", help="serve an index over HTTP (see docs/SERVER.md)")
    p.add_argument("--database", metavar="CORPUS", help="index file (.sqlite3); required unless --shards")
    p.add_argument("--shards", nargs="+", metavar="URL",
                   help="serve a broker over these shard servers instead (docs/SCALING.md)")
    add_blocklist_options(p)  # serve: the choice is also shown in /health (blocklist.origin)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--port", type=int_in(0, 65535), default=8000, help="port (default 8000)")
    p.add_argument("--workers", type=int_in(1, 512), default=1, help="worker processes (default 1)")
    p.add_argument("--log-level", default="info",
                   choices=["critical", "error", "warning", "info", "debug", "trace"],
                   help="log level of uvicorn and the drsearch logger (default info)")
    p.add_argument("--access-log", action="store_true", help="log every request (costs throughput)")
    p.add_argument("--max-k", type=int_in(1, MAX_K), default=MAX_K,
                   help=f"largest k a search may ask for (1..{MAX_K}; default {MAX_K})")
    # --request-timeout: the flag's former name, a deprecated alias (docs/SERVER.md)
    p.add_argument("--time-limit", "--request-timeout", dest="time_limit", type=seconds(3600),
                   default=DEFAULT_TIME_LIMIT_S, metavar="S",
                   help="time limit of one request in seconds, body to encoding (503 past it; default 10; "
                        "--request-timeout is its deprecated old name)")
    p.add_argument("--max-query-terms", type=int_in(1, 1024), default=1024, metavar="N",
                   help="most distinct terms in a query (422 beyond; default 1024)")
    add_connection_arguments(p)
    p.add_argument("--max-batch-queries", type=int_in(1, 10_000), default=512, metavar="N",
                   help="most queries in one POST /retrieve (422 beyond; default 512: Search-R1's "
                        "training batch)")
    p.add_argument("--max-batch-results", type=int_in(1, 10_000_000), default=5120, metavar="N",
                   help="most results in one POST /retrieve, queries × topk (422 beyond; default 5120: "
                        "the most queries at the default k)")
    p.add_argument("--max-response-bytes", type=int_in(64 << 10, 1 << 30), default=16 << 20, metavar="N",
                   help="largest POST /retrieve answer in bytes (422 response_too_large beyond; "
                        "default 16777216)")
    p.add_argument("--batch-threads", type=int_in(1, 256), default=4, metavar="N",
                   help="threads per worker running a /retrieve batch's queries (default 4)")
    p.add_argument("--verify", choices=["none", "fast", "deep"], default="fast",
                   help="checks before serving: fast = schema, application id, size, identity (and "
                        "`drsearch validate` of the release the database belongs to); deep = fast + "
                        "PRAGMA quick_check + FTS5 integrity-check (+ validate --deep) (default fast)")
    p.add_argument("--release-dir", metavar="DIR",
                   help="the release the database belongs to (default: found when the database is "
                        "DIR/search/corpus.sqlite3 beside DIR/manifest.json)")
    add_retriever_options(p)
    p.set_defaults(handler=cmd_serve)

    register_shard_verb(sub)  # shard (shard_cli.py, drsearch.index.shards)
    register_release_verbs(sub)  # release manifest|assemble, validate (release_cli.py, drsearch.release)
    register_corpus_verbs(sub)  # corpus fetch|extract|build, import (corpus_cli.py)
    register_construct_verbs(sub)  # construct consolidate|urls|answers|artifacts|audit (construct_cli.py)
    register_run_verb(sub)  # run (run_cli.py, drsearch.agents)
    register_cache_verb(sub)  # cache verify|upgrade (cache_cli.py, drsearch.agents.replay)
    register_snapshot_verb(sub)  # snapshot freeze|verify|coverage (snapshot_cli.py, drsearch.agents.snapshot)
    register_score_verb(sub)  # score (score_cli.py, drsearch.benchmark)
    register_report_verb(sub)  # report (report_cli.py, drsearch.benchmark.report)
    register_calibrate_verb(sub)  # calibrate (calibrate_cli.py, drsearch.benchmark.generate)
    register_dedup_verb(sub)  # dedup (dedup_cli.py, drsearch.benchmark.generate)
    register_kg_verb(sub)  # kg serve (kg_cli.py, drsearch.benchmark.generate.drbencher)
    register_generate_verb(sub)  # generate drbencher|openbiorq (generate_cli.py, openbiorq_cli.py)
    register_embed_verb(sub)  # embed (embed_cli.py, drsearch.dense)
    register_eval_verb(sub)  # eval (trec_cli.py, drsearch.compat)
    register_mcp_verb(sub)  # mcp (mcp_cli.py, drsearch.mcpserver)
    register_dev_verb(sub)  # dev model|wait (dev_cli.py, drsearch.dev)
    _name_commands(ap)
    return ap


def _name_commands(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()) -> None:
    """Record in each command's defaults its name (``corpus fetch``), the one its errors give."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                _name_commands(child, (*words, name))
    if parser.get_default("handler") is not None:
        name = " ".join(words)  # `run merge` is parsed as a verb of its own: named as typed
        parser.set_defaults(command="run merge" if name == MERGE_VERB else name)


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:2] == ["run", "merge"]:  # a verb of its own: `run` itself takes options, not verbs
        words = [MERGE_VERB, *words[2:]]
    args = make_parser().parse_args(words)
    handler: Handler = args.handler
    show_release_warnings()
    try:
        return handler(args, out or sys.stdout)
    except DrsearchError as e:
        print(f"drsearch: error: {e.message}", file=sys.stderr)
        return e.exit_code
    except ModuleNotFoundError as e:  # an optional extra the command needs is not installed
        missing = missing_extra(args.command, e)
        if missing is None:  # no extra's module: a broken install or a bug, reported as it is
            print(f"drsearch: internal error: {e.__class__.__name__}: {e}", file=sys.stderr)
            return 1
        print(f"drsearch: error: {missing.message}", file=sys.stderr)
        return missing.exit_code
    except KeyboardInterrupt:
        print("drsearch: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
    except Exception as e:  # last resort: one line, never a traceback
        print(f"drsearch: internal error: {e.__class__.__name__}: {e}", file=sys.stderr)
        return 1


def entry() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry()
