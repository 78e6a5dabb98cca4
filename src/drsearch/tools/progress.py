"""Progress bars of the CLI: tqdm on stderr, drawn only where a person watches.

A bar redraws itself with ``\\r`` and ANSI codes, which in a log file or a CI transcript are
noise (megabytes of it for a long build). So a bar is drawn only when stderr is a terminal
(tqdm's ``disable=None`` rule, made explicit), never with ``--quiet``, and always when the
caller forces it (``validate --progress``). A bar that is not drawn is still a working
object, so callers update it unconditionally.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # annotations only: the release layer is not imported by every command
    from ..release import ProgressBar, ProgressFactory


def stderr_is_terminal() -> bool:
    """True when stderr is a terminal (not a pipe, a file or a closed stream)."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


def progress_bar(desc: str, unit: str, total: int | None = None, *, quiet: bool = False,
                 force: bool = False, **options: Any) -> Any:
    """A tqdm bar on stderr with ``total`` (None: a counter without one).

    Drawn when ``force``, else when not ``quiet`` and stderr is a terminal; otherwise
    disabled (updates are no-ops). ``options`` go to tqdm (``bar_format``, ``delay``, …).
    """
    from tqdm import tqdm

    draw = force or (not quiet and stderr_is_terminal())
    options.setdefault("mininterval", 0.5)
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not draw, **options)


class StageBars:
    """One bar per stage (fetching, extracting, indexing), opened by the stage's start
    callback with its total, or on first update without one; all closed by :meth:`close`.

    ``draw`` says whether bars are drawn at all; callers pass start callbacks only then,
    since a total can cost work of its own (the build counts chunks before indexing).
    """

    def __init__(self, quiet: bool) -> None:
        self.draw = not quiet and stderr_is_terminal()
        self.bars: dict[str, Any] = {}
        self.fetch_counts = {"ok": 0, "failed": 0, "disallowed": 0}

    def bar(self, desc: str, unit: str, total: int | None = None) -> Any:
        if desc not in self.bars:
            self.bars[desc] = progress_bar(desc, unit, total, quiet=not self.draw)
        return self.bars[desc]

    def fetch_start(self, total: int) -> None:
        self.bar("fetching", " url", total)

    def fetch(self, record: Any) -> None:
        """One fetch record done (its ``outcome`` is counted in the bar's postfix)."""
        self.fetch_counts[record.outcome] += 1
        bar = self.bar("fetching", " url")
        bar.set_postfix(self.fetch_counts, refresh=False)
        bar.update(1)

    def extract_start(self, total: int) -> None:
        self.bar("extracting", " page", total)

    def extract(self, page: object) -> None:
        self.bar("extracting", " page").update(1)

    def build_start(self, total: int) -> None:
        self.bar("indexing", " chunks", total)

    def build(self, n: int) -> None:
        self.bar("indexing", " chunks").update(n)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
        self.bars.clear()


class GeneratorBars:
    """A generator's bars (``drsearch generate``): one per stage that processes items, with
    its count, rate, ETA and the model calls made so far; the previous stage's bar is closed
    when the next stage reports. Called from the stage's worker threads (serialised by the
    stage). ``draw`` False (``--quiet``, or stderr is not a terminal): pass no progress at all."""

    def __init__(self, quiet: bool) -> None:
        self.draw = not quiet and stderr_is_terminal()
        self.stage: str | None = None
        self.bar: Any = None

    def __call__(self, stage: str, done: int, total: int, calls: int) -> None:
        if stage != self.stage or self.bar is None or self.bar.total != total:
            self.close()
            self.stage = stage
            self.bar = progress_bar(stage, " item", total, quiet=not self.draw, initial=done)
        else:
            self.bar.update(done - self.bar.n)
        self.bar.set_postfix(calls=calls, refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        self.bar = None
        self.stage = None


def byte_bars(quiet: bool, force: bool = False) -> ProgressFactory | None:
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


def chunk_progress(quiet: bool) -> tuple[Callable[[int], None] | None, list[Any]]:
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


__all__ = ["GeneratorBars", "StageBars", "byte_bars", "chunk_progress", "progress_bar", "stderr_is_terminal"]
