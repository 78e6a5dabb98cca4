"""``drsearch embed``: one vector per chunk of a frozen corpus, written to its sidecar.

The chunks are embedded in rowid order, ``block`` at a time; each block's records are
appended to ``SIDE.partial`` and fsynced, so an interrupted run loses at most one block and
a rerun continues after the last whole record (a partial file of another model or corpus is
started over). Only a complete file is renamed to ``SIDE``: a reader never sees half.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from ..contract import InvalidInputError
from ..index import Engine
from .sidecar import (
    FORMAT,
    FORMAT_VERSION,
    PARTIAL_SUFFIX,
    VECTOR_FORMAT,
    VectorsError,
    header_bytes,
    open_records,
    quantise,
    read_header,
    record_dtype,
)

DEFAULT_BLOCK = 256


class TextEmbedder(Protocol):
    """What embeds texts: ``describe()`` (model identity, SHA-256s, pooling, normalisation,
    max tokens, dimension) and ``embed(texts)`` → (n, dimension) float32 rows."""

    def describe(self) -> dict[str, Any]: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


@dataclass(frozen=True, slots=True)
class EmbedReport:
    path: Path
    rows: int
    embedded: int  # rows embedded by this run (the rest were there already)
    resumed_from: int
    header: dict[str, Any]


def sidecar_header(engine: Engine, embedder: TextEmbedder) -> dict[str, Any]:
    """The header a sidecar of ``engine``'s corpus embedded by ``embedder`` carries."""
    return {**embedder.describe(), "format": FORMAT, "format_version": FORMAT_VERSION,
            "vector_format": VECTOR_FORMAT, "rows": int(engine.meta["chunks"]),
            "content_identity": str(engine.meta["content_identity"]), "text": "chunk"}


def _resume_point(partial: Path, head: bytes, record_bytes: int) -> int:
    """Whole records already in ``partial`` after exactly ``head`` (0: start over), the file
    cut back to them."""
    try:
        with open(partial, "rb") as fh:
            if fh.read(len(head)) != head:
                return 0
        done = (partial.stat().st_size - len(head)) // record_bytes
    except FileNotFoundError:
        return 0
    os.truncate(partial, len(head) + done * record_bytes)
    return done


def embed_corpus(engine: Engine, out: Path, embedder: TextEmbedder, *, block: int = DEFAULT_BLOCK,
                 force: bool = False, progress: Callable[[int, int], None] | None = None) -> EmbedReport:
    """Write the vectors sidecar ``out`` of ``engine``'s corpus with ``embedder``.

    ``progress(done, total)`` is called after each block. An ``out`` that already holds
    this corpus' vectors from this model is left as it is (0 embedded); one of another
    corpus or model is refused (VectorsError) unless ``force``. Raises InvalidInputError for
    a bad ``block``, and what the embedder raises (EmbeddingModelError for a missing model).
    """
    if block < 1:
        raise InvalidInputError("block must be at least 1")
    header = sidecar_header(engine, embedder)
    rows = header["rows"]
    if out.exists() and not force:
        try:
            have, _ = open_records(out)
        except VectorsError as e:
            raise VectorsError(f"{e.message} (--force replaces it)") from None
        if have != header:
            model = str(have.get("model_sha256"))[:12]
            raise VectorsError(f"{out}: holds vectors of another corpus or model (identity "
                               f"{have.get('content_identity')}, model {model}…); --force replaces it")
        return EmbedReport(out, rows, 0, rows, header)
    head = header_bytes(header)
    dtype = record_dtype(int(header["dimension"]))
    partial = out.with_name(out.name + PARTIAL_SUFFIX)
    done = start = _resume_point(partial, head, dtype.itemsize)
    with open(partial, "r+b" if done else "wb") as fh:
        if not done:
            fh.write(head)
        fh.seek(len(head) + done * dtype.itemsize)
        if progress is not None:
            progress(done, rows)
        while done < rows:
            ids = list(range(done + 1, min(done + block, rows) + 1))  # chunk rowids start at 1
            vectors = np.asarray(embedder.embed(engine.chunk_texts(ids)), dtype=np.float32)
            if vectors.shape != (len(ids), header["dimension"]):
                raise VectorsError(f"the embedder returned shape {vectors.shape}, expected "
                                   f"({len(ids)}, {header['dimension']})")
            fh.write(quantise(vectors).tobytes())
            fh.flush()
            os.fsync(fh.fileno())
            done += len(ids)
            if progress is not None:
                progress(done, rows)
    os.replace(partial, out)
    read_header(out)  # what was renamed reads back
    return EmbedReport(out, rows, rows - start, start, header)


__all__ = ["DEFAULT_BLOCK", "EmbedReport", "TextEmbedder", "embed_corpus", "sidecar_header"]
