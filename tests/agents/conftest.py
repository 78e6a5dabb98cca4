"""Agents fixtures: a real `drsearch serve` over the sample corpus, and the sample questions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from drsearch.server import ServeProcess

from ..helpers import DATA

QUESTIONS = DATA / "sample/questions.jsonl"
BLOCKED = DATA / "sample/blocked_docids.txt"


@pytest.fixture(scope="session")
def search_server(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of `drsearch serve` (1 worker) with the sample blocklist (its 3 leak artifacts) applied."""
    with ServeProcess(sample_index, "--blocked-docids", str(BLOCKED),
                      log=tmp_path_factory.mktemp("serve") / "serve.log") as server:
        yield server.url
