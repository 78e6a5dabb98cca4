"""The vectors sidecar: one int8 vector (with its scale) per chunk of a frozen corpus.

``CORPUS.vectors`` beside ``CORPUS`` (or any path named with ``--vectors``)::

    8 bytes   magic  b"DRSVEC01"
    4 bytes   header length H (uint32, little-endian)
    H bytes   header: canonical JSON (sorted keys) — format, model identity and SHA-256s,
              pooling, normalisation, max tokens, dimension, vector format, rows, and the
              corpus' content identity and chunk count
    rows ×    one record per chunk, in chunk-rowid order (record i is chunk rowid i + 1):
              ``dimension`` int8 components, then the row's scale (float32, little-endian)

A component times its row's scale is the (ℓ2-normalised) embedding, to within half a step
(``scale = max |v| / 127``). Fixed-size records are what make ``drsearch embed`` resumable:
it appends whole blocks of records to ``SIDE.partial`` and renames it into place only once
every chunk has its vector, so a complete ``SIDE`` is all there is to trust.
"""

from __future__ import annotations

import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from ..contract import CorpusFileError

MAGIC = b"DRSVEC01"
FORMAT = "drsearch-vectors"
FORMAT_VERSION = 1
VECTOR_FORMAT = "int8-rowscale"
SUFFIX = ".vectors"
PARTIAL_SUFFIX = ".partial"
_PREFIX = len(MAGIC) + 4


class VectorsError(CorpusFileError):
    """The vectors sidecar is missing, truncated, damaged or not this corpus' (CLI exit 2)."""

    error_type = "vectors"


def default_sidecar(corpus: str | os.PathLike[str]) -> Path:
    """``CORPUS.vectors`` beside the corpus file."""
    p = Path(corpus)
    return p.with_name(p.name + SUFFIX)


def record_dtype(dimension: int) -> np.dtype[Any]:
    """One record: the int8 components and the row's float32 scale, packed."""
    return np.dtype([("v", "i1", (dimension,)), ("s", "<f4")])


def header_bytes(header: dict[str, Any]) -> bytes:
    """Magic, length and the canonical JSON of ``header``: the bytes before the records."""
    body = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return MAGIC + struct.pack("<I", len(body)) + body


def quantise(vectors: npt.NDArray[np.float32]) -> npt.NDArray[Any]:
    """Rows of float vectors as records: ``round(v / scale)`` with ``scale = max |v| / 127``
    (a zero row keeps scale 1)."""
    v = np.asarray(vectors, dtype=np.float32)
    top = np.abs(v).max(axis=1) if len(v) else np.zeros(0, dtype=np.float32)
    scale = np.where(top > 0, top / np.float32(127.0), np.float32(1.0)).astype(np.float32)
    out = np.zeros(len(v), dtype=record_dtype(v.shape[1]))
    out["v"] = np.clip(np.rint(v / scale[:, None]), -127, 127).astype(np.int8)
    out["s"] = scale
    return out


def read_header(path: Path) -> tuple[dict[str, Any], int]:
    """The header of the sidecar at ``path`` and the offset of its first record.

    Raises VectorsError when the file is missing or is not a vectors sidecar.
    """
    try:
        with open(path, "rb") as fh:
            prefix = fh.read(_PREFIX)
            if len(prefix) < _PREFIX or prefix[:len(MAGIC)] != MAGIC:
                raise VectorsError(f"{path}: not a drsearch vectors file")
            (n,) = struct.unpack("<I", prefix[len(MAGIC):])
            body = fh.read(n)
    except FileNotFoundError:
        raise VectorsError(f"{path}: no such file") from None
    except OSError as e:
        raise VectorsError(f"{path}: cannot read it ({e.strerror or e})") from None
    try:
        header = json.loads(body.decode("utf-8")) if len(body) == n else None
    except (UnicodeDecodeError, ValueError):
        header = None
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise VectorsError(f"{path}: damaged vectors header")
    if header.get("format_version") != FORMAT_VERSION or header.get("vector_format") != VECTOR_FORMAT:
        raise VectorsError(f"{path}: vectors format {header.get('format_version')!r}/"
                           f"{header.get('vector_format')!r}, this drsearch reads {FORMAT_VERSION}/"
                           f"{VECTOR_FORMAT}")
    for key, kind in (("dimension", int), ("rows", int), ("content_identity", str), ("model_sha256", str)):
        if not isinstance(header.get(key), kind) or isinstance(header.get(key), bool):
            raise VectorsError(f"{path}: damaged vectors header ({key!r})")
    if header["dimension"] < 1 or header["rows"] < 0:
        raise VectorsError(f"{path}: damaged vectors header (dimension or rows)")
    return header, _PREFIX + n


def open_records(path: Path) -> tuple[dict[str, Any], npt.NDArray[Any]]:
    """The header and the records (a read-only memory map) of a complete sidecar.

    Raises VectorsError for a missing, damaged or truncated file (its size must be exactly
    the header plus ``rows`` records).
    """
    header, start = read_header(path)
    dtype = record_dtype(header["dimension"])
    want = start + header["rows"] * dtype.itemsize
    size = path.stat().st_size
    if size != want:
        what = "truncated" if size < want else "longer than its header says"
        raise VectorsError(f"{path}: {what} ({size} bytes, expected {want}); rerun `drsearch embed`")
    if header["rows"] == 0:
        return header, np.zeros(0, dtype=dtype)
    return header, np.memmap(path, dtype=dtype, mode="r", offset=start, shape=(header["rows"],))


__all__ = ["FORMAT", "FORMAT_VERSION", "MAGIC", "PARTIAL_SUFFIX", "SUFFIX", "VECTOR_FORMAT", "VectorsError",
           "default_sidecar", "header_bytes", "open_records", "quantise", "read_header", "record_dtype"]
