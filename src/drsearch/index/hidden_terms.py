"""Terms that only blocked documents contain: looked up at query time as unknown terms.

A blocklist hides documents at query time, and the index's terms, postings and BM25
statistics still hold them. A query term whose every posting lies in a blocked chunk can add
nothing to any visible chunk's score (no posting there: exactly +0.0 in FTS5's sum), yet it
used to be found, its postings read and ranked, and its snippet stem set up: a one-word
search for it answered ~18 µs later than one for a word that occurs nowhere, an oracle for
"does some hidden document contain X". The engine finds these terms once, when
it opens the file with a blocklist, and looks each one up under a key the file does not hold
(:func:`absent_keys`): the same b-tree descent to the same "not found" as an unknown word,
the same None term, the same answer. Rankings and scores are those of the term itself, bit for
bit (its postings touch no visible chunk); snippets no longer match its stem, as for an
unknown word (that stem could otherwise mark a prefix in a visible chunk's text, itself a
sign that the word is in the file).

The candidates are the terms of the blocked chunks' own text (FTS5's tokenizer, as the build
indexed it); a candidate is hidden only when its posting list (or a clamped term's tf array)
is read and every chunk in it is blocked, so a tokenizer's disagreement can only leave a term
unhidden (as before), never hide a term that a visible chunk holds.
"""

from __future__ import annotations

import json
from collections import Counter

import apsw
import numpy as np
import numpy.typing as npt

from ..contract.errors import IncompatibleIndexError
from .listcodes import RAW_WIDTH, check_layout, rowids_at
from .schema import chunk_text_source, has_list_codes
from .text import MAX_TOKEN_BYTES, Tokenizer, indexed_term

# Appended to a hidden term to make the key it is looked up under: sorted right after the term
# itself (the same b-tree path), and in no term of a unicode61/porter/ascii index (control
# characters separate tokens); absent_keys checks each key against the file all the same. Not
# prepended: every such key would then descend the same, always cached, leftmost path (measured
# ~50 ns faster than an unknown word's lookup, p < 1e-20 in-process; appended: 10-20 ns slower
# than a respelt unknown word's, SQLite comparing the term's whole prefix with its neighbour's).
_ABSENT_SUFFIX = "\x00"
# a token this short is its own indexed term (at most 4 UTF-8 bytes a character: indexed_term)
_SHORT_TOKEN = MAX_TOKEN_BYTES // 4
# Candidates per SQL statement (json_each keeps it to one bound parameter).
_BATCH = 4096


def blocked_only_terms(conn: apsw.Connection, tokenizer: Tokenizer,
                       blocked: npt.NDArray[np.bool_] | None) -> frozenset[str]:
    """The terms of the file whose every posting is in a chunk that ``blocked`` marks (a mask
    over chunk rowids, index 0 unused; None: nothing blocked, no such term).

    Raises IncompatibleIndexError for a posting list or tf array of the wrong size, or one
    naming a chunk past the last (a damaged file)."""
    if blocked is None or not blocked.any():
        return frozenset()
    rows = np.flatnonzero(blocked).tolist()
    in_chunks: Counter[str] = Counter()  # candidate -> blocked chunks whose text holds it
    version = conn.execute("PRAGMA user_version").get
    source = chunk_text_source(version)
    codes = "width, n_table" if has_list_codes(version) else f"{RAW_WIDTH}, 0"  # (listcodes.py)
    for (text,) in conn.execute(f"SELECT text FROM {source} WHERE id IN (SELECT value FROM json_each(?))",
                                (json.dumps(rows),)):
        terms = set(tokenizer.terms(text))
        if max(map(len, terms), default=0) > _SHORT_TOKEN:  # (rare: a token FTS5 cuts)
            terms = {indexed_term(t) for t in terms}
        in_chunks.update(terms)
    # A term in more chunks than the blocked ones that hold it is in a visible one: only the
    # others' chunk lists are read, each batch's in one statement per table.
    hidden: list[str] = []
    candidates = sorted(in_chunks)
    for i in range(0, len(candidates), _BATCH):
        rows_of = [(term, tid, df, bool(dense), width, n_table)
                   for term, tid, df, dense, width, n_table in conn.execute(
                       f"SELECT term, id, df, dense, {codes} FROM terms WHERE term IN "
                       "(SELECT value FROM json_each(?))", (json.dumps(candidates[i:i + _BATCH]),))
                   if df <= in_chunks[term]]
        sparse = [(term, tid, df, _rowids_at(term, df, width, n_table))
                  for term, tid, df, dense, width, n_table in rows_of if not dense]
        hidden.extend(_all_blocked(sparse, _blobs(conn, "postings", [t[1] for t in sparse]), blocked))
        hidden.extend(term for term, tid, _, dense, _, _ in rows_of  # (rare: half the chunks blocked)
                      if dense and _dense_all_blocked(conn, tid, blocked))
    return frozenset(hidden)


