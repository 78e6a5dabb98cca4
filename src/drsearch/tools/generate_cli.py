"""``drsearch generate NAME ...``: the benchmark generators (docs/GENERATE.md).

::

    drsearch generate drbencher --config GEN.json --out GEN_DIR [--until STAGE] [--cache-mode M]
                                [--concurrency N] [--quiet]
    drsearch generate drbencher annotate|agreement ...   (drbencher_cli.py)
    drsearch generate openbiorq STAGE OBRQ_DIR ...   (openbiorq_cli.py)

The options every generator takes (``--out``, ``--until``, ``--cache-mode`` …) and the
command-line wrapper of the toolkit's ``run_pipeline`` live here, the only layer that parses
arguments: the generators themselves take a typed ``GenerateSettings`` and their own
settings. The generator prints its JSON summary on stdout; bad input (config, endpoint probe)
is one line on stderr and exit 2 before anything is written; a failed stage exit 1 (its
finished items kept); Ctrl-C exit 130.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .drbencher_cli import VERBS as DRBENCHER_VERBS

if TYPE_CHECKING:
    from ..benchmark.generate import GenerateSettings, Pipeline
    from ..benchmark.generate.stages import StageProgress

# GenerateSettings' fields (and RetryPolicy's) -> the flags that set them, for error messages
_OPTIONS = {"out": "--out", "until": "--until", "cache_mode": "--cache-mode", "cache": "--cache",
            "api_key_env": "--api-key-env", "retry.max_attempts": "--max-attempts",
            "retry.backoff_s": "--backoff", "concurrency": "--concurrency",
            "max_attempts": "--max-attempts", "backoff_s": "--backoff"}


def add_generate_arguments(parser: argparse.ArgumentParser, *, out_required: bool = True) -> None:
    """The options every generator takes (pure argparse: ``drsearch --help`` needs no extra).
    ``out_required=False``: a parser with verbs of its own checks ``--out`` itself."""
    parser.add_argument("--out", required=out_required, metavar="DIR",
                        help="output directory (resumed if present)")
    parser.add_argument("--until", metavar="STAGE", help="stop after this stage")
    parser.add_argument("--cache-mode", default="record",
                        choices=["off", "record", "replay", "replay-then-live"],
                        help="model response cache (default record into DIR/cache.sqlite3); "
                             "replay is offline")
    parser.add_argument("--cache", metavar="FILE", help="cache file (default DIR/cache.sqlite3)")
    parser.add_argument("--api-key-env", metavar="VAR", help="environment variable holding the API key")
    parser.add_argument("--max-attempts", type=int, default=6, help="tries per model call (default 6)")
    parser.add_argument("--backoff", type=float, default=1.0, metavar="S",
                        help="first retry wait (default 1 s)")
    parser.add_argument("--concurrency", type=int, default=1, metavar="N",
                        help="items a stage processes at once, e.g. model calls in flight (default 1; "
                             "the outputs do not depend on it and changing it reruns nothing)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def settings_from(args: argparse.Namespace) -> GenerateSettings:
    """The shared options as :class:`GenerateSettings`; ValueError in one line if invalid."""
    from pydantic import ValidationError

    from ..agents import RetryPolicy
    from ..agents.errors import describe_validation_error
    from ..benchmark.generate import GenerateSettings

    try:
        return GenerateSettings(out=args.out, until=args.until, cache_mode=args.cache_mode, cache=args.cache,
                                api_key_env=args.api_key_env,
                                retry=RetryPolicy(max_attempts=args.max_attempts, backoff_s=args.backoff),
                                concurrency=args.concurrency)
    except ValidationError as e:
        raise ValueError(describe_validation_error(e, _OPTIONS)) from None


def run_generator(build: Callable[[], Pipeline], settings: GenerateSettings, *, prog: str = "generate",
                  out: TextIO | None = None, progress: StageProgress | None = None) -> int:
    """Build the pipeline (its own checks: exit 2 before anything is written) and run it with
    ``settings``; print the summary as JSON; the exit code. ``progress`` (the command line's
    bars) is told how far each stage is."""
    from ..benchmark.generate import run_pipeline
    from ..contract import DrsearchError

    try:
        summary = run_pipeline(build(), settings, progress)
    except DrsearchError as e:
        print(f"{prog}: error: {e.message}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted: finished stages and the running stage's finished items are kept in "
              f"{settings.out}; rerun the same command to resume", file=sys.stderr)
        return 130
    print(json.dumps(summary, sort_keys=True), file=out or sys.stdout)
    return 0


def run_parsed(build: Callable[[argparse.Namespace], Pipeline], args: argparse.Namespace, *,
               prog: str = "generate", out: TextIO | None = None,
               progress: StageProgress | None = None) -> int:
    """Run a generator from options parsed by a parser that got :func:`add_generate_arguments`."""
    try:
        settings = settings_from(args)
    except ValueError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    return run_generator(lambda: build(args), settings, prog=prog, out=out, progress=progress)


def generate_main(build: Callable[[argparse.Namespace], Pipeline], argv: Sequence[str] | None = None, *,
                  prog: str = "generate", description: str = "",
                  add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
                  out: TextIO | None = None) -> int:
    """A generator's own command line: parse ``argv`` (the shared options plus
    ``add_arguments``'), build the pipeline from them, run it; the exit code."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_generate_arguments(parser)
    if add_arguments is not None:
        add_arguments(parser)
    return run_parsed(build, parser.parse_args(argv), prog=prog, out=out)


