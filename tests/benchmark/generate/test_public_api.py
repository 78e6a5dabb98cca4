"""The generation toolkit's public surface (this part: calibration, embeddings, dedup, diversity)."""

from __future__ import annotations

import subprocess
import sys

import drsearch.benchmark.generate as generate


def test_public_api() -> None:
    assert set(generate.__all__) == {
        "BUCKETS", "DedupResult", "DiversityResult", "Duplicate", "Embedder", "EmbeddingModelError", "ItemStats",
        "MODEL_SHA256", "RULES", "SentenceTransformerEmbedder", "bucket_counts", "cosine_matrix",
        "dedup", "diversify", "dr256_bucket", "drbencher_bucket", "frozen_core", "item_stats", "openbiorq_bucket",
        "wilson_table"}
    for name in generate.__all__:
        assert getattr(generate, name) is not None
    from drsearch.benchmark.generate.calibrate import calibrate

    assert callable(calibrate) and generate.calibrate.calibrate is calibrate  # the submodule


def test_importing_the_package_needs_no_extra() -> None:
    code = ("import sys, drsearch.benchmark.generate as g; "
            "assert not {'onnxruntime', 'scipy', 'tokenizers'} & set(sys.modules), sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)
