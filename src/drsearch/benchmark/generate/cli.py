"""The command line every generator shares: ``--out``, ``--until``, ``--cache-mode`` and friends.

A generator's entry point is ``generate_main(build, argv)``: ``build`` turns the parsed options
(its own, added by ``add_arguments``, plus the shared ones) into a :class:`Pipeline`. The
summary is printed as JSON on stdout. Bad input is one line on stderr and exit 2, before
anything is written; a failed stage exit 1 (its finished items kept); Ctrl-C exit 130.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from pydantic import ValidationError

from ...agents import RetryPolicy
from ...agents.errors import describe_validation_error
from ...index import DrsearchError
from .options import add_generate_arguments
from .stages import GenerateSettings, Pipeline, StageProgress, run_pipeline

_OPTIONS = {"out": "--out", "until": "--until", "cache_mode": "--cache-mode", "cache": "--cache",
            "api_key_env": "--api-key-env", "retry.max_attempts": "--max-attempts",
            "retry.backoff_s": "--backoff", "concurrency": "--concurrency",
            "max_attempts": "--max-attempts", "backoff_s": "--backoff"}


def settings_from(args: argparse.Namespace) -> GenerateSettings:
    """The shared options as :class:`GenerateSettings`; ValueError in one line if invalid."""
    try:
        return GenerateSettings(out=args.out, until=args.until, cache_mode=args.cache_mode, cache=args.cache,
                                api_key_env=args.api_key_env,
                                retry=RetryPolicy(max_attempts=args.max_attempts, backoff_s=args.backoff),
                                concurrency=args.concurrency)
    except ValidationError as e:
        raise ValueError(describe_validation_error(e, _OPTIONS)) from None


def generate_main(build: Callable[[argparse.Namespace], Pipeline], argv: Sequence[str] | None = None, *,
                  prog: str = "generate", description: str = "",
                  add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
                  out: TextIO | None = None) -> int:
    """Parse ``argv``, build the pipeline, run it; returns the exit code."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_generate_arguments(parser)
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(argv)
    return run_parsed(build, args, prog=prog, out=out)


def run_parsed(build: Callable[[argparse.Namespace], Pipeline], args: argparse.Namespace, *,
               prog: str = "generate", out: TextIO | None = None,
               progress: StageProgress | None = None) -> int:
    """Run a generator from options already parsed (by a parser that got
    :func:`add_generate_arguments`, e.g. a ``drsearch generate NAME`` subcommand); the exit code.
    ``progress`` (the command line's bars) is told how far each stage is."""
    try:
        settings = settings_from(args)
    except ValueError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    try:
        summary = run_pipeline(build(args), settings, progress)
    except DrsearchError as e:
        print(f"{prog}: error: {e.message}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted: finished stages and the running stage's finished items are kept in "
              f"{settings.out}; rerun the same command to resume", file=sys.stderr)
        return 130
    print(json.dumps(summary, sort_keys=True), file=out or sys.stdout)
    return 0


__all__ = ["add_generate_arguments", "generate_main", "run_parsed", "settings_from"]
