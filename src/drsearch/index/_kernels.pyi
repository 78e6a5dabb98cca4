"""Types of the optional C ranking kernel and page reader (src/drsearch/index/_kernels.c)."""

from collections.abc import Sequence
from typing import Any

import numpy.typing as npt

ABI: int
SPAN_TEXTS: int

# paged: (the mapped file, per term None or (df, blob_pieces' table of its posting BLOB)); a
# paged term's chunks/impacts/block_max entries are None.
Paged = tuple[Any, Sequence[tuple[int, bytes] | None]]

def paged_pick(file: Any, df: int, pieces: bytes, keys: npt.NDArray[Any], out: npt.NDArray[Any],
               /) -> None: ...

def rank_blocks(chunks: Sequence[npt.NDArray[Any] | None], impacts: Sequence[npt.NDArray[Any] | None],
                n_rows: int, blocked: npt.NDArray[Any] | None, chunk_doc: npt.NDArray[Any], k: int,
                margin: float, buf: npt.NDArray[Any], out_chunks: npt.NDArray[Any],
                out_scores: npt.NDArray[Any], time_budget: float, paged: Paged | None = ...,
                texts: tuple[Any, ...] | None = ..., rescore: tuple[Any, ...] | None = ...,
                /) -> tuple[Any, ...]: ...

def rank_maxscore(chunks: Sequence[npt.NDArray[Any] | None], impacts: Sequence[npt.NDArray[Any] | None],
                  bounds: npt.NDArray[Any], n_rows: int, blocked: npt.NDArray[Any] | None,
                  chunk_doc: npt.NDArray[Any], k: int, margin: float, buf: npt.NDArray[Any],
                  out_chunks: npt.NDArray[Any], out_scores: npt.NDArray[Any],
                  time_budget: float, counts: npt.NDArray[Any] | None = ...,
                  block_max: Sequence[npt.NDArray[Any] | None] | None = ...,
                  block_postings: int = ..., paged: Paged | None = ...,
                  texts: tuple[Any, ...] | None = ..., rescore: tuple[Any, ...] | None = ...,
                  /) -> tuple[Any, ...]: ...

def read_blobs(file: Any, page_size: int, usable: int, root: int, column: int,
               rowids: Sequence[int], outs: Sequence[Any], /) -> None: ...

def rank_one(chunks: npt.NDArray[Any], impacts: npt.NDArray[Any], n_rows: int,
             blocked: npt.NDArray[Any] | None, chunk_doc: npt.NDArray[Any], k: int,
             /) -> list[tuple[int, float]]: ...

def rank_quant(lists: Sequence[tuple[Any, Any, Any]], unit: float, n_rows: int,
               blocked: npt.NDArray[Any] | None, chunk_doc: npt.NDArray[Any], k: int,
               window: int = ..., /) -> list[tuple[int, float]]: ...

def rescore(cands: npt.NDArray[Any], terms: Sequence[tuple[Any, ...]], file: Any,
            chunk_len: npt.NDArray[Any], k1: float, b: float, avgdl: float, k1p1: float, idf: float,
            chunk_doc: npt.NDArray[Any], k: int, texts: tuple[Any, ...] | None = ...,
            /) -> Any: ...

def search_hits(context: tuple[Any, ...], terms: Sequence[Any], stems: Sequence[tuple[str, float]] | None,
                k: int, time_budget: float, deadline: float, rescore: tuple[Any, ...] | None = ...,
                margin: float = ..., one_list: int = ..., /) -> Any: ...

def make_hits(hit_type: type[Any], chunks: Sequence[int], scores: Sequence[float],
              chunk_doc: npt.NDArray[Any], chunk_ordinal: npt.NDArray[Any],
              field_offsets: npt.NDArray[Any], fields: Any, pieces: bytes | None = ...,
              texts: Sequence[str] | None = ..., snippets: Sequence[str] | None = ...,
              /) -> list[Any]: ...

def snippets(texts: Sequence[str], stems: Sequence[str], weights: Sequence[float], width: int,
             deadline: float, /) -> list[str | None] | None: ...

def snippet_chars(text: str, /) -> tuple[str, bytes, bytes]: ...

def read_texts(file: Any, page_size: int, usable: int, root: int, column: int,
               rowids: Sequence[int], /) -> list[str]: ...

def texts_snippets(file: Any, page_size: int, usable: int, root: int, column: int,
                   rowids: Sequence[int], stems: Sequence[str], weights: Sequence[float],
                   width: int, deadline: float, /) -> tuple[list[str], list[str | None]] | None: ...

def blob_pieces(file: Any, page_size: int, usable: int, root: int, column: int, rowid: int,
                /) -> bytes: ...

def find_rows(file: Any, page_size: int, usable: int, root: int, keys: Sequence[str],
              columns: Sequence[int], kinds: str, /) -> list[tuple[int | float, ...] | None] | None: ...

def fts5_doclists(pages: Sequence[bytes], first_pgno: int, to_end: bool, chunks: Any, tfs: Any,
                  lengths: Any, /) -> tuple[list[str], list[int], int]: ...

def word_count(text: str, /) -> int: ...

def join_words(text: str, spans: Sequence[tuple[int, int]], /) -> list[str]: ...
def word_byte_spans(text: str, spans: Sequence[tuple[int, int]], /) -> list[tuple[int, int]]: ...

def gil_stats() -> tuple[float, float, int]: ...

def gil_spin(ns: int = ..., /) -> int: ...

def dense_scores(matrix: npt.NDArray[Any], dimension: int, query: npt.NDArray[Any], scales: npt.NDArray[Any],
                 q_scale: float, hidden: npt.NDArray[Any] | None, out: npt.NDArray[Any],
                 baseline: bool = ..., /) -> None: ...

def dense_isa() -> str: ...

def lz_join(data: bytes, spans: Sequence[tuple[int, int]], /) -> tuple[bytes, list[tuple[int, int]]]: ...
def lz_pack(data: bytes, starts: Sequence[int], /) -> tuple[bytes, list[int]]: ...
def lz_unpack(blob: bytes | memoryview, zstart: int = ..., want: int = ..., /) -> bytes: ...
