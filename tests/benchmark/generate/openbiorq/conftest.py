"""Shared pieces of the OpenBioRQ-style pipeline tests: the fixture, the rule-based models, the CLI."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsearch.dev.chat import RuleResponder, serve_rules
from drsearch.tools.cli import main

from ....helpers import DATA
from .rules import RULES

SOURCES = DATA / "openbiorq/sources.jsonl"


def generate(stage: str, out: Path, *args: str, base_url: str = "http://127.0.0.1:9/v1",
             sources: Path | None = SOURCES) -> tuple[int, dict[str, Any] | None, str]:
    """``drsearch generate openbiorq STAGE OUT`` in process: (exit code, summary, stderr).
    ``sources=None`` gives neither --sources nor --base-url (the calibration reports)."""
    buf, err = io.StringIO(), io.StringIO()
    given = [] if sources is None else ["--sources", str(sources), "--base-url", base_url]
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        rc = main(["generate", "openbiorq", stage, str(out), *given, "--json", *args])
    return rc, (json.loads(buf.getvalue()) if rc == 0 else None), err.getvalue()


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture()
def responder() -> Iterator[RuleResponder]:
    with serve_rules(RULES) as r:
        yield r
