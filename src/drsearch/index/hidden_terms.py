"""Terms that only blocked documents contain: looked up at query time as unknown terms.

A blocklist hides documents at query time, and the index's terms, postings and BM25
statistics still hold them. A query term whose every posting lies in a blocked chunk can add
nothing to any visible chunk's score (no posting there: exactly +0.0 in FTS5's sum), yet it
used to be found, its postings read and ranked, and its snippet stem set up: a one-word
search for it answered ~18 µs later than one for a word that occurs nowhere, an oracle for
"does some hidden document contain X" (issue 42 §2). The engine finds these terms once, when
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

from .errors import IncompatibleIndexError
from .text import Tokenizer, indexed_term

# Appended to a hidden term to make the key it is looked up under: sorted right after the term
# itself (the same b-tree path), and in no term of a unicode61/porter/ascii index (control
# characters separate tokens); absent_keys checks each key against the file all the same.
_ABSENT_SUFFIX = "\x00"
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
    for (text,) in conn.execute("SELECT text FROM chunks WHERE id IN (SELECT value FROM json_each(?))",
                                (json.dumps(rows),)):
        in_chunks.update({indexed_term(t) for t in tokenizer.terms(text)})
    hidden: list[str] = []
    candidates = sorted(in_chunks)
    for i in range(0, len(candidates), _BATCH):
        for term, tid, df, dense in conn.execute(
                "SELECT term, id, df, dense FROM terms WHERE term IN (SELECT value FROM json_each(?))",
                (json.dumps(candidates[i:i + _BATCH]),)):
            # A term in more chunks than the blocked ones that hold it is in a visible one.
            if df <= in_chunks[term] and _all_blocked(conn, tid, df, bool(dense), blocked):
                hidden.append(term)
    return frozenset(hidden)


def _all_blocked(conn: apsw.Connection, tid: int, df: int, dense: bool,
                 blocked: npt.NDArray[np.bool_]) -> bool:
    """Whether every chunk of term row ``tid`` (its postings' rowids, or a clamped term's
    chunks of non-zero tf) is blocked."""
    n = len(blocked)
    if dense:
        data = conn.execute("SELECT tfs FROM dense_tfs WHERE id = ?", (tid,)).get
        if not isinstance(data, bytes) or len(data) != 2 * n:
            raise IncompatibleIndexError(f"damaged dense_tfs row {tid}")
        chunks = np.flatnonzero(np.frombuffer(data, "<u2"))
    else:
        data = conn.execute("SELECT data FROM postings WHERE id = ?", (tid,)).get
        if not isinstance(data, bytes) or len(data) < 12 * df:
            raise IncompatibleIndexError(f"damaged postings row {tid}")
        chunks = np.frombuffer(data, "<u4", df, 8 * df).astype(np.int64)
    if len(chunks) and int(chunks.max()) >= n:
        raise IncompatibleIndexError(f"damaged terms row {tid} (a chunk past the last)")
    return bool(blocked[chunks].all())


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
