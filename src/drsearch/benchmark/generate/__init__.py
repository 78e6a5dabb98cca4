"""The benchmark generation toolkit (docs/GENERATE.md).

Calibration from rollouts (``calibrate``), offline sentence embeddings (``embed``, the
``embed`` extra), near-duplicate and diversity filters (``dedup``, ``diversity``). Names
are imported on first use, so importing the package needs neither scipy nor onnxruntime.

The calibration primitive is ``drsearch.benchmark.generate.calibrate.calibrate``: the
package attribute ``calibrate`` is that submodule (Python binds a submodule's name on its
parent when it is imported), so the function is not re-exported under the same name.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY: dict[str, str] = {
    **dict.fromkeys(("BUCKETS", "RULES", "ItemStats", "bucket_counts", "dr256_bucket",
                     "drbencher_bucket", "frozen_core", "item_stats", "openbiorq_bucket", "wilson_table"),
                    "calibrate"),
    **dict.fromkeys(("Embedder", "EmbeddingModelError", "SentenceTransformerEmbedder", "MODEL_SHA256"),
                    "embed"),
    **dict.fromkeys(("DedupResult", "Duplicate", "dedup"), "dedup"),
    **dict.fromkeys(("DiversityResult", "diversify"), "diversity"),
    **dict.fromkeys(("cosine_matrix",), "similarity"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = sorted(_LAZY)