def cmd_generate_drbencher(args: argparse.Namespace, out: TextIO) -> int:
    from ..benchmark.generate.drbencher.pipeline import build
    from .progress import GeneratorBars

    prog = "drsearch generate drbencher"
    missing = [flag for flag, value in (("--config", args.config), ("--out", args.out)) if value is None]
    if missing:  # not argparse's: the verbs (annotate, agreement, ...) take neither
        print(f"{prog}: error: the following arguments are required: {', '.join(missing)} "
              f"(or a verb: {', '.join(DRBENCHER_VERBS)})", file=sys.stderr)
        return 2

    def warn(message: str) -> None:
        print(f"{prog}: warning: {message}", file=sys.stderr)

    bars = GeneratorBars(args.quiet)  # drawn on a terminal's stderr only, never with --quiet
    try:
        return run_parsed(lambda a: build(Path(a.config), settings_from(a), refresh_kg=a.refresh_kg,
                                          warn=warn),
                          args, prog=prog, out=out, progress=bars if bars.draw else None)
    finally:
        bars.close()


def register(sub: Any) -> None:
    """Add the ``generate`` verb (``generate drbencher``, ``generate openbiorq``) to the CLI."""
    from .drbencher_cli import register as register_drbencher_verbs
    from .openbiorq_cli import register as register_openbiorq

    gen = sub.add_parser("generate", help="run a benchmark generator (docs/GENERATE.md)")
    names = gen.add_subparsers(dest="generator", required=True, metavar="GENERATOR")
    p = names.add_parser("drbencher", help="answer-first numeric questions from knowledge-graph chains; "
                                           f"verbs on its output: {', '.join(DRBENCHER_VERBS)}")
    add_generate_arguments(p, out_required=False)
    p.add_argument("--config", metavar="GEN.json",
                   help="the generator config (strict JSON; required without a verb)")
    p.add_argument("--refresh-kg", action="store_true",
                   help="ask the SPARQL endpoint again every query the finished stages recorded "
                        "and rerun from the first stage whose answers changed (default: reuse them, "
                        "with a warning)")
    p.set_defaults(handler=cmd_generate_drbencher)
    register_drbencher_verbs(p)  # annotate, agreement, ... (drbencher_cli.py)
    register_openbiorq(names)


__all__ = ["add_generate_arguments", "generate_main", "register", "run_generator", "run_parsed",
           "settings_from"]
