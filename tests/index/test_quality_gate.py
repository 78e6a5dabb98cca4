"""Ranking-quality gate: drsearch must keep its pinned Cranfield and CISI figures.

Builds drsearch indexes of both vendored test collections (data/testcollections) with both
tokenizers into a temporary directory, recomputes nDCG@10, MAP@100 and Recall@100 with the
functions of benchmarks/quality.py and asserts each reaches its floor in
benchmarks/quality_baseline.json (the measured value rounded down to 3 decimals; raise it
with ``python benchmarks/quality.py --update-baseline``, see docs/QUALITY.md).

The last tests show the gate has teeth: the same measurement with the scorer's results
shuffled (and the one kernel call's hits), or with a random ranking, falls below the floors.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from drsearch.index import native
from drsearch.index.scoring import Scorer

REPO = Path(__file__).resolve().parents[2]
QUALITY_PY = REPO / "benchmarks" / "quality.py"
CASES = [(c, t) for c in ("cranfield", "cisi") for t in ("porter", "unicode61")]


def _load_quality() -> ModuleType:
    """Import benchmarks/quality.py from the repository (it is not a package)."""
    spec = importlib.util.spec_from_file_location("drsearch_bench_quality", QUALITY_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module


quality = _load_quality()


@pytest.fixture(scope="module")
def collections() -> dict[str, Any]:
    """Both collections, parsed once from the vendored files."""
    return {name: quality.load_collection(name, REPO / "data" / "testcollections")
            for name in ("cranfield", "cisi")}


@pytest.fixture(scope="module")
def baseline() -> dict[str, Any]:
    """The pinned floors."""
    return quality.load_baseline(REPO / "benchmarks" / "quality_baseline.json")  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Where the indexes are built."""
    yield tmp_path_factory.mktemp("quality")


def _below_floors(metrics: dict[str, float], floors: dict[str, float]) -> list[str]:
    return [f"{m}: {metrics[m]:.4f} < floor {floors[m]:.3f}"
            for m in quality.METRICS if metrics[m] < floors[m]]


def test_collections_parse_as_documented(collections: dict[str, Any]) -> None:
    """Document, query and judgment counts of the vendored files (data/README.md)."""
    cran, cisi = collections["cranfield"], collections["cisi"]
    assert (len(cran.docs), len(cran.queries), sum(map(len, cran.qrels.values()))) == (
        1400, 225, 1837)
    assert (len(cisi.docs), len(cisi.queries), sum(map(len, cisi.qrels.values()))) == (
        1460, 76, 3114)
    # Cranfield query 3 (the third in cran.qry, whose .I is 004) is about heat conduction.
    assert "heat conduction" in cran.queries["3"]
    gains = {g for j in cran.qrels.values() for g in j.values()}
    assert gains == {0, 1, 2, 3, 4}


@pytest.mark.parametrize(("collection", "tokenizer"), CASES)
def test_drsearch_reaches_pinned_floors(collection: str, tokenizer: str,
                                        collections: dict[str, Any], baseline: dict[str, Any],
                                        workdir: Path) -> None:
    """Every metric of drsearch on this collection and tokenizer is at least its floor."""
    coll = collections[collection]
    floors = baseline[collection][tokenizer]
    assert set(floors) == set(quality.METRICS)
    metrics = quality.evaluate(quality.run_drsearch(coll, tokenizer, workdir), coll)
    assert not _below_floors(metrics, floors), (
        f"{collection}/{tokenizer} ranking quality regressed: {metrics}")


@pytest.mark.parametrize(("collection", "tokenizer"), CASES)
def test_gate_fails_when_the_scorer_order_is_shuffled(
        collection: str, tokenizer: str, collections: dict[str, Any],
        baseline: dict[str, Any], workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same documents, random order: nDCG@10 and MAP@100 drop below their floors."""
    real_rank = Scorer.rank_texts  # (Scorer.rank calls it too)
    rng = random.Random(1234)

    def shuffled_rank(self: Scorer, *args: Any, **kwargs: Any) -> tuple[list[tuple[int, float]], Any]:
        ranked, made = real_rank(self, *args, **kwargs)
        order = list(range(len(ranked)))
        rng.shuffle(order)  # the texts made with the ranking (if any) follow their chunks
        return [ranked[i] for i in order], made and tuple([part[i] for i in order] for part in made)

    monkeypatch.setattr(Scorer, "rank_texts", shuffled_rank)
    real_hits = native.search_hits  # (a search made in one kernel call: its hits shuffled)

    def shuffled_hits(*args: Any) -> Any:
        got = real_hits(*args)
        return rng.sample(got, len(got)) if type(got) is list else got

    monkeypatch.setattr(native, "search_hits", shuffled_hits)
    coll = collections[collection]
    metrics = quality.evaluate(quality.run_drsearch(coll, tokenizer, workdir), coll)
    failed = {line.split(":")[0] for line in
              _below_floors(metrics, baseline[collection][tokenizer])}
    assert {"ndcg@10", "map@100"} <= failed, metrics


@pytest.mark.parametrize("collection", ["cranfield", "cisi"])
def test_gate_fails_for_a_random_ranking(collection: str, collections: dict[str, Any],
                                         baseline: dict[str, Any]) -> None:
    """100 random documents per query fall below every floor."""
    coll = collections[collection]
    rng = random.Random(99)
    docids = [d["docid"] for d in coll.docs]
    run = {q: rng.sample(docids, 100) for q in coll.queries}
    metrics = quality.evaluate(run, coll)
    for tokenizer in ("porter", "unicode61"):
        assert len(_below_floors(metrics, baseline[collection][tokenizer])) == 3, metrics
