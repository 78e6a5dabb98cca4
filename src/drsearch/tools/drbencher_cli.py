"""``drsearch generate drbencher VERB ...``: the work on a finished generator directory.

::

    drsearch generate drbencher annotate GEN_DIR --out SHEET.csv [--sample N] [--seed S]
    drsearch generate drbencher agreement SHEET_A.csv SHEET_B.csv [--json]
    drsearch generate drbencher refresh GEN_DIR [--endpoint URL] [--json]
    drsearch generate drbencher articles GEN_DIR --out ARTICLES.jsonl [--api URL] [--crawl DIR] [--json]

``annotate`` writes the paper's annotation sheet for a stratified sample of GEN_DIR's
questions; ``agreement`` compares two filled sheets (raw agreement, Krippendorff's α, the
error-taxonomy tally); ``refresh`` re-executes every exported question against the KG endpoint
now and lists the items whose gold moved (exit 3 when any item is flagged); ``articles`` fetches
each entity's Wikipedia article (MediaWiki Action API, ``drsearch corpus fetch``'s client) into
an articles file the config's ``articles`` takes. A sheet that cannot
be used (a missing column, an unknown class, other items) is one line on stderr, exit 2
(docs/GENERATE.md, "Human validation", "Staleness audit").
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from .argtypes import int_in

VERBS = ("annotate", "agreement", "refresh", "articles")

STALE_EXIT = 3
"""``refresh``'s exit status when any item is flagged: apart from 1 (a failure, e.g. a query that
failed for good) and 2 (bad input, an endpoint that does not answer)."""


def cmd_annotate(args: argparse.Namespace, out: TextIO) -> int:
    from ..benchmark.generate.drbencher.annotation import annotation_sheet
    from ..contract import InvalidInputError
    from ..contract.atomic import write_bytes_atomic

    if args.out.exists() and not args.force:  # a filled sheet is hours of work: never overwritten silently
        raise InvalidInputError(f"{args.out} exists (--force replaces it)")
    text, n = annotation_sheet(args.gen_dir, args.sample, args.seed)
    write_bytes_atomic(args.out, text.encode("utf-8"))
    if args.json:
        print(json.dumps({"items": n, "out": str(args.out), "sample": args.sample, "seed": args.seed},
                         sort_keys=True), file=out)
    else:
        print(f"wrote {args.out}: {n} item(s), stratified by domain (seed {args.seed})", file=out)
    return 0


def cmd_agreement(args: argparse.Namespace, out: TextIO) -> int:
    from ..benchmark.generate.drbencher.annotation import agreement, render_agreement

    result = agreement(args.sheet_a, args.sheet_b)
    print(json.dumps(result, sort_keys=True) if args.json else render_agreement(result), file=out)
    return 0


def cmd_refresh(args: argparse.Namespace, out: TextIO) -> int:
    from ..benchmark.generate.drbencher.refresh import refresh, render_refresh

    result = refresh(args.gen_dir, args.endpoint)
    print(json.dumps(result, sort_keys=True) if args.json else render_refresh(result), file=out)
    return STALE_EXIT if result["flagged"] else 0


def cmd_articles(args: argparse.Namespace, out: TextIO) -> int:
    from ..benchmark.generate.drbencher.wikipedia import fetch_articles, generation_entities
    from ..contract import InvalidInputError, check_http_url

    try:
        check_http_url(args.api)
    except ValueError as e:
        raise InvalidInputError(f"--api: {e}") from None
    entities = generation_entities(args.gen_dir)
    crawl = args.crawl or args.gen_dir / "wikipedia-crawl"
    result = fetch_articles(entities, args.api, args.out, crawl)
    if args.json:
        print(json.dumps(result, sort_keys=True), file=out)
    else:
        print(f"wrote {args.out}: {result['articles']} article(s) of {result['entities']} entities"
              + "".join(f"\n  {q}: {why}" for q, why in result["skipped"].items()), file=out)
    return 0


def register(parser: argparse.ArgumentParser) -> Any:
    """Add the verbs under ``generate drbencher``'s parser; the subparsers action (optional:
    without a verb, ``generate drbencher`` runs the generator)."""
    verbs = parser.add_subparsers(dest="drbencher_verb", metavar="VERB",
                                  description="without a verb: run the generator (--config, --out)")
    p = verbs.add_parser("annotate", help="the human-validation sheet of a stratified sample (CSV)")
    p.add_argument("gen_dir", type=Path, metavar="GEN_DIR", help="output directory of the generator")
    p.add_argument("--out", type=Path, required=True, metavar="SHEET.csv", help="the sheet to write")
    p.add_argument("--sample", type=int_in(1), metavar="N",
                   help="questions to sample, stratified by domain (default: all)")
    p.add_argument("--seed", type=int, default=0, help="the sample's seed (default 0)")
    p.add_argument("--force", action="store_true", help="replace an existing sheet")
    p.add_argument("--json", action="store_true", help="print what was written as JSON")
    p.set_defaults(handler=cmd_annotate)
    p = verbs.add_parser("agreement", help="two annotators' sheets: agreement, Krippendorff's alpha, tally")
    p.add_argument("sheet_a", type=Path, metavar="SHEET_A.csv", help="one annotator's filled sheet")
    p.add_argument("sheet_b", type=Path, metavar="SHEET_B.csv", help="the other's, of the same items")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_agreement)
    p = verbs.add_parser("refresh", help="staleness audit: each exported question's chain and gold against "
                                         "the KG endpoint now (exit 3 when an item is flagged)")
    p.add_argument("gen_dir", type=Path, metavar="GEN_DIR", help="output directory of the generator")
    p.add_argument("--endpoint", metavar="URL",
                   help="the SPARQL endpoint (default: the one the gold stage recorded in the manifest)")
    p.add_argument("--json", action="store_true", help="print the audit as JSON")
    p.set_defaults(handler=cmd_refresh)
    p = verbs.add_parser("articles", help="each entity's Wikipedia article (MediaWiki Action API) as an "
                                          "articles file for the config's `articles`")
    p.add_argument("gen_dir", type=Path, metavar="GEN_DIR",
                   help="output directory of the generator (its entities.jsonl, and gold.jsonl's partners)")
    p.add_argument("--out", type=Path, required=True, metavar="ARTICLES.jsonl",
                   help="the articles file to write")
    p.add_argument("--api", default="https://en.wikipedia.org/w/api.php", metavar="URL",
                   help="the MediaWiki Action API (default English Wikipedia's)")
    p.add_argument("--crawl", type=Path, metavar="DIR",
                   help="crawl directory, the fetches' cache (default GEN_DIR/wikipedia-crawl)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(handler=cmd_articles)
    return verbs


__all__ = ["VERBS", "register"]
