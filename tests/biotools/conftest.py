"""Biomedical tool fixtures: the local stand-ins of the ten APIs (drsearch.dev.apis)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from drsearch.dev.apis import LocalApis, serve_apis

from ..helpers import DATA

FIXTURES = DATA / "biotools/fixtures.json"


@pytest.fixture(scope="session")
def apis() -> Iterator[LocalApis]:
    """The ten stand-ins on 127.0.0.1 (the BioMCP one over streamable HTTP)."""
    with serve_apis(FIXTURES) as running:
        yield running
