"""The generators' sentence embeddings: :mod:`drsearch.dense.embed`, re-exported.

The model code lives in the dense layer (below the benchmark layer) because the dense
retriever embeds queries with it too; the generators keep importing it from here.
"""

from ...dense.embed import (
    DIMENSION,
    FP32_MODEL_SHA256,
    MAX_TOKENS,
    MODEL_ID,
    MODEL_SHA256,
    ROUTE_FP32,
    ROUTE_INT8,
    TOKENIZER_SHA256,
    Embedder,
    EmbeddingModelError,
    SentenceTransformerEmbedder,
    default_model_path,
    file_sha256,
    mean_pool,
)

__all__ = ["DIMENSION", "FP32_MODEL_SHA256", "MAX_TOKENS", "MODEL_ID", "MODEL_SHA256", "ROUTE_FP32",
           "ROUTE_INT8", "TOKENIZER_SHA256", "Embedder", "EmbeddingModelError", "SentenceTransformerEmbedder",
           "default_model_path", "file_sha256", "mean_pool"]
