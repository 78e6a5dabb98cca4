"""The release verbs of the CLI: ``release manifest|assemble``, ``validate`` and ``import``.

``register(sub)`` adds them to the main parser's subcommands (cli.py calls it). Handlers
follow cli.py's contract: they return an exit code and raise DrsearchError for bad input,
which the CLI prints as one line (exit 2 for bad input, 1 for other failures).
``validate`` exits 0 when no check failed and 1 otherwise (``--strict``: warnings fail too).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ..corpus import ChunkMapping, ColumnMapping, SourceInfo, import_corpus, inspect_source
from ..index import BuildSettings, Engine, InvalidInputError, dumps
from .manifest import MANIFEST, ProgressBar, ProgressFactory, write_release_manifest
from .progress import progress_bar, stderr_is_terminal
from .release import assemble_release
from .release_checks import pin_of_corpus_file
from .validate import validate_release

_SQLITE_OPTIONS = ("table", "docid_col", "url_col", "title_col", "text_col")


def _byte_bars(quiet: bool, force: bool = False) -> ProgressFactory | None:
    """Byte bars for hashing and the deep checks: drawn on a terminal's stderr (or when
    ``force``), never with ``quiet`` (None: no bars at all)."""
    if quiet or not (force or stderr_is_terminal()):
        return None

    def make(desc: str, total: int | None) -> ProgressBar:
        if total is None:  # a deep SQLite check: no meaningful total, so show it is alive and for how long
            ticker: ProgressBar = progress_bar(desc, "it", bar_format="{desc}: running {elapsed}", force=True,
                                               delay=1.0, leave=False)
            return ticker
        bar: ProgressBar = progress_bar(desc, "B", total, force=True, unit_scale=True, unit_divisor=1000,
                                        delay=1.0, leave=False)
        return bar

    return make


def _chunk_progress(quiet: bool) -> tuple[Callable[[int], None] | None, list[Any]]:
    """A build progress callback creating its bar lazily (so early errors print one clean line);
    None where no bar would be drawn (``quiet``, or stderr is not a terminal)."""
    bars: list[Any] = []
    if quiet or not stderr_is_terminal():
        return None, bars

    def progress(n: int) -> None:
        if not bars:
            bars.append(progress_bar("indexing", " chunks"))
        bars[0].update(n)

    return progress, bars


def cmd_release_manifest(args: argparse.Namespace, out: TextIO) -> int:
    manifest = write_release_manifest(args.dir, args.name, args.revision, _byte_bars(args.quiet))
    if args.json:
        print(_manifest_json(Path(args.dir)), file=out)
        return 0
    print(f"wrote manifest.json and checksums.sha256 for {manifest.release.name} "
          f"{manifest.release.revision}: {len(manifest.files)} files", file=out)
    return 0


def cmd_release_assemble(args: argparse.Namespace, out: TextIO) -> int:
    progress, bars = _chunk_progress(args.quiet)
    try:
        manifest = assemble_release(args.out, args.docs, args.questions, args.blocked_docids,
                                    name=args.name, revision=args.revision,
                                    settings=BuildSettings(tokenizer=args.tokenizer), overwrite=args.force,
                                    build_progress=progress, hash_progress=_byte_bars(args.quiet))
    finally:
        for bar in bars:
            bar.close()
    if args.json:
        print(_manifest_json(Path(args.out)), file=out)
        return 0
    counts = manifest.counts
    print(f"assembled {args.out}: {manifest.release.name} {manifest.release.revision}, "
          f"{counts['questions']} questions, {counts['documents']} documents, {counts['chunks']} chunks, "
          f"{counts['blocked_docids']} blocked docids", file=out)
    return 0


def _manifest_json(root: Path) -> str:
    """The manifest.json just written, as one line of canonical JSON (``--json``)."""
    return dumps(json.loads((root / MANIFEST).read_bytes()))


def _show_progress(args: argparse.Namespace) -> bool:
    """Progress on stderr: asked for (--progress), or by default on a terminal unless the
    output is --json; never with --quiet."""
    if args.quiet:
        return False
    return bool(args.progress) or (not args.json and sys.stderr.isatty())


def cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    show = _show_progress(args)

    def stage(msg: str) -> None:
        if show:
            print(f"drsearch: running {msg} …", file=sys.stderr)

    report = validate_release(args.release_dir, deep=args.deep, progress=_byte_bars(not show, force=True),
                              stage=stage)
    if args.json:
        print(dumps(report.to_dict(args.strict)), file=out)
    else:
        width = max((len(c.name) for c in report.checks), default=0)
        for c in report.checks:
            print(f"{c.status:<4}  {c.name:<{width}}  {c.message}", file=out)
        verdict = "PASS" if report.ok(args.strict) else "FAIL"
        warnings = report.count("WARN")
        print(f"validate: {verdict} ({report.count('PASS')} passed, {report.count('FAIL')} failed, "
              f"{warnings} warning{'' if warnings == 1 else 's'}; {'deep' if args.deep else 'fast'}) "
              f"{args.release_dir}", file=out)
    return 0 if report.ok(args.strict) else 1


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
    given = [o for o in _SQLITE_OPTIONS if getattr(args, o) is not None] + (["metadata_col"]
                                                                             if args.metadata_col else [])
    if not given:
        return None
    required = ("table", "docid_col", "url_col", "text_col")
    missing = [f"--{o.replace('_', '-')}" for o in required if getattr(args, o) is None]
    if missing:
        raise InvalidInputError(f"a SQLite import needs {', '.join(missing)} too (see --inspect)")
    return ColumnMapping(args.table, args.docid_col, args.url_col, args.text_col, args.title_col,
                         tuple(args.metadata_col or ()))


def cmd_import(args: argparse.Namespace, out: TextIO) -> int:
    if args.inspect:
        info = inspect_source(args.source)
        if args.json:
            print(dumps(info.to_dict()), file=out)
        else:
            _print_source(info, out)
        return 0
    if args.out is None:
        raise InvalidInputError("give --out CORPUS.sqlite3 (or --inspect)")
    if not Path(args.out).parent.is_dir():  # before the source is hashed (minutes for a big one)
        raise InvalidInputError(f"directory {Path(args.out).parent} does not exist (create it first)")
    chunks = _chunk_mapping(args)
    settings = _import_settings(args.tokenizer)
    progress, bars = _chunk_progress(args.quiet)
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
        print(dumps({**report.to_dict(), "provenance": recorded}), file=out)
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
    if args.rechunk:
        named = [o for o, v in (("--chunks-table", args.chunks_table),
                                ("--chunk-docid-col", args.chunk_docid_col)) if v is not None]
        if named:
            raise InvalidInputError(f"--rechunk ignores the source's chunks: not with {named[0]}")
        return None
    return ChunkMapping(args.chunks_table, args.chunk_docid_col)


def _import_settings(tokenizer: str | None) -> BuildSettings | None:
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
    make = _byte_bars(quiet)
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
    """The pinned release whose corpus file has this SHA-256 and size (e.g. DR-256 v1.1.0),
    as ``drsearch import`` records it in ``provenance.derived_from``; None if none."""
    pin = pin_of_corpus_file(sha256, size)
    return None if pin is None else {"name": pin.name, "revision": pin.revision}


def _add_release(sub: Any) -> None:
    rel = sub.add_parser("release", help="write release manifests; assemble a release")
    verbs = rel.add_subparsers(dest="release_verb", required=True, metavar="ACTION")
    p = verbs.add_parser("manifest", help="write manifest.json and checksums.sha256 for a release directory")
    p.add_argument("dir", metavar="DIR", help="release directory")
    p.add_argument("--name", help="release name (default: the existing manifest's)")
    p.add_argument("--revision", help="release revision (default: the existing manifest's)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print the manifest written (one line of JSON)")
    p.set_defaults(handler=cmd_release_manifest)

    p = verbs.add_parser("assemble", help="build a release directory from documents, questions, blocklist")
    p.add_argument("--docs", required=True, metavar="DOCS.jsonl", help="the corpus documents")
    p.add_argument("--questions", required=True, metavar="QUESTIONS.jsonl", help="DR-256 question rows")
    p.add_argument("--blocked-docids", required=True, metavar="FILE",
                   help="the release's blocklist (copied byte for byte)")
    p.add_argument("--out", required=True, metavar="DIR", help="release directory to write")
    p.add_argument("--name", required=True, help="release name (manifest.json)")
    p.add_argument("--revision", required=True, help="release revision (manifest.json)")
    p.add_argument("--tokenizer", choices=["porter", "unicode61"], default="porter",
                   help="FTS5 tokenizer of the corpus (default porter)")
    p.add_argument("--force", action="store_true", help="replace the release files in a non-empty DIR")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print the manifest written (one line of JSON)")
    p.set_defaults(handler=cmd_release_assemble)


def register(sub: Any) -> None:
    """Add ``release``, ``validate`` and ``import`` to the CLI's subparsers."""
    _add_release(sub)

    p = sub.add_parser("validate", help="check a release directory (docs/RELEASE.md)")
    p.add_argument("--release-dir", required=True, metavar="DIR", help="the release directory")
    p.add_argument("--deep", action="store_true",
                   help="also re-hash the corpus, PRAGMA quick_check and the FTS5 integrity-check")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument("--strict", action="store_true", help="warnings fail too")
    p.add_argument("--progress", action="store_true",
                   help="progress on stderr even when it is not a terminal or with --json")
    p.add_argument("--quiet", action="store_true", help="no progress bar or stage messages")
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("import", help="build an index from another tool's SQLite table or a JSONL file")
    p.add_argument("--from", dest="source", required=True, metavar="SOURCE",
                   help="a SQLite file or a JSONL file of documents")
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
