"""Embedding models other than the pinned MiniLM: an ONNX model directory, a
sentence-transformers model, and the choice of device (docs/RETRIEVERS.md, "Other models").

``drsearch embed --model M`` names one of:

- an ONNX file (``.onnx``): the pinned all-MiniLM-L6-v2 int8 model (:class:`~.embed.Embedder`,
  SHA-256 checked);
- a directory holding ``model.onnx`` and ``tokenizer.json`` (:class:`OnnxDirEmbedder`):
  any transformer encoder exported to ONNX, run with onnxruntime; pooling (``mean`` over the
  attention mask, the first token ``cls``, or ``none`` for a model whose first output is
  already one vector a text), ℓ2 normalisation and the input cut are options, recorded;
- anything else: a sentence-transformers model name or path, where the
  ``sentence-transformers`` package is importable (:class:`SentenceTransformersModel`;
  local files only, nothing is downloaded).

Every model's identity and SHA-256s go into the sidecar header (``describe()``), and a query
is embedded by the model the header names or not at all: :func:`query_embedder` rebuilds the
embedder from ``--embed-model`` and the header's recorded options, and the retriever checks
the SHA-256s.

``device``: ``cpu`` or ``cuda``. ``cuda`` uses onnxruntime's CUDA execution provider (or
sentence-transformers on CUDA) where one is available, and is refused otherwise
(EmbeddingModelError, exit 2): there is never a silent fall back to the CPU, whose vectors
would differ within the stated tolerance but not be what was asked for.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..contract import InvalidInputError
from .embed import (
    DEFAULT_BATCH,
    MAX_TOKENS,
    Embedder,
    EmbeddingModelError,
    Float32Rows,
    file_sha256,
)

DEVICES = ("cpu", "cuda")
POOLINGS = ("mean", "cls", "none")
ROUTE_ONNX = "onnx"
ROUTE_ST = "sentence-transformers"
CUDA_PROVIDER = "CUDAExecutionProvider"
_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def _providers(device: str) -> list[str]:
    """onnxruntime's providers for ``device``; EmbeddingModelError where CUDA is not available."""
    if device not in DEVICES:
        raise InvalidInputError(f"--device {device!r}: one of {', '.join(DEVICES)}")
    if device == "cpu":
        return ["CPUExecutionProvider"]
    import onnxruntime as ort

    available = ort.get_available_providers()
    if CUDA_PROVIDER not in available:
        raise EmbeddingModelError(f"--device cuda: onnxruntime has no CUDA provider here (it has "
                                  f"{', '.join(available)}; install onnxruntime-gpu on a machine with "
                                  "a GPU); no fall back to the CPU")
    return [CUDA_PROVIDER, "CPUExecutionProvider"]


def onnx_session(model: Path, device: str, threads: int | None) -> Any:
    """An onnxruntime session of ``model`` on ``device``; EmbeddingModelError if it cannot load or
    CUDA was asked for and the session did not get it (onnxruntime itself would fall back)."""
    try:
        import onnxruntime as ort
    except ImportError as e:
        raise EmbeddingModelError("embeddings need the 'embed' extra: pip install 'drsearch[embed]' "
                                  f"(missing module {e.name or e})") from None
    providers = _providers(device)
    options = ort.SessionOptions()
    # Idle intra-op threads sleep instead of spinning: a text is one short run, so between runs
    # onnxruntime's spinning workers burnt ~30% more CPU than the work itself, taken from the
    # other processes of a shared machine (the server's workers, a build, other tests).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if threads is not None:
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
    try:
        session = ort.InferenceSession(str(model), options, providers=providers)
    except Exception as e:  # onnxruntime raises its own exception types for a corrupt file
        raise EmbeddingModelError(f"embedding model {model}: onnxruntime cannot load it ({e})") from None
    if device == "cuda" and CUDA_PROVIDER not in session.get_providers():
        raise EmbeddingModelError(f"--device cuda: onnxruntime could not start its CUDA provider for "
                                  f"{model} (check the CUDA and cuDNN libraries); no fall back to the CPU")
    return session


