"""`drsearch run`'s progress bar (stderr, drawn only when stderr is a terminal; --quiet
silences it): episodes done out of all selected (resumed ones included), errors, rate."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from drsearch.dev.chat import serve_fake

from ..terminal import in_terminal, piped
from .conftest import BLOCKED, QUESTIONS

SCRIPTS: dict[int, list[dict[str, Any]]] = {4: [{"status": 400}], 9: [{"status": 400}]}  # two model errors


def _run(out: Path, base_url: str, sample_index: Path, *extra: str, terminal: bool = True
         ) -> tuple[dict[str, Any], str]:
    argv = ["run", "--questions", str(QUESTIONS), "--database", str(sample_index), "--blocked-docids",
            str(BLOCKED), "--out", str(out), "--model", "fake-model", "--base-url", base_url,
            "--max-attempts", "1", "--json", *extra]
    rc, stdout, stderr = (in_terminal if terminal else piped)(*argv)
    assert rc == 0, stderr
    return json.loads(stdout), stderr


def _frames(rendered: str) -> list[str]:
    """The bar's successive states (tqdm redraws one line with carriage returns)."""
    return [f.strip() for f in re.split(r"[\r\n]+", rendered) if f.strip()]


def test_progress_shows_done_errors_and_rate(sample_index: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    with serve_fake(SCRIPTS) as fake:
        first, quiet = _run(out, fake.url, sample_index, "--quiet", "--limit", "3")
        assert quiet == "" and first["questions"] == 3
        summary, rendered = _run(out, fake.url, sample_index, "--concurrency", "2")
    assert summary["resumed"] == 3 and summary["statuses"] == {"answered": 10, "model_error": 2}
    frames = _frames(rendered)
    assert frames[0].startswith("episodes:") and "3/12" in frames[0]  # resumed episodes count as done
    last = frames[-1]
    assert re.search(r"\b12/12\b", last), last
    assert "errors=2" in last and "infra=0" in last, last
    assert re.search(r"\d+(\.\d+)?(q/s|s/q)", last), last  # a rate, not "?q/s"
    assert all("Traceback" not in f for f in frames)


def test_no_bar_when_stderr_is_not_a_terminal(sample_index: Path, tmp_path: Path) -> None:
    with serve_fake(SCRIPTS) as fake:
        summary, stderr = _run(tmp_path / "run", fake.url, sample_index, "--limit", "3", terminal=False)
    assert summary["questions"] == 3
    assert "episodes:" not in stderr and "\r" not in stderr and "\x1b" not in stderr, stderr
