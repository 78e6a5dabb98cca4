"""The typed build settings (a frozen pydantic model validated once), recorded in each file.

Kept apart from the result objects (``models.py``): pydantic costs ~150 ms to import, and a
process that only searches an index never needs it (``drsearch.index`` imports the build
side on first use).
"""

from __future__ import annotations

from typing import Literal

import apsw
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ..contract.errors import InvalidInputError
from .chunking import CHUNK_STRIDE, CHUNK_WORDS
from .text import Tokenizer

# The names of the two tokenizer presets (``BuildSettings.tokenizer``); any FTS5 tokenize value
# is accepted too. ``Tokenizer`` is the class that runs one (drsearch.index.text).
TokenizerPreset = Literal["unicode61", "porter"]
_PRESETS: dict[str, str] = {"porter": "porter unicode61", "unicode61": "unicode61"}


class BuildSettings(BaseModel):
    """Parameters of an index build; recorded in the file's ``meta`` table.

    ``tokenizer``: ``porter`` (Porter stemmer over unicode61, the default chosen from the
    Cranfield/CISI numbers in docs/QUALITY.md), ``unicode61``, or any FTS5 ``tokenize``
    value (e.g. ``unicode61 remove_diacritics 2``, the spec another tool's FTS5 table was
    declared with: ``drsearch import`` takes it over), checked against SQLite's FTS5.
    ``chunk_words``/``chunk_stride``: DR-256's 800/700 rule. ``k1``/``b``: FTS5's fixed BM25
    parameters (recorded, not tunable: FTS5's ``bm25()`` is the oracle we must reproduce).
    ``threads`` shapes how the build runs (speed), never what it writes: it is not recorded,
    and either value gives the same bytes. ``chunk_text``: ``spans`` (schema version 4: a
    chunk cut from its document is stored as a byte span of the document's compressed text,
    not as text of its own; docs/DESIGN.md) or ``stored`` (schema version 2: every chunk's
    text stored beside the document's, about twice the disk, readable through FTS5 in a
    plain ``sqlite3`` shell); recorded as the file's schema version, the chunk texts the same.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    tokenizer: str = "porter"
    chunk_words: int = Field(default=CHUNK_WORDS, ge=1, le=100_000)
    chunk_stride: int = Field(default=CHUNK_STRIDE, ge=1, le=100_000)
    k1: float = Field(default=1.2, ge=1.2, le=1.2, description="fixed by FTS5's bm25()")
    b: float = Field(default=0.75, ge=0.75, le=0.75, description="fixed by FTS5's bm25()")
    threads: int = Field(default=1, ge=1, le=2, description=(
        "1: one process; 2: FTS5's indexing (tokenizing, merging, deriving the postings) runs in "
        "a worker process alongside SQLite's writes of the rows (the build has two sides, so "
        "more would change nothing and is refused); the file does not depend on it"))
    chunk_text: Literal["spans", "stored"] = "spans"

    @field_validator("tokenizer")
    @classmethod
    def _fts5_accepts(cls, value: str) -> str:
        spec = value.strip()
        conn = apsw.Connection(":memory:")  # the check is SQLite's own: the spec must make a tokenizer
        try:
            Tokenizer(conn, _PRESETS.get(spec, spec))
        except InvalidInputError as e:
            raise ValueError(e.message) from None
        finally:
            conn.close()
        return spec

    @model_validator(mode="after")
    def _stride_within_size(self) -> BuildSettings:
        if self.chunk_stride > self.chunk_words:
            raise ValueError("chunk_stride must not exceed chunk_words")
        return self

    @property
    def fts5_tokenize(self) -> str:
        """The FTS5 ``tokenize`` value (recorded in ``meta`` as ``tokenizer``)."""
        return _PRESETS.get(self.tokenizer, self.tokenizer)


__all__ = ["BuildSettings", "TokenizerPreset"]