class OnnxDirEmbedder:
    """A transformer encoder exported to ONNX: ``DIR/model.onnx`` with ``DIR/tokenizer.json``.

    The session's inputs ``input_ids``, ``attention_mask`` and ``token_type_ids`` are fed where
    the model declares them (int64); its first output is pooled (``mean``: over the attention
    mask; ``cls``: the first token; ``none``: the output is already (batch, dimension)) and,
    with ``normalise``, ℓ2-normalised. One text a run, so no padding enters any vector.
    """

    route = ROUTE_ONNX

    def __init__(self, model_dir: str | os.PathLike[str], *, pooling: str = "mean", normalise: bool = True,
                 max_tokens: int = MAX_TOKENS, device: str = "cpu", threads: int | None = None) -> None:
        if pooling not in POOLINGS:
            raise InvalidInputError(f"--pooling {pooling!r}: one of {', '.join(POOLINGS)}")
        if max_tokens < 1:
            raise InvalidInputError(f"--max-tokens {max_tokens}: must be at least 1")
        self.model_dir = Path(model_dir)
        model, tokenizer_file = self.model_dir / "model.onnx", self.model_dir / "tokenizer.json"
        for f in (model, tokenizer_file):
            if not f.is_file():
                raise EmbeddingModelError(f"embedding model {self.model_dir}: no {f.name} in it (an ONNX "
                                          "model directory holds model.onnx and tokenizer.json)")
        try:
            from tokenizers import Tokenizer
        except ImportError as e:
            raise EmbeddingModelError("embeddings need the 'embed' extra: pip install 'drsearch[embed]' "
                                      f"(missing module {e.name or e})") from None
        self.pooling, self.normalise, self.max_tokens, self.device = pooling, normalise, max_tokens, device
        self.model_sha256 = file_sha256(model)
        self.tokenizer_sha256 = file_sha256(tokenizer_file)
        try:
            self.tokenizer = Tokenizer.from_file(str(tokenizer_file))
        except Exception as e:  # tokenizers raises a bare Exception for a bad file
            raise EmbeddingModelError(f"tokenizer {tokenizer_file}: cannot load it ({e})") from None
        self.tokenizer.enable_truncation(max_length=max_tokens)
        self.tokenizer.no_padding()
        self.session = onnx_session(model, device, threads)
        self._inputs = [i.name for i in self.session.get_inputs()]
        unknown = set(self._inputs) - {"input_ids", "attention_mask", "token_type_ids"}
        if unknown or "input_ids" not in self._inputs:
            raise EmbeddingModelError(f"embedding model {model}: inputs {sorted(self._inputs)}; drsearch "
                                      "feeds input_ids, attention_mask and token_type_ids")
        self._output = self.session.get_outputs()[0].name
        self.dimension = int(self.embed(["dimension probe"]).shape[1])

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dimension": getattr(self, "dimension", 0), "max_tokens": self.max_tokens,
                               "model": f"onnx:{self.model_dir.name}", "model_sha256": self.model_sha256,
                               "normalised": self.normalise, "pooling": self.pooling, "route": self.route,
                               "tokenizer_sha256": self.tokenizer_sha256}
        if self.device != "cpu":
            out["device"] = self.device
        return out

    def embed(self, texts: Sequence[str]) -> Float32Rows:
        if isinstance(texts, str):
            raise TypeError("embed takes a sequence of texts, not one string")
        rows: list[np.ndarray[Any, Any]] = []
        for e in self.tokenizer.encode_batch(list(texts)):
            feed = {"input_ids": np.asarray([e.ids], dtype=np.int64),
                    "attention_mask": np.asarray([e.attention_mask], dtype=np.int64),
                    "token_type_ids": np.asarray([e.type_ids], dtype=np.int64)}
            (out,) = self.session.run([self._output], {k: feed[k] for k in self._inputs})
            out = np.asarray(out, dtype=np.float32)
            if self.pooling == "none":
                if out.ndim != 2:
                    raise EmbeddingModelError(f"--pooling none: the model's output {self._output} has "
                                              f"shape {out.shape}, not (batch, dimension)")
                vec = out[0]
            else:
                if out.ndim != 3:
                    raise EmbeddingModelError(f"--pooling {self.pooling}: the model's output {self._output} "
                                              f"has shape {out.shape}, not (batch, tokens, dimension)")
                mask = feed["attention_mask"][0].astype(np.float32)
                if self.pooling == "cls":
                    vec = out[0, 0]
                else:
                    vec = (out[0] * mask[:, None]).sum(0) / max(float(mask.sum()), 1.0)
            rows.append(vec)
        result = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        if self.normalise and len(result):
            result = result / np.clip(np.linalg.norm(result, axis=1, keepdims=True), 1e-12, None)
        converted: Float32Rows = result.astype(np.float32)
        return converted


def _weights_sha256(root: Path) -> str:
    for name in _WEIGHT_FILES:
        if (root / name).is_file():
            return file_sha256(root / name)
    raise EmbeddingModelError(f"sentence-transformers model {root}: no {' or '.join(_WEIGHT_FILES)} in it")


