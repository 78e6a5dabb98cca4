"""The model endpoint probe of ``drsearch generate drbencher`` retries as the stages do: a
429 (with Retry-After) at start-up is a busy endpoint, not a dead one, so it is retried with
``--max-attempts`` and the run goes on; a dead endpoint is still one line and exit 2."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsearch.dev.chat import RuleResponder, error_body, serve_chat
from drsearch.dev.drbencher import RULES

from .kgserver import kg_serve
from .test_kg_stages import generate
from .test_pipeline import v2_config


class Throttled:
    """The rule model behind an endpoint that answers 429 (Retry-After: 0) to its first
    ``busy`` requests: a shared endpoint at its rate limit when the run starts."""

    def __init__(self, busy: int) -> None:
        self.inner = RuleResponder(RULES)
        self.busy = busy
        self.refused = 0
        self.lock = threading.Lock()

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            if self.refused < self.busy:
                self.refused += 1
                return 429, error_body("rate limit reached, retry later", "rate_limit_exceeded")
        return self.inner.respond(body)


@pytest.fixture()
def kg() -> Iterator[str]:
    with kg_serve() as endpoint:
        yield endpoint


def test_a_429_at_start_up_is_retried_and_the_run_goes_on(kg: str, tmp_path: Path) -> None:
    model = Throttled(busy=2)
    with serve_chat(model) as url:
        rc, summary, err = generate(v2_config(tmp_path, kg, url), tmp_path / "gen", "--until", "clues",
                                    "--max-attempts", "4", "--backoff", "0")
    assert rc == 0, err
    assert model.refused == 2 and summary is not None and summary["ran"][-1] == "clues"


def test_an_endpoint_still_busy_after_every_attempt_is_one_line_and_exit_2(kg: str, tmp_path: Path) -> None:
    model = Throttled(busy=100)
    out = tmp_path / "gen"
    with serve_chat(model) as url:
        rc, _, err = generate(v2_config(tmp_path, kg, url), out, "--until", "clues",
                              "--max-attempts", "3", "--backoff", "0")
    assert rc == 2 and model.refused == 3, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "generator.base_url" in lines[0] and "3 attempts" in lines[0], err
    assert not (out / "entities.jsonl").exists()
