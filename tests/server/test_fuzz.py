"""Property-based fuzzing of every endpoint against the app's own OpenAPI schema.

schemathesis turns each operation of /openapi.json into a Hypothesis strategy of
requests, schema-valid ones (positive) and schema-violating ones (negative: wrong types,
missing and extra fields, out-of-range numbers, odd strings); each is sent in-process.
Checks: all of schemathesis's (``--checks all``): no 5xx, every response matches the
documented status codes, headers, schema and content type, every schema-violating request
is rejected with a 4xx and every schema-valid one accepted, 405s carry ``Allow``. Bounded
and derandomised, so CI runs the same few hundred cases each time. The schemathesis CLI
itself, with all checks and all its phases (coverage: unsupported methods, missing
fields, boundary values), runs against a real ``drsearch serve`` in
``test_schemathesis_cli_finds_nothing``.

(schemathesis's own ``@schema.parametrize`` over a fixture breaks under pytest 9, so the
strategies are drawn explicitly; the checks are schemathesis's.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import CHECKS as ALL_CHECKS

from drsearch.index import BlockList, Engine
from drsearch.server import create_app

EXAMPLES = {"POST /search": 80, "POST /open": 80, "POST /retrieve": 60, "GET /health": 5, "GET /stats": 5, "GET /metrics": 5}
CHECKS = ALL_CHECKS.get_all()  # every check schemathesis has (`--checks all`)


@pytest.fixture(scope="module")
def api_schema(sample_index: Path, blocklist: BlockList) -> Iterator[Any]:
    with Engine.open(sample_index, blocklist) as engine:
        yield schemathesis.openapi.from_asgi("/openapi.json", create_app(engine))


def test_every_operation_is_fuzzed(api_schema: Any) -> None:
    labels = {op.ok().label for op in api_schema.get_all_operations()}
    assert labels == set(EXAMPLES)


# GET endpoints take no input: nothing schema-violating to send them.
RUNS = [(label, GenerationMode.POSITIVE) for label in sorted(EXAMPLES)] + [
    (label, GenerationMode.NEGATIVE) for label in sorted(EXAMPLES) if label.startswith("POST")]


@pytest.mark.parametrize(("label", "mode"), RUNS, ids=[f"{lb}-{m.value}" for lb, m in RUNS])
def test_no_input_breaks_the_server(api_schema: Any, label: str, mode: GenerationMode) -> None:
    operation = api_schema.find_operation_by_label(label)
    # made once: schemathesis builds a strategy from the schema each time it is asked for one
    # (most of this test's time when it was asked for one per example)
    cases = operation.as_strategy(generation_mode=mode)

    @settings(max_examples=EXAMPLES[label], deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        case = data.draw(cases)
        response = case.call()
        assert response.status_code < 500, response.text[:500]
        case.validate_response(response, checks=CHECKS)

    run()


@pytest.mark.slow
def test_schemathesis_cli_finds_nothing(sample_index: Path, tmp_path: Path) -> None:
    """``schemathesis run --checks all`` against a real ``drsearch serve``: no failure."""
    import os
    import random
    import shutil
    import subprocess
    import sys

    from .test_e2e import start

    server = start(tmp_path, "--database", str(sample_index), "--verify", "none", workers=1)
    try:
        exe = shutil.which("schemathesis") or str(Path(sys.executable).with_name("schemathesis"))
        # CI explores the same cases every run; local runs draw new ones (seed in the message)
        seed = ["--generation-deterministic"] if os.environ.get("CI") else \
            ["--seed", str(random.randrange(1 << 31))]
        p = subprocess.run([exe, "run", server.base + "/openapi.json", "--checks", "all",
                            "--max-examples", "20", "--workers", "1", "--no-color",
                            # hypothesis' "data generation is too slow" is about this machine's
                            # load, not the server: it failed a run on a loaded machine
                            "--suppress-health-check=too_slow",
                            "--report-dir", str(tmp_path / "report"), *seed],
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
    finally:
        assert server.stop() == 0
    assert p.returncode == 0, f"{seed}\n{p.stdout[-6000:]}\n{p.stderr[-2000:]}"
    assert "passed" in p.stdout and "failed" not in p.stdout, p.stdout[-3000:]