class SentenceTransformersModel:
    """Any sentence-transformers model, by name (from the local cache only) or path, with the
    model's own pooling and normalisation (``normalize_embeddings=True``: ℓ2 unit rows)."""

    route = ROUTE_ST

    def __init__(self, name: str, *, device: str = "cpu", batch_size: int = DEFAULT_BATCH) -> None:
        if device not in DEVICES:
            raise InvalidInputError(f"--device {device!r}: one of {', '.join(DEVICES)}")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise EmbeddingModelError(f"--model {name}: not an ONNX file or model directory, and the "
                                      "sentence-transformers package is not installed (pip install "
                                      "'drsearch[embed-fp32]')") from None
        if device == "cuda":
            import torch  # type: ignore[import-not-found]

            if not torch.cuda.is_available():
                raise EmbeddingModelError("--device cuda: torch sees no CUDA device; no fall back to the CPU")
        try:
            self.model = SentenceTransformer(name, device=device, local_files_only=True)
        except Exception as e:  # any load failure is one line, exit 2
            raise EmbeddingModelError(f"--model {name}: sentence-transformers cannot load it "
                                      f"({str(e).splitlines()[0] if str(e) else type(e).__name__})") from None
        root = Path(name) if Path(name).is_dir() else Path(self.model.tokenizer.name_or_path)
        self.name, self.device, self.batch_size = name, device, batch_size
        self.model_sha256 = _weights_sha256(root)
        self.dimension = int(self.model.get_sentence_embedding_dimension() or 0)

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"dimension": self.dimension, "max_tokens": int(self.model.max_seq_length),
                               "model": f"sentence-transformers:{Path(self.name).name}",
                               "model_sha256": self.model_sha256, "normalised": True, "pooling": "model",
                               "route": self.route}
        if self.device != "cpu":
            out["device"] = self.device
        return out

    def embed(self, texts: Sequence[str]) -> Float32Rows:
        vectors = self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                    convert_to_numpy=True, show_progress_bar=False)
        out: Float32Rows = np.asarray(vectors, dtype=np.float32)
        return out


Model = Embedder | OnnxDirEmbedder | SentenceTransformersModel


def choose_embedder(model: str | None, *, device: str = "cpu", threads: int | None = None,
                    pooling: str | None = None, normalise: bool | None = None,
                    max_tokens: int | None = None) -> Model:
    """The embedder ``--model`` names (None: the pinned MiniLM). ``pooling``, ``normalise`` and
    ``max_tokens`` are for an ONNX model directory only (InvalidInputError otherwise)."""
    onnx_dir = model is not None and Path(model).is_dir() and (Path(model) / "model.onnx").is_file()
    if not onnx_dir and (pooling is not None or normalise is not None or max_tokens is not None):
        raise InvalidInputError("--pooling/--no-normalise/--max-tokens: only with --model naming an ONNX "
                                "model directory (model.onnx and tokenizer.json)")
    if model is None or Path(model).is_file():
        return Embedder(model, threads=threads, device=device)
    if onnx_dir:
        return OnnxDirEmbedder(model, pooling=pooling or "mean",
                               normalise=True if normalise is None else normalise,
                               max_tokens=MAX_TOKENS if max_tokens is None else max_tokens,
                               device=device, threads=threads)
    return SentenceTransformersModel(model, device=device)


def query_embedder(model: str, header: Mapping[str, Any], *, device: str = "cpu") -> Model:
    """The embedder of ``--embed-model`` for a sidecar whose header is ``header``: an ONNX
    directory gets the header's pooling, normalisation and input cut (the retriever then
    checks every recorded field and SHA-256)."""
    if Path(model).is_dir() and (Path(model) / "model.onnx").is_file():
        return OnnxDirEmbedder(model, pooling=str(header.get("pooling", "mean")),
                               normalise=bool(header.get("normalised", True)),
                               max_tokens=int(header.get("max_tokens", MAX_TOKENS)), device=device)
    return choose_embedder(model, device=device)


def query_embedder_for(corpus: str | os.PathLike[str], vectors: str | os.PathLike[str] | None,
                       model: str) -> Model:
    """:func:`query_embedder` for the sidecar of ``corpus`` (``vectors``, default
    ``CORPUS.vectors``); VectorsError where there is none to read the options from."""
    from .sidecar import VectorsError, default_sidecar, read_header

    side = Path(vectors) if vectors is not None else default_sidecar(corpus)
    if not side.is_file():
        raise VectorsError(f"{side}: no vectors for dense retrieval; make them with "
                           f"`drsearch embed {corpus} --model {model}`")
    header, _ = read_header(side)
    return query_embedder(model, header)


__all__ = ["DEVICES", "POOLINGS", "ROUTE_ONNX", "ROUTE_ST", "OnnxDirEmbedder", "SentenceTransformersModel",
           "choose_embedder", "onnx_session", "query_embedder", "query_embedder_for"]
