"""Property-based fuzzing of every endpoint against the app's own OpenAPI schema.

schemathesis turns each operation of /openapi.json into a Hypothesis strategy of
requests, schema-valid ones (positive) and schema-violating ones (negative: wrong types,
missing and extra fields, out-of-range numbers, odd strings); each is sent in-process.
Checks: no 5xx, every response matches the documented schema and content type, and every
schema-violating request is rejected with a 4xx. Bounded and derandomised, so CI runs the
same few hundred cases each time.

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
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
)

from drsearch.index import BlockList, Engine
from drsearch.server import create_app

EXAMPLES = {"POST /search": 80, "POST /open": 80, "GET /health": 5, "GET /stats": 5, "GET /metrics": 5}
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance, negative_data_rejection]


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

    @settings(max_examples=EXAMPLES[label], deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        case = data.draw(operation.as_strategy(generation_mode=mode))
        response = case.call()
        assert response.status_code < 500, response.text[:500]
        case.validate_response(response, checks=CHECKS)

    run()
