"""argparse value types the verbs share (argparse turns their errors into exit 2, one line)."""

from __future__ import annotations

import argparse


def fraction(text: str) -> float:
    """A number in [0, 1] (thresholds, tolerances, cosine limits)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text}")
    return value


__all__ = ["fraction"]
