"""The DrBencher generator package's public surface changes only on purpose."""

from __future__ import annotations

import drsearch.benchmark.generate.drbencher as drbencher


def test_public_api() -> None:
    assert set(drbencher.__all__) == {
        "CachedSparql", "ConfigError", "KGDataError", "KGEndpointError", "SparqlClient", "SparqlError",
        "SparqlResult", "SparqlSettings", "check_portable"}
    for name in drbencher.__all__:
        assert getattr(drbencher, name) is not None
