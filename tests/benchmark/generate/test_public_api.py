"""The generation toolkit's public surface changes only on purpose."""

from __future__ import annotations

import subprocess
import sys

import drsearch.benchmark.generate as generate


def test_public_api() -> None:
    assert set(generate.__all__) == {
        "RESERVED", "GenerateError", "GenerateSettings", "Keep", "ModelEndpoint", "Outcome", "Pipeline",
        "PipelineInputError", "Reject", "Stage", "StageContext", "file_sha256",
        "generate_code_sha256", "run_pipeline",
        "BUCKETS", "DedupResult", "DiversityResult", "Duplicate", "Embedder", "EmbeddingModelError", "ItemStats",
        "MODEL_SHA256", "RULES", "SentenceTransformerEmbedder", "bucket_counts", "cosine_matrix",
        "dedup", "diversify", "dr256_bucket", "drbencher_bucket", "frozen_core", "item_stats", "openbiorq_bucket",
        "wilson_table"}
    for name in generate.__all__:
        assert getattr(generate, name) is not None
    from drsearch.benchmark.generate.calibrate import calibrate

    assert callable(calibrate) and generate.calibrate.calibrate is calibrate  # the submodule


def test_importing_the_package_needs_no_extra() -> None:
    # nor the DrBencher generator's package, the generate verbs' options (drsearch --help) and the
    # offline KG endpoint: the pipeline machinery (httpx, the agents extra) is imported on first use
    code = ("import sys, drsearch.benchmark.generate as g, drsearch.tools.generate_cli, "
            "drsearch.benchmark.generate.drbencher.kgstore; "
            "assert not {'onnxruntime', 'scipy', 'tokenizers', 'httpx', 'pyoxigraph'} & set(sys.modules), "
            "sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_lazy_name_is_public() -> None:
    assert set(generate._LAZY) <= set(generate.__all__)
