"""``drsearch search --topics`` (batch retrieval to a TREC run file) and ``drsearch eval``.

A run file is the same bytes for any ``--threads`` (queries are ranked independently and
written in topic order) and appears whole or not at all (written with the atomic helper).
An existing run file is replaced only with ``--force``: nothing already written is lost.
"""

from __future__ import annotations

import argparse
import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ..compat import LuceneSearcher, check_run_field, evaluate, read_qrels, read_run, read_topics, run_lines
from ..compat.pyserini import Hit
from ..contract import MAX_RUN_K, InvalidInputError, canonical_json, check_k, number_from_text
from ..contract.atomic import atomic_output
from .argtypes import int_in
from .blocking import add_blocklist_options, requested_blocklist
from .embed_cli import add_retriever_options, chosen_spec, open_chosen, rerank_config
from .progress import progress_bar

RUN_K_DEFAULT = 1000


def _check_output(path: Path, force: bool) -> None:
    if path.is_dir():
        raise InvalidInputError(f"--output {path} is a directory")
    if not path.parent.is_dir():
        raise InvalidInputError(f"--output: directory {path.parent} does not exist (create it first)")
    if path.exists() and not force:
        raise InvalidInputError(f"--output {path} exists (pass --force to replace it)")


def _ranked(searcher: LuceneSearcher, topics: list[tuple[str, str]], k: int, threads: int,
            bar: Any) -> Iterator[tuple[str, list[Hit]]]:
    """Each topic's hits in topic order, ``threads`` queries at a time."""
    qids = [q for q, _ in topics]
    step = max(1, threads) * 8  # small batches: the bar moves, memory stays bounded
    for start in range(0, len(topics), step):
        chunk = topics[start : start + step]
        answers = searcher.batch_search([t for _, t in chunk], qids[start : start + step], k, threads)
        yield from answers.items()
        bar.update(len(chunk))


def cmd_search_topics(args: argparse.Namespace, out: TextIO) -> int:
    if args.query is not None:
        raise InvalidInputError("give either QUERY or --topics, not both")
    if args.output is None:
        raise InvalidInputError("--topics needs --output RUN.trec")
    k = RUN_K_DEFAULT if args.k is None else check_k(number_from_text(args.k), MAX_RUN_K)
    output = Path(args.output)
    _check_output(output, args.force)
    topics = read_topics(args.topics)
    check_run_field("run tag", args.run_tag)  # before any query runs: a bad tag must not cost a batch
    bl, policy = requested_blocklist(args)
    spec = chosen_spec(args)
    with contextlib.ExitStack() as stack:
        searcher = _searcher(args, bl, policy, stack)
        lines, queries_without_hits = _write_run(searcher, topics, k, args, output)
    summary = {"lines": lines, "output": str(output), "queries": len(topics),
               "queries_without_results": queries_without_hits, "k": k, "run_tag": args.run_tag,
               **({"retriever": str(spec)} if str(spec) != "bm25" else {})}
    if args.json:
        print(canonical_json(summary), file=out)
    else:
        print(f"wrote {output}: {len(topics)} queries, {lines} lines "
              f"({queries_without_hits} queries without results), tag {args.run_tag}", file=out)
    return 0


def _searcher(args: argparse.Namespace, bl: Any, policy: Any, stack: contextlib.ExitStack) -> LuceneSearcher:
    """The batch searcher over ``--database`` with ``--retriever`` (closed by ``stack``)."""
    spec = chosen_spec(args)
    rerank_config(args)  # --rerank-* without +rerank: exit 2 before any query
    if str(spec) == "bm25":  # the engine, as before
        searcher = LuceneSearcher(args.database, blocked_docids=bl, release_blocklist=policy)
    else:  # the retriever applies the blocklist (LuceneSearcher leaves it the caller's to close)
        opened = open_chosen(args, bl, release_blocklist=policy)
        stack.enter_context(contextlib.closing(opened))
        searcher = LuceneSearcher(opened)
    return stack.enter_context(searcher)


def _write_run(searcher: LuceneSearcher, topics: list[tuple[str, str]], k: int, args: argparse.Namespace,
               output: Path) -> tuple[int, int]:
    """The run file of ``topics``, written whole or not at all: (lines, queries without hits)."""
    lines = queries_without_hits = 0
    with progress_bar("searching", " query", len(topics), quiet=args.quiet) as bar, \
            atomic_output(output) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8", newline="\n")
        for qid, hits in _ranked(searcher, topics, k, args.threads, bar):
            queries_without_hits += not hits
            for line in run_lines({qid: [(h.docid, h.score) for h in hits]}, args.run_tag):
                text.write(line)
                lines += 1
        text.flush()
        text.detach()
    return lines, queries_without_hits


