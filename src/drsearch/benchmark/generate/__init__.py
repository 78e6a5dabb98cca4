"""The benchmark generation toolkit: machinery the generators share (docs/GENERATE.md).

Public API (pinned by tests/benchmark/generate/test_public_api.py)::

    Pipeline(name, [Stage(name, run, inputs=, outputs=, settings=, models=)])
    run_pipeline(pipeline, GenerateSettings(out=, until=, cache_mode=, cache=)) -> summary
    StageContext: read_jsonl, write_jsonl, write_json, complete / reply_text (ModelEndpoint),
                  map(items, key, process -> Keep(row) | Reject(check, reason)), reject,
                  episode(question, preset, endpoint, searcher) -> trajectory record
    generate_main(build, argv): the shared command line (--out, --until, --cache-mode, ...)

It may import ``drsearch.agents`` (model client, replay cache) and ``drsearch.index``.
"""

from .cli import add_generate_arguments, generate_main, settings_from
from .errors import GenerateError, PipelineInputError
from .stages import (
    RESERVED,
    GenerateSettings,
    Keep,
    ModelEndpoint,
    Outcome,
    Pipeline,
    Reject,
    Stage,
    StageContext,
    file_sha256,
    generate_code_sha256,
    run_pipeline,
)

__all__ = [
    "RESERVED",
    "GenerateError",
    "GenerateSettings",
    "Keep",
    "ModelEndpoint",
    "Outcome",
    "Pipeline",
    "PipelineInputError",
    "Reject",
    "Stage",
    "StageContext",
    "add_generate_arguments",
    "file_sha256",
    "generate_code_sha256",
    "generate_main",
    "run_pipeline",
    "settings_from",
]
