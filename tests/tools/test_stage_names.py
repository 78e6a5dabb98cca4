"""A generator's declared stage names, its stage list and its CLI's copy cannot drift apart."""

from __future__ import annotations

import pytest

from drsearch.benchmark.generate import Pipeline, PipelineInputError, Stage
from drsearch.benchmark.generate.openbiorq import STAGES as OPENBIORQ_STAGES
from drsearch.tools import openbiorq_cli


def test_the_openbiorq_cli_offers_the_generator_s_stages() -> None:
    assert openbiorq_cli._STAGES == OPENBIORQ_STAGES


def test_a_pipeline_whose_stages_differ_from_the_declared_order_is_refused() -> None:
    def run(ctx: object) -> None: ...

    stages = [Stage("a", run, outputs=("a.json",)), Stage("b", run, inputs=("a.json",), outputs=("b.json",))]
    assert [s.name for s in Pipeline("g", stages, order=("a", "b")).stages] == ["a", "b"]
    with pytest.raises(PipelineInputError, match="not the declared"):
        Pipeline("g", stages, order=("a", "c", "b"))
    with pytest.raises(PipelineInputError, match="not the declared"):
        Pipeline("g", stages[::-1], order=("a", "b"))