def _ranked_run(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """``--topics`` ranked over ``--database`` with ``--retriever`` (the ``--k`` best of each),
    as a run: ``{qid: {docid: score}}``."""
    if args.database is None or args.topics is None:
        raise InvalidInputError("give --run RUN.trec, or --database CORPUS and --topics TOPICS.tsv")
    k = RUN_K_DEFAULT if args.k is None else check_k(number_from_text(args.k), MAX_RUN_K)
    topics = read_topics(args.topics)
    bl, policy = requested_blocklist(args)
    run: dict[str, dict[str, float]] = {}
    with contextlib.ExitStack() as stack:
        searcher = _searcher(args, bl, policy, stack)
        with progress_bar("searching", " query", len(topics), quiet=args.quiet) as bar:
            for qid, hits in _ranked(searcher, topics, k, args.threads, bar):
                run[qid] = {h.docid: h.score for h in hits}
    return run


def cmd_eval(args: argparse.Namespace, out: TextIO) -> int:
    qrels = read_qrels(args.qrels)  # first: a bad qrels file is named before any run is read or ranked
    if args.run is not None:
        given = [flag for flag, v in (("--database", args.database), ("--topics", args.topics),
                                      ("--k", args.k)) if v is not None]
        if given or args.retriever != "bm25":
            raise InvalidInputError(f"{', '.join(given) or '--retriever'}: not with --run (it scores a run "
                                    "file; --database/--topics rank one)")
        run = read_run(args.run)
    else:
        run = _ranked_run(args)
    result = evaluate(qrels, run)
    if args.json:
        body = result.to_dict()
        if args.run is None:
            body["retriever"] = str(chosen_spec(args))
        if not args.per_query:
            del body["per_query"]
        print(canonical_json(body), file=out)
        return 0
    if args.per_query:
        for qid, measures in result.per_query.items():
            print("\t".join([qid, *(f"{m}={v:.4f}" for m, v in measures.items())]), file=out)
    for m, v in result.means.items():
        print(f"{m:<12} {v:.4f}", file=out)
    print(f"{'queries':<12} {result.queries} ({result.missing} missing from the run, scored 0; "
          f"{result.ignored} run queries without relevant judgments ignored)", file=out)
    return 0




def add_batch_options(p: argparse.ArgumentParser) -> None:
    """The batch options of ``drsearch search``."""
    p.add_argument("--topics", metavar="TOPICS.tsv",
                   help="batch mode: one 'qid<TAB>query' per line, written to --output as a TREC run")
    p.add_argument("--output", metavar="RUN.trec", help="run file to write ('qid Q0 docid rank score tag')")
    p.add_argument("--threads", type=int_in(1, 256), default=1, help="queries searched at once (default 1)")
    p.add_argument("--run-tag", default="drsearch", help="last column of the run file (default drsearch)")
    p.add_argument("--force", action="store_true", help="replace an existing --output")
    p.add_argument("--quiet", action="store_true", help="no progress bar (drawn only on a terminal)")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``drsearch eval``."""
    p = sub.add_parser("eval", help="score a TREC run (or --topics ranked with --retriever) against qrels "
                                    "(nDCG@10, MAP, P@10, recall@1000)")
    p.add_argument("--qrels", required=True, metavar="QRELS", help="'qid iteration docid relevance' lines")
    p.add_argument("--run", metavar="RUN.trec", help="'qid Q0 docid rank score tag' lines (or rank --topics "
                   "over --database with --retriever)")
    p.add_argument("--database", metavar="CORPUS", default=None,
                   help="instead of --run: rank --topics over this index with --retriever, then score")
    p.add_argument("--topics", metavar="TOPICS.tsv", default=None,
                   help="with --database: 'qid<TAB>query' lines")
    p.add_argument("--k", metavar="K", default=None, help="with --database: results a query (default 1000)")
    p.add_argument("--threads", type=int_in(1, 256), default=1, help="with --database: queries at once")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_blocklist_options(p)
    add_retriever_options(p)
    p.add_argument("--per-query", action="store_true", help="also print each query's measures")
    p.add_argument("--json", action="store_true", help="print the evaluation as JSON")
    p.set_defaults(handler=cmd_eval)


__all__ = ["RUN_K_DEFAULT", "add_batch_options", "cmd_eval", "cmd_search_topics", "register"]
