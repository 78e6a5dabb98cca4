"""The benchmark generation toolkit: machinery the generators share (docs/GENERATE.md).

Public API (pinned by tests/benchmark/generate/test_public_api.py)::

    Pipeline(name, [Stage(name, run, inputs=, outputs=, settings=, models=)])
    run_pipeline(pipeline, GenerateSettings(out=, until=, cache_mode=, cache=)) -> summary
    StageContext: read_jsonl, write_jsonl, write_json, complete / reply_text (ModelEndpoint),
                  map(items, key, process -> Keep(row) | Reject(check, reason)), reject,
                  episode(question, preset, endpoint, searcher) -> trajectory record

The pipeline machinery (``stages``: the agents' model client, httpx), calibration
from rollouts (``calibrate``), offline sentence embeddings (``embed``, the ``embed`` extra)
and the diversity filter (``diversity``): their names are imported on first use (the
near-duplicate filter ``dedup`` needs numpy only and comes with the package), so importing
the package needs no extra: neither httpx nor scipy nor onnxruntime. The calibration
primitive is ``drsearch.benchmark.generate.calibrate.calibrate``: the package attribute
``calibrate`` is that submodule (Python binds a submodule's name on its parent when it is
imported), so the function is not re-exported under the same name.

It may import ``drsearch.agents`` (model client, replay cache) and ``drsearch.index``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_getattr

# dedup is eager (numpy only): a lazy name may not be its module's (drsearch._lazy).
from .dedup import DedupResult, Duplicate, dedup
from .errors import GenerateError, PipelineInputError

if TYPE_CHECKING:
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

_LAZY: dict[str, str] = {
    **dict.fromkeys(("RESERVED", "GenerateSettings", "Keep", "ModelEndpoint", "Outcome", "Pipeline", "Reject",
                     "Stage", "StageContext", "file_sha256", "generate_code_sha256", "run_pipeline"),
                    "stages"),
    **dict.fromkeys(("BUCKETS", "RULES", "ItemStats", "bucket_counts", "dr256_bucket",
                     "drbencher_bucket", "frozen_core", "item_stats", "openbiorq_bucket", "wilson_table"),
                    "calibrate"),
    **dict.fromkeys(("Embedder", "EmbeddingModelError", "SentenceTransformerEmbedder", "MODEL_SHA256"),
                    "embed"),
    **dict.fromkeys(("DiversityResult", "diversify"), "diversity"),
    **dict.fromkeys(("cosine_matrix",), "similarity"),
}


__getattr__ = lazy_getattr(__name__, _LAZY, globals())


# Eager names, then the lazy ones of _LAZY (a test checks the two lists agree).
__all__ = [
    "BUCKETS",
    "MODEL_SHA256",
    "RESERVED",
    "RULES",
    "DedupResult",
    "DiversityResult",
    "Duplicate",
    "Embedder",
    "EmbeddingModelError",
    "GenerateError",
    "GenerateSettings",
    "ItemStats",
    "Keep",
    "ModelEndpoint",
    "Outcome",
    "Pipeline",
    "PipelineInputError",
    "Reject",
    "SentenceTransformerEmbedder",
    "Stage",
    "StageContext",
    "bucket_counts",
    "cosine_matrix",
    "dedup",
    "diversify",
    "dr256_bucket",
    "drbencher_bucket",
    "file_sha256",
    "frozen_core",
    "generate_code_sha256",
    "item_stats",
    "openbiorq_bucket",
    "run_pipeline",
    "wilson_table",
]
