"""The release verbs of the CLI: ``release manifest|assemble|templates`` and ``validate``.

``register(sub)`` adds them to the main parser's subcommands (cli.py calls it). Handlers
follow cli.py's contract: they return an exit code and raise DrsearchError for bad input,
which the CLI prints as one line (exit 2 for bad input, 1 for other failures).
``validate`` exits 0 when no check failed and 1 otherwise (``--strict``: warnings fail too).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from ..contract import InvalidInputError, canonical_json
from .progress import byte_bars, chunk_progress

if TYPE_CHECKING:
    from ..release import ReleaseDocuments

# The release layer (and through it the corpus pipeline and pydantic) is imported by these
# commands when they run, not by every `drsearch` command building the parser.


def cmd_release_manifest(args: argparse.Namespace, out: TextIO) -> int:
    from ..release import write_release_manifest

    manifest = write_release_manifest(args.dir, args.name, args.revision, byte_bars(args.quiet))
    if args.json:
        print(_manifest_json(Path(args.dir)), file=out)
        return 0
    print(f"wrote manifest.json and checksums.sha256 for {manifest.release.name} "
          f"{manifest.release.revision}: {len(manifest.files)} files", file=out)
    return 0


def release_documents(args: argparse.Namespace) -> ReleaseDocuments:
    """``--readme/--terms/--allow-placeholders/--tools/--code-license`` (assemble, construct select)."""
    from ..release import ReleaseDocuments

    docs = ReleaseDocuments(readme=args.readme, terms=args.terms, allow_placeholders=args.allow_placeholders,
                            tools=getattr(args, "tools", None),
                            code_license=getattr(args, "code_license", None))
    if (docs.readme is None) != (docs.terms is None) and not docs.allow_placeholders:
        given, missing = ("--readme", "--terms") if docs.terms is None else ("--terms", "--readme")
        raise InvalidInputError(f"{given} goes with {missing} (a release carries both README.md and "
                                "TERMS.md)")
    return docs


def warn_without_documents(docs: ReleaseDocuments) -> None:
    """After a release was written without README/TERMS: say so (stderr), once it exists, so
    that a refusal stays one line."""
    if not docs.wanted:
        print("drsearch: warning: no --readme/--terms: the release carries no README.md or TERMS.md (a "
              "DR-256 release does; `drsearch release templates --out DIR` writes the templates to complete)",
              file=sys.stderr)


def add_document_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--readme", type=Path, metavar="FILE",
                   help="the release's README.md: a completed template (`drsearch release templates`); "
                        "{{field}} marks are filled from the release")
    p.add_argument("--terms", type=Path, metavar="FILE", help="the release's TERMS.md, likewise")
    p.add_argument("--allow-placeholders", action="store_true",
                   help="assemble although {{FILL: …}} placeholders remain (the bundled template where "
                        "--readme/--terms is not given); validate warns about them")


def cmd_release_assemble(args: argparse.Namespace, out: TextIO) -> int:
    from ..index import BuildSettings
    from ..release import assemble_release

    documents = release_documents(args)
    progress, bars = chunk_progress(args.quiet)
    try:
        manifest = assemble_release(args.out, args.docs, args.questions, args.blocked_docids,
                                    name=args.name, revision=args.revision,
                                    settings=BuildSettings(tokenizer=args.tokenizer), overwrite=args.force,
                                    build_progress=progress, hash_progress=byte_bars(args.quiet),
                                    documents=documents)
    finally:
        for bar in bars:
            bar.close()
    warn_without_documents(documents)
    if args.json:
        print(_manifest_json(Path(args.out)), file=out)
        return 0
    counts = manifest.counts
    print(f"assembled {args.out}: {manifest.release.name} {manifest.release.revision}, "
          f"{counts['questions']} questions, {counts['documents']} documents, {counts['chunks']} chunks, "
          f"{counts['blocked_docids']} blocked docids", file=out)
    return 0


def cmd_release_templates(args: argparse.Namespace, out: TextIO) -> int:
    from ..release import write_templates

    written = write_templates(args.out)
    if args.json:
        print(canonical_json({"readme": str(written[0]), "terms": str(written[1])}), file=out)
        return 0
    print(f"wrote {', '.join(map(str, written))}: complete every {{{{FILL: …}}}}, then `drsearch release "
          f"assemble … --readme {written[0]} --terms {written[1]}`", file=out)
    return 0


def _manifest_json(root: Path) -> str:
    from ..release import MANIFEST

    """The manifest.json just written, as one line of canonical JSON (``--json``)."""
    return canonical_json(json.loads((root / MANIFEST).read_bytes()))


def _show_progress(args: argparse.Namespace) -> bool:
    """Progress on stderr: asked for (--progress), or by default on a terminal unless the
    output is --json; never with --quiet."""
    if args.quiet:
        return False
    return bool(args.progress) or (not args.json and sys.stderr.isatty())


def cmd_validate(args: argparse.Namespace, out: TextIO) -> int:
    from ..release import validate_release

    show = _show_progress(args)

    def stage(msg: str) -> None:
        if show:
            print(f"drsearch: running {msg} …", file=sys.stderr)

    report = validate_release(args.release_dir, deep=args.deep, progress=byte_bars(not show, force=True),
                              stage=stage)
    if args.json:
        print(canonical_json(report.to_dict(args.strict)), file=out)
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
    add_document_options(p)
    p.add_argument("--tools", type=Path, metavar="DIR",
                   help="packaged utilities shipped as the release's tools/, with LICENSE-CODE")
    p.add_argument("--code-license", type=Path, metavar="FILE",
                   help="with --tools: the code's licence text as LICENSE-CODE (default Apache-2.0)")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.add_argument("--json", action="store_true", help="print the manifest written (one line of JSON)")
    p.set_defaults(handler=cmd_release_assemble)

    p = verbs.add_parser("templates", help="write the README.md and TERMS.md templates a release's author "
                                           "completes (for assemble/construct select --readme/--terms)")
    p.add_argument("--out", required=True, type=Path, metavar="DIR", help="where to write them")
    p.add_argument("--json", action="store_true", help="print the two paths written as JSON")
    p.set_defaults(handler=cmd_release_templates)


def register(sub: Any) -> None:
    """Add ``release`` and ``validate`` to the CLI's subparsers."""
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


__all__ = ["add_document_options", "register", "release_documents", "warn_without_documents"]
