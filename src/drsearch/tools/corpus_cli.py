"""The corpus verbs: ``drsearch corpus fetch|extract|build`` (URLs → crawl → docs → corpus) and
``drsearch import`` (another tool's SQLite table or JSONL file → corpus).

``corpus build --urls URLS.txt --out CORPUS`` runs all three (drsearch.corpus.pipeline), into
``--crawl-dir`` (default ``CORPUS.crawl/``), resumable like ``corpus fetch``.

``register(sub)`` adds the ``corpus`` and ``import`` verbs to the main parser (cli.py calls it). Handlers
follow cli.py's contract: an exit code, DrsearchError for bad input (one line on stderr).
Problems that do not stop a stage (malformed URL lines, bad record or document lines) are
printed as warnings on stderr, at most ``_MAX_WARNINGS`` of them, and counted in the reports.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..contract import InvalidInputError, canonical_json
from .progress import StageBars, byte_bars, chunk_progress

if TYPE_CHECKING:  # fetching needs the agents extra (httpx): imported by the commands that fetch
    from ..corpus import ChunkMapping, ColumnMapping, CorpusBuild, FetchSettings, SourceInfo
    from ..index import BuildSettings

# The corpus pipeline, the index builder and the release pins are imported by the commands that
# use them, not when the parser is built: every `drsearch` command builds it (`drsearch search`
# answering its first query in a fresh process is the cold start of docs/SERVER.md).

_MAX_WARNINGS = 20
_SQLITE_OPTIONS = ("table", "docid_col", "url_col", "title_col", "text_col")
_JSON_HELP = "print the stage's report as one JSON object (sorted keys) instead of the summary line"


def _warn(problems: Iterable[str]) -> None:
    problems = list(problems)
    for p in problems[:_MAX_WARNINGS]:
        print(f"drsearch: warning: {p}", file=sys.stderr)
    if len(problems) > _MAX_WARNINGS:
        print(f"drsearch: warning: … and {len(problems) - _MAX_WARNINGS} more", file=sys.stderr)


_FETCH_OPTIONS: tuple[tuple[str, type, Any, str], ...] = (
    ("--concurrency", int, 16, "requests at once (default 16)"),
    ("--per-host", int, 2, "requests at once per host (default 2)"),
    ("--timeout", float, 20.0, "seconds per request (default 20)"),
    ("--retries", int, 3, "retries on 408/429/5xx/network errors (default 3)"),
    ("--max-bytes", int, 10 * 1024 * 1024, "largest body (default 10 MiB)"),
    ("--max-redirects", int, 5, "redirects followed (default 5)"),
)


def _add_fetch_args(p: argparse.ArgumentParser, *, only_with_urls: bool = False) -> None:
    """The fetch options; ``only_with_urls`` (corpus build) leaves them unset unless given, so
    that giving one without ``--urls`` can be refused."""
    for flag, kind, default, text in _FETCH_OPTIONS:
        p.add_argument(flag, type=kind, default=argparse.SUPPRESS if only_with_urls else default,
                       help=("with --urls: " if only_with_urls else "") + text)
    p.add_argument("--ignore-robots", action="store_true",
                   default=argparse.SUPPRESS if only_with_urls else False,
                   help=("with --urls: " if only_with_urls else "") + "do not fetch or obey robots.txt")


def _fetch_settings(args: argparse.Namespace) -> FetchSettings:
    from ..corpus import FetchSettings

    given = {flag: getattr(args, flag[2:].replace("-", "_"), default)
             for flag, _, default, _ in _FETCH_OPTIONS}
    return FetchSettings(concurrency=given["--concurrency"], per_host=given["--per-host"],
                         timeout_s=given["--timeout"], retries=given["--retries"],
                         max_bytes=given["--max-bytes"], max_redirects=given["--max-redirects"],
                         obey_robots=not getattr(args, "ignore_robots", False))


def _fetch_line(summary: dict[str, Any], crawl: object) -> str:
    run = summary["run"]
    return (f"asked for {run['attempted']} URLs into {crawl}: {run['ok']} ok, {run['failed']} failed, "
            f"{run['disallowed']} disallowed by robots.txt; {summary['already_fetched']} already fetched, "
            f"{summary['malformed_url_lines']} malformed line(s) skipped")


def _extract_line(report: dict[str, Any], docs: object) -> str:
    return (f"extracted {report['extracted']} documents to {docs} "
            f"from {report['url_records']} URL records: "
            f"{report['extraction_empty']} empty, {report['skipped']} skipped, {report['failed']} failed, "
            f"{report['robots_disallowed']} disallowed")


def _build_line(result: CorpusBuild, out_path: str) -> str:
    c = result.coverage
    return (f"built {result.report.path}: {c['documents']} documents ({c['duplicates']} duplicates merged, "
            f"{c['rejected_documents']} lines rejected), {c['chunks']} chunks; reports in "
            f"{os.path.dirname(os.path.abspath(out_path))}")


def cmd_fetch(args: argparse.Namespace, out: TextIO) -> int:
    from ..corpus import fetch_urls

    bars = StageBars(args.quiet)
    try:
        summary = fetch_urls(args.urls, args.out, _fetch_settings(args), progress=bars.fetch,
                             on_start=bars.fetch_start)
    finally:
        bars.close()
    _warn(summary["problems"])
    print(canonical_json(summary) if args.json else _fetch_line(summary, args.out), file=out)
    return 0


def cmd_extract(args: argparse.Namespace, out: TextIO) -> int:
    from ..corpus import ExtractSettings, extract_crawl

    settings = ExtractSettings(workers=args.workers, favor_precision=not args.no_favor_precision)
    bars = StageBars(args.quiet)
    try:
        report = extract_crawl(args.crawl, args.out, settings, overwrite=args.force, progress=bars.extract,
                               on_start=bars.extract_start)
    finally:
        bars.close()
    _warn(report["problems"])
    print(canonical_json(report) if args.json else _extract_line(report, args.out), file=out)
    return 0


def _check_build_args(args: argparse.Namespace) -> None:
    if args.urls is None and args.docs is None:
        raise InvalidInputError("corpus build needs DOCS.jsonl or --urls URLS.txt")
    if args.urls is not None and args.docs is not None:
        raise InvalidInputError("corpus build takes DOCS.jsonl or --urls URLS.txt, not both")
    if args.urls is None:
        fetch_only = [flag for flag, *_ in _FETCH_OPTIONS if hasattr(args, flag[2:].replace("-", "_"))]
        fetch_only += ["--ignore-robots"] * hasattr(args, "ignore_robots")
        fetch_only += [flag for flag, value in (("--crawl-dir", args.crawl_dir), ("--workers", args.workers),
                                                ("--no-favor-precision", args.no_favor_precision or None))
                       if value is not None]
        if fetch_only:
            raise InvalidInputError(f"corpus build: {', '.join(fetch_only)} only with --urls URLS.txt")


def cmd_build(args: argparse.Namespace, out: TextIO) -> int:
    from ..corpus import ExtractSettings, build_corpus
    from ..index import BuildSettings

    _check_build_args(args)
    bars = StageBars(args.quiet)
    settings = BuildSettings(tokenizer=args.tokenizer)
    try:
        if args.urls is not None:
            from ..corpus.pipeline import Progress, build_from_urls

            extract = ExtractSettings(workers=args.workers or os.cpu_count() or 1,
                                      favor_precision=not args.no_favor_precision)
            progress = Progress(bars.fetch_start, bars.fetch, bars.extract, bars.build, bars.extract_start,
                                bars.build_start if bars.draw else None)
            run = build_from_urls(args.urls, args.out, args.crawl_dir, fetch_settings=_fetch_settings(args),
                                  extract_settings=extract, build_settings=settings, overwrite=args.force,
                                  progress=progress)
            result = run.build
        else:
            result = build_corpus(args.docs, args.out, settings, overwrite=args.force, progress=bars.build,
                                  on_start=bars.build_start if bars.draw else None)
    finally:
        bars.close()
    if args.urls is not None:
        _warn(run.fetch["problems"] + run.extract["problems"])
    _warn([r.message for r in result.rejected] + result.notes)
    if args.json:
        body: dict[str, Any] = {"index": result.report.to_dict(), "coverage": result.coverage,
                                "sources": result.sources}
        if args.urls is not None:
            body.update(crawl=str(run.crawl), docs=str(run.docs), fetch=run.fetch, extract=run.extract)
        print(canonical_json(body), file=out)
        return 0
    if args.urls is not None:
        print(_fetch_line(run.fetch, run.crawl), file=out)
        print(_extract_line(run.extract, run.docs), file=out)
    print(_build_line(result, args.out), file=out)
    return 0


def _print_source(info: SourceInfo, out: TextIO) -> None:
    print(f"{info.path} ({info.format})", file=out)
    if info.note:
        print(f"  note: {info.note}", file=out)
    for t in info.tables:
        rows = "?" if t.rows is None else f"{t.rows:,}"
        print(f"  {t.kind} {t.name}: {rows} rows", file=out)
        for c in t.columns:
            print(f"    {c.name}  {c.type}{'  PRIMARY KEY' if c.primary_key else ''}", file=out)
        if t.fts5 is not None:
            extra = "".join(f", {k}={v!r}" for k, v in t.fts5["options"].items() if k != "tokenize")
            print(f"    FTS5: tokenize={t.fts5['tokenize']!r}, indexed {t.fts5['indexed']}, "
                  f"unindexed {t.fts5['unindexed']}{extra}", file=out)


def _mapping(args: argparse.Namespace) -> ColumnMapping | None:
    from ..corpus import ColumnMapping, detect_format

    given = [o for o in _SQLITE_OPTIONS if getattr(args, o) is not None] + (["metadata_col"]
                                                                             if args.metadata_col else [])
    if not given:
        return None
    if detect_format(args.source) != "sqlite":  # column options for a JSONL file: say that, not what
        flags = ", ".join(f"--{o.replace('_', '-')}" for o in given)  # a SQLite import would lack
        raise InvalidInputError(f"{args.source} is JSONL: {flags}: options of SQLite sources only "
                                "(a JSONL line's keys are docid, url, title, text)")
    required = ("table", "docid_col", "url_col", "text_col")
    missing = [f"--{o.replace('_', '-')}" for o in required if getattr(args, o) is None]
    if missing:
        raise InvalidInputError(f"a SQLite import needs {', '.join(missing)} too (see --inspect)")
    return ColumnMapping(args.table, args.docid_col, args.url_col, args.text_col, args.title_col,
                         tuple(args.metadata_col or ()))


def cmd_import(args: argparse.Namespace, out: TextIO) -> int:
    from ..corpus import detect_format, import_corpus, inspect_source
    from ..index import Engine

    if args.inspect:
        info = inspect_source(args.source)
        if args.json:
            print(canonical_json(info.to_dict()), file=out)
        else:
            _print_source(info, out)
        return 0
    if args.out is None:
        raise InvalidInputError("give --out CORPUS.sqlite3 (or --inspect)")
    if detect_format(args.source) == "jsonl":  # the job of `drsearch build`: this spelling is its alias
        print(f"drsearch: note: `drsearch import --from FILE.jsonl` is now `drsearch build FILE.jsonl --out "
              f"CORPUS` (import is for another tool's SQLite table); importing {args.source} as before",
              file=sys.stderr)
    if not Path(args.out).parent.is_dir():  # before the source is hashed (minutes for a big one)
        raise InvalidInputError(f"directory {Path(args.out).parent} does not exist (create it first)")
    chunks = _chunk_mapping(args)
    settings = _import_settings(args.tokenizer)
    progress, bars = chunk_progress(args.quiet)
    hashed = _hash_progress(args.quiet, Path(args.source), bars)
    try:
        report = import_corpus(args.source, args.out, _mapping(args), settings, chunks=chunks,
                               overwrite=args.force, progress=progress, identify=pinned_source,
                               hash_progress=hashed)
    finally:
        for bar in bars:
            bar.close()
    with Engine.open(report.path) as engine:
        recorded = engine.meta.get("provenance", {})
    derived = recorded.get("derived_from")
    if args.json:
        print(canonical_json({**report.to_dict(), "provenance": recorded}), file=out)
        return 0
    origin = f"; derived from {derived['name']} {derived['revision']}" if derived else ""
    given = recorded.get("chunks")
    how = "chunked 800/700"
    unused = recorded.get("unused_fts5_tables") or {}
    if unused:
        how += "; FTS5 tables not taken as chunks: " + "; ".join(f"{t!r}: {why}" for t, why in unused.items())
    if given:
        tok = recorded["tokenizer"]
        chosen = "as declared" if tok["chosen_by"] == "source" else "--tokenizer"
        how = (f"the source's FTS5 table {given['table']!r} in rowid order, tokenizer {tok['used']!r} "
               f"({chosen})")
    print(f"imported {args.source} into {report.path}: {report.documents} documents "
          f"({report.empty_documents} empty), {report.chunks} chunks ({how}), "
          f"identity {report.content_identity}{origin}", file=out)
    return 0


def _chunk_mapping(args: argparse.Namespace) -> ChunkMapping | None:
    from ..corpus import ChunkMapping

    if args.rechunk:
        named = [o for o, v in (("--chunks-table", args.chunks_table),
                                ("--chunk-docid-col", args.chunk_docid_col)) if v is not None]
        if named:
            raise InvalidInputError(f"--rechunk ignores the source's chunks: not with {named[0]}")
        return None
    return ChunkMapping(args.chunks_table, args.chunk_docid_col)


def _import_settings(tokenizer: str | None) -> BuildSettings | None:
    from ..index import BuildSettings

    """Build settings naming ``--tokenizer`` (None: the source's FTS5 tokenizer, else porter)."""
    if tokenizer is None:
        return None
    try:
        return BuildSettings(tokenizer=tokenizer)
    except ValueError as e:  # pydantic's ValidationError: a spec FTS5 does not accept
        errors = getattr(e, "errors", None)
        raise InvalidInputError(f"--tokenizer: {errors()[0]['msg'] if errors else e}") from None


def _hash_progress(quiet: bool, source: Path, bars: list[Any]) -> Callable[[int], None] | None:
    """A bar for hashing the import's source, closed as soon as the whole file is read."""
    make = byte_bars(quiet)
    if make is None or not source.is_file():
        return None
    total = source.stat().st_size
    bar = make(f"sha256 {source.name}", total)
    bars.append(bar)
    done = [0]

    def update(n: int) -> None:
        bar.update(n)
        done[0] += n
        if done[0] >= total:
            bar.close()

    return update


def pinned_source(sha256: str, size: int) -> dict[str, str] | None:
    from ..release import pin_of_corpus_file

    """The pinned release whose corpus file has this SHA-256 and size (e.g. DR-256 v1.1.0),
    as ``drsearch import`` records it in ``provenance.derived_from``; None if none."""
    pin = pin_of_corpus_file(sha256, size)
    return None if pin is None else {"name": pin.name, "revision": pin.revision}


def register(sub: Any) -> None:
    """Add ``corpus fetch|extract|build`` and ``import`` to the CLI's subparsers."""
    corpus = sub.add_parser("corpus", help="make a corpus from URLs: fetch, extract, build")
    verbs = corpus.add_subparsers(dest="corpus_verb", required=True, metavar="STAGE")

    p = verbs.add_parser("fetch", help="fetch a URL list into a crawl directory (resumable)")
    p.add_argument("--urls", required=True, metavar="URLS.txt", help="one URL per line (# comments)")
    p.add_argument("--out", required=True, metavar="CRAWL_DIR",
                   help="crawl directory to write (a rerun resumes it)")
    _add_fetch_args(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help=_JSON_HELP)
    p.set_defaults(handler=cmd_fetch)

    p = verbs.add_parser("extract", help="extract main text from a crawl directory into docs.jsonl")
    p.add_argument("crawl", metavar="CRAWL_DIR", help="a crawl directory (from corpus fetch)")
    p.add_argument("--out", required=True, metavar="DOCS.jsonl",
                   help="documents file to write (its directory must exist)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes (default: all cores)")
    p.add_argument("--no-favor-precision", action="store_true", help="trafilatura's balanced mode")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help=_JSON_HELP)
    p.set_defaults(handler=cmd_extract)

    p = verbs.add_parser("build", help="deduplicate documents and build the frozen index with its reports; "
                         "with --urls: fetch, extract and build in one command")
    p.add_argument("docs", metavar="DOCS.jsonl", nargs="?", help="documents (from corpus extract)")
    p.add_argument("--urls", metavar="URLS.txt",
                   help="instead of DOCS.jsonl: fetch these URLs, extract, build")
    p.add_argument("--out", required=True, metavar="CORPUS.sqlite3",
                   help="index file to write, reports beside it (its directory must exist)")
    p.add_argument("--crawl-dir", metavar="CRAWL_DIR",
                   help="with --urls: the resumable crawl directory (default: CORPUS.sqlite3.crawl/)")
    p.add_argument("--tokenizer", choices=["porter", "unicode61"], default="porter",
                   help="FTS5 tokenizer (default porter)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help=_JSON_HELP)
    _add_fetch_args(p, only_with_urls=True)
    p.add_argument("--workers", type=int, help="with --urls: extraction processes (default: all cores)")
    p.add_argument("--no-favor-precision", action="store_true",
                   help="with --urls: trafilatura's balanced mode")
    p.set_defaults(handler=cmd_build)

    p = sub.add_parser("import", help="build an index from another tool's SQLite table (a JSONL file: "
                                      "`drsearch build`)")
    p.add_argument("--from", dest="source", required=True, metavar="SOURCE",
                   help="a SQLite file (a JSONL file of documents: still accepted, with a note; "
                        "`drsearch build FILE.jsonl` is its one name)")
    p.add_argument("--inspect", action="store_true", help="list the source's tables, columns and row counts")
    p.add_argument("--out", metavar="CORPUS.sqlite3", help="index file to write (its directory must exist)")
    p.add_argument("--table", help="SQLite table or view holding the documents")
    p.add_argument("--docid-col", help="column of stable document ids (TEXT or INTEGER)")
    p.add_argument("--url-col", help="column of URLs")
    p.add_argument("--title-col", help="column of titles (default: empty titles)")
    p.add_argument("--text-col", help="column of full texts")
    p.add_argument("--metadata-col", action="append", metavar="COL",
                   help="a column to keep as document metadata (repeatable)")
    p.add_argument("--chunks-table", metavar="FTS5_TABLE",
                   help="the source's FTS5 table of chunks to import as they are "
                        "(default: its only FTS5 table)")
    p.add_argument("--chunk-docid-col", metavar="COL",
                   help="the chunk table's (or its content table's) column naming each chunk's document "
                        "(default: the --docid-col name)")
    p.add_argument("--rechunk", action="store_true",
                   help="ignore the source's FTS5 chunks: chunk the documents 800/700 words instead")
    p.add_argument("--tokenizer", metavar="SPEC",
                   help="an FTS5 tokenize value, e.g. porter, unicode61, 'unicode61 remove_diacritics 2' "
                        "(default: the one the source's FTS5 table declares, else porter)")
    p.add_argument("--force", action="store_true", help="replace an existing output file")
    p.add_argument("--json", action="store_true",
                   help="print JSON: the source's tables (--inspect) or the build report and provenance")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(handler=cmd_import)


__all__ = ["pinned_source", "register"]
