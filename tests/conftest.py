"""Shared fixtures: real data vendored in data/ (nothing outside the repository, no network)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from drsearch.index import BuildSettings, Engine, build

from .helpers import cranfield_docs, cranfield_qrels_lines, cranfield_queries, sample_docs

# A suite started as a background job of a non-interactive shell (`make test &`, nohup, some CI
# runners) inherits SIGINT ignored, and so would every `drsearch` child it starts: the tests that
# Ctrl-C a run would then see it ignore the signal. Python's own handler here is reset to the
# default in each child at exec, so children meet SIGINT as a user's terminal sends it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# CI (CI=true) explores the same property-test examples on every run, so a submission's result
# does not depend on luck; local runs keep drawing new ones (and store failures to replay).
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sample") / "sample.sqlite3"
    build(sample_docs(), path)
    return path


@pytest.fixture(scope="session")
def cran_small_chunks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Cranfield with 60/45-word chunks: many chunks per document, many score ties."""
    path = tmp_path_factory.mktemp("cran") / "cran.sqlite3"
    build(cranfield_docs(), path, BuildSettings(chunk_words=60, chunk_stride=45))
    return path


@pytest.fixture()
def sample_engine(sample_index: Path) -> Iterator[Engine]:
    with Engine.open(sample_index) as e:
        yield e


# Cranfield as a user meets it: an index (default chunks), a topics TSV and TREC qrels
@pytest.fixture(scope="session")
def cran_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cranfield") / "cran.sqlite3"
    build(cranfield_docs(), path)
    return path


@pytest.fixture(scope="session")
def cran_topics(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("topics") / "cran.tsv"
    path.write_text("".join(f"{i}\t{q}\n" for i, q in enumerate(cranfield_queries(), 1)))
    return path


@pytest.fixture(scope="session")
def cran_qrels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("qrels") / "cran.qrels"
    path.write_text("".join(cranfield_qrels_lines()))
    return path
