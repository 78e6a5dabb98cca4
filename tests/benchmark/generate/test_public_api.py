"""The generation toolkit's public surface changes only on purpose."""

from __future__ import annotations

import drsearch.benchmark.generate as generate


def test_public_api() -> None:
    assert set(generate.__all__) == {
        "RESERVED", "GenerateError", "GenerateSettings", "Keep", "ModelEndpoint", "Outcome", "Pipeline",
        "PipelineInputError", "Reject", "Stage", "StageContext", "add_generate_arguments", "file_sha256",
        "generate_code_sha256", "generate_main", "run_pipeline", "settings_from"}
    for name in generate.__all__:
        assert getattr(generate, name) is not None
