"""argparse value types the verbs share (argparse turns their errors into exit 2, one line)."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def fraction(text: str) -> float:
    """A number in [0, 1] (thresholds, tolerances, cosine limits)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value


def int_in(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An integer in ``lo..hi`` (counts, ports, k, threads); no upper bound when ``hi`` is None."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < lo or (hi is not None and value > hi):
            bounds = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
            raise argparse.ArgumentTypeError(f"must be {bounds}, got {value}")
        return value

    return parse


def seconds(hi: float) -> Callable[[str], float]:
    """A duration in (0, ``hi``] seconds (time limits, timeouts)."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not 0 < value <= hi:
            raise argparse.ArgumentTypeError(f"must be in (0, {hi:g}] seconds, got {text}")
        return value

    return parse


def build_threads(text: str) -> int:
    """``drsearch build --threads``: 1 or 2 (the build has two sides that run in parallel)."""
    if text.strip() not in ("1", "2"):
        raise argparse.ArgumentTypeError(
            f"must be 1 or 2 (tokenizing runs alongside SQLite's writes; more would not help), got {text!r}")
    return int(text)


__all__ = ["build_threads", "fraction", "int_in", "seconds"]
