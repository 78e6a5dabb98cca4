"""Shared fixtures: real data vendored in data/ (nothing outside the repository, no network)."""

from __future__ import annotations

import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from drsearch.index import BuildSettings, Engine, build

from .helpers import cranfield_docs, cranfield_qrels_lines, cranfield_queries, sample_docs

if TYPE_CHECKING:
    from offline_recipe.driver import Recipe

# A suite started as a background job of a non-interactive shell (`make test &`, nohup, some CI
# runners) inherits SIGINT ignored, and so would every `drsearch` child it starts: the tests that
# Ctrl-C a run would then see it ignore the signal. Python's own handler here is reset to the
# default in each child at exec, so children meet SIGINT as a user's terminal sends it.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# No property test has a deadline: an example's wall time is not what any of them checks (speed
# numbers come from the benchmark scripts), and on a loaded machine, the two workers of
# `make test` or a neighbour's job, Hypothesis's default 200 ms failed a pure-arithmetic test
# (a 0.25 ms example measured at 296 ms). CI (CI=true) also explores the same examples on every
# run, so a submission's result does not depend on luck; local runs keep drawing new ones (and
# store failures to replay).
settings.register_profile("suite", deadline=None)
settings.register_profile("ci", parent=settings.get_profile("suite"), derandomize=True)
settings.load_profile("ci" if os.environ.get("CI") else "suite")

# The test files that take longest, longest first (wall time of each under `make test`'s
# `-n 3 --dist loadfile`; the slowest run a documented recipe, a fuzzer or many servers). They
# are collected first so that xdist hands them out first: a long file started last runs alone
# while the other workers sit idle (the retriever ablation did: the last ~45 s of the suite).
# Every other file keeps its collection order. tests/test_suite.py checks that each exists.
SLOWEST_FILES = (
    "tests/server/test_fuzz.py",
    "tests/dense/test_ablation_recipe.py",
    "tests/tools/test_cli.py",
    "tests/benchmark/generate/drbencher/test_v2_corpus.py",
    "tests/dense/test_front_end_contract.py",
    "tests/dense/test_dense.py",
    "tests/benchmark/generate/drbencher/test_five_domains.py",
    "tests/server/test_serve_limits.py",
    "tests/benchmark/generate/drbencher/test_concurrency.py",
    "tests/corpus/test_pipeline.py",
    "tests/tools/test_release_blocklist_everywhere.py",
    "tests/benchmark/generate/openbiorq/test_openness.py",
    "tests/index/test_ranking.py",
    "tests/server/test_http_bench.py",
    "tests/benchmark/generate/drbencher/test_kg_limits.py",
    "tests/tools/test_core_install.py",
    "tests/test_quickstart.py",
)


def pytest_configure(config: pytest.Config) -> None:
    # pytest-xdist's loadfile hands out files in order of their number of tests, most first
    # (--loadscope-reorder, its default), which puts a long file of two tests near the end;
    # collection order (SLOWEST_FILES first) is the better guess of what takes longest.
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def slowest_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """``items`` with those of SLOWEST_FILES first, in its order; the order within a file and
    of all other files is kept (a stable sort)."""
    rank = {path: i for i, path in enumerate(SLOWEST_FILES)}
    return sorted(items, key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items[:] = slowest_first(items)


@pytest.fixture(scope="session", autouse=True)
def private_cache_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Caches a run writes beside the user's (``drsearch.index.filehash``: the SQLite file's
    SHA-256) go to a session directory, never into the home of whoever runs the tests; set in
    the environment so the ``drsearch`` children the tests start use it too."""
    path = tmp_path_factory.mktemp("xdg-cache")
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(path)
    yield path
    if before is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = before


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


# The same corpora with every chunk's text stored (schema version 2, BuildSettings(chunk_text=
# "stored")): what the kernel's page readers of chunk texts (read_texts, texts_snippets,
# search_hits) read; a version-4 file keeps its chunks as spans of the document texts instead.
STORED = BuildSettings(chunk_text="stored")


@pytest.fixture(scope="session")
def sample_index_stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sample-stored") / "sample.sqlite3"
    build(sample_docs(), path, STORED)
    return path


@pytest.fixture(scope="session")
def cran_index_stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cranfield-stored") / "cran.sqlite3"
    build(cranfield_docs(), path, STORED)
    return path


@pytest.fixture(scope="session")
def cran_small_chunks_stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cran-stored") / "cran.sqlite3"
    build(cranfield_docs(), path, BuildSettings(chunk_words=60, chunk_stride=45, chunk_text="stored"))
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


# The sample release, made once per session (per xdist worker) the way ``make sample-release``
# makes it (the construction recipe run offline on data/construct), and cheap per-test copies
# of it. Here rather than in tests/release/ because the CLI tests (tests/tools/) use it too: one
# definition is one run of the recipe per session, where one per directory ran it twice.
@pytest.fixture(scope="session")
def sample_recipe(tmp_path_factory: pytest.TempPathFactory) -> Recipe:
    """The recipe run of ``make sample-release`` (fetch times frozen), with its working files.
    Tests that change its pool restore it; none touches its release (``pristine_release``)."""
    from offline_recipe.driver import run_recipe  # the release layer's: imported by its users only

    root = tmp_path_factory.mktemp("sample")
    return run_recipe(root / "sample-release.work", frozen_fetch_times=True, release=root / "sample-release")


@pytest.fixture(scope="session")
def pristine_release(sample_recipe: Recipe) -> Path:
    """The bundled sample release: the construction recipe's output."""
    return sample_recipe.release


@pytest.fixture()
def release(pristine_release: Path, tmp_path: Path) -> Path:
    """A private copy of the sample release that a test may damage."""
    dst = tmp_path / "release"
    shutil.copytree(pristine_release, dst)
    return dst


# The sample's three blocked leak artifacts and the documents after them, up to this many: a
# corpus small enough to embed in seconds, with blocked pages that match real queries.
EMBEDDED_DOCS = 24


@pytest.fixture(scope="session")
def embedded_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small slice of the sample corpus (the blocked leak artifacts among them) with its
    vectors (``CORPUS.vectors``, the pinned MiniLM), embedded once a session, for the
    front-end contract over every retriever (tests/dense/test_front_end_contract.py)."""
    pytest.importorskip("onnxruntime", reason="the embed extra (onnxruntime) is not installed")
    from drsearch.dense import Embedder, default_sidecar, embed_corpus

    blocked = {line.strip() for line in (Path(__file__).parents[1] / "data/sample/blocked_docids.txt")
               .read_text().splitlines() if line.strip() and not line.startswith("#")}
    docs = sample_docs()
    chosen = [d for d in docs if d["docid"] in blocked]
    chosen += [d for d in docs if d["docid"] not in blocked][:EMBEDDED_DOCS - len(chosen)]
    path = tmp_path_factory.mktemp("embedded") / "small.sqlite3"
    build(chosen, path)
    with Engine.open(path) as engine:
        embed_corpus(engine, default_sidecar(path), Embedder())
    return path
