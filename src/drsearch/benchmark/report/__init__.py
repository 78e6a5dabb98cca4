"""``drsearch report``: graded runs as a static HTML page and as CSV/Parquet rows (docs/GRADING.md).

Public API::

    write_report(run_dirs, out_dir, questions=None) -> ReportFiles
    read_runs(run_dirs, questions=None) -> [Run]       render(runs) -> str (the page)

The page (``index.html``) is self-contained: style, script, SVG plots and data inline; it loads
nothing over the network and opens from disk. Beside it, one row per episode
(``episodes.csv``/``.parquet``) and one per tool call (``tool_calls.csv``/``.parquet``; Parquet
needs pyarrow, the ``report`` extra). The same runs always give the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...contract import InvalidInputError
from ...contract.atomic import write_bytes_atomic
from .frames import write_frames
from .load import Run, read_runs
from .page import render

EPISODE_COLUMNS = ("run", "qid", "index", "question", "status", "episode_status", "outcome", "correct",
                   "score", "final_answer", "gold", "tier", "domain", "bucket", "difficulty", "cci", "cci_E",
                   "cci_P", "tool_calls", "malformed_tool_calls", "prompt_tokens", "completion_tokens",
                   "total_tokens", "turns", "wall_s", "cost", "leak_turn", "leak_tool", "leak_docid",
                   "judge_reason")
CALL_COLUMNS = ("run", "qid", "turn", "call", "tool", "arguments", "malformed", "n_documents", "docids")


@dataclass(frozen=True)
class ReportFiles:
    """What :func:`write_report` wrote."""

    html: Path
    frames: tuple[Path, ...]
    episodes: int
    tool_calls: int
    parquet: bool
    warnings: tuple[str, ...] = ()


def write_report(run_dirs: list[Path], out: Path, questions: Path | None = None) -> ReportFiles:
    """Read ``run_dirs`` (graded runs of one question set) and write the report into ``out``.

    InvalidInputError (one line) for a directory that is not a graded run, a questions file that
    is not the one graded, runs of different question sets, or an ``out`` that is a file."""
    if not run_dirs:
        raise InvalidInputError("report needs at least one run directory")
    if out.exists() and not out.is_dir():
        raise InvalidInputError(f"--out {out}: not a directory")
    runs = read_runs(run_dirs, questions)
    page = render(runs)
    out.mkdir(parents=True, exist_ok=True)
    html = out / "index.html"
    write_bytes_atomic(html, page.encode("utf-8"))
    episodes = [e for r in runs for e in r.episodes]
    calls = [c for r in runs for c in r.calls]
    frames = write_frames(out, episodes, calls, EPISODE_COLUMNS, CALL_COLUMNS)
    warnings = tuple(w for r in runs for w in r.warnings)
    return ReportFiles(html, tuple(frames), len(episodes), len(calls),
                       any(p.suffix == ".parquet" for p in frames), warnings)


__all__ = ["CALL_COLUMNS", "EPISODE_COLUMNS", "ReportFiles", "Run", "read_runs", "render", "write_report"]