def _blobs(conn: apsw.Connection, table: str, ids: list[int]) -> dict[int, object]:
    """Rows ``ids`` of ``postings``: id -> BLOB."""
    return dict(conn.execute(f"SELECT id, data FROM {table} WHERE id IN (SELECT value FROM json_each(?))",
                             (json.dumps(ids),))) if ids else {}


def _rowids_at(term: str, df: int, width: int, n_table: int) -> int:
    """Where term's rowids start in its posting BLOB (its layout checked: CorruptIndexError)."""
    check_layout(term, df, width, n_table)
    return rowids_at(df, width, n_table)


def _all_blocked(terms: list[tuple[str, int, int, int]], data: dict[int, object],
                 blocked: npt.NDArray[np.bool_]) -> list[str]:
    """Those of ``terms`` ((term, row, df, where its rowids start) of sparse terms; ``data``:
    row -> its posting BLOB) whose every posting's chunk is blocked: one numpy pass over all
    their rowids."""
    if not terms:
        return []
    lists = []
    for _, tid, df, at in terms:
        buf = data.get(tid)
        if not isinstance(buf, bytes) or len(buf) < at + 4 * df or df < 1:
            raise IncompatibleIndexError(f"damaged postings row {tid}")
        lists.append(np.frombuffer(buf, "<u4", df, at))
    chunks = np.concatenate(lists)
    if int(chunks.max()) >= len(blocked):
        raise IncompatibleIndexError("damaged postings (a chunk past the last)")
    starts = np.cumsum([0] + [t[2] for t in terms[:-1]])
    every = np.logical_and.reduceat(blocked[chunks], starts)
    return [t[0] for t, yes in zip(terms, every.tolist(), strict=True) if yes]


def _dense_all_blocked(conn: apsw.Connection, tid: int, blocked: npt.NDArray[np.bool_]) -> bool:
    """Whether every chunk of clamped term row ``tid`` (its tf array's non-zero entries) is blocked."""
    data = conn.execute("SELECT tfs FROM dense_tfs WHERE id = ?", (tid,)).get
    if not isinstance(data, bytes) or len(data) != 2 * len(blocked):
        raise IncompatibleIndexError(f"damaged dense_tfs row {tid}")
    return bool(blocked[np.flatnonzero(np.frombuffer(data, "<u2"))].all())


def absent_keys(conn: apsw.Connection, terms: frozenset[str]) -> dict[str, str]:
    """Each term -> a key that no row of ``terms`` holds (the term and one or more NULs)."""
    keys = {t: t + _ABSENT_SUFFIX for t in terms}
    while keys:
        taken = {row[0] for row in conn.execute(
            "SELECT term FROM terms WHERE term IN (SELECT value FROM json_each(?))",
            (json.dumps(sorted(keys.values())),))}
        if not taken:
            break
        keys = {t: k + _ABSENT_SUFFIX if k in taken else k for t, k in keys.items()}
    return keys


__all__ = ["absent_keys", "blocked_only_terms"]
