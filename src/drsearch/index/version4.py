"""A copy of a version-5 index as version 4: the format before coded posting lists.

Version 5 stores a list's impacts as codes into a table of its distinct impacts where that is
smaller (:mod:`drsearch.index.listcodes`) and adds ``width`` and ``n_table`` to the ``terms``
rows; everything else is version 4's. Decoding every coded list back to its raw float64 impacts
and dropping those two columns gives the file a version-4 build wrote: what the tests use to
check that such files still open and rank exactly, and what ``benchmarks/text_bench.py
--compare codes`` measures version 5 against.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import apsw
import numpy as np

from ..contract.errors import IncompatibleIndexError
from .listcodes import RAW_WIDTH, decode, rowids_at

_TERMS_V4 = """CREATE TABLE terms_v4(
    term TEXT PRIMARY KEY, id INTEGER NOT NULL, df INTEGER NOT NULL, dense INTEGER NOT NULL,
    max_impact REAL NOT NULL
) WITHOUT ROWID"""
# every posting list whose impacts are coded (a dense term has none; a raw list stays as it is)
_CODED_LISTS = ("SELECT t.id, t.df, t.width, t.n_table, p.data FROM terms AS t JOIN postings AS p "
                f"ON p.id = t.id WHERE t.dense = 0 AND t.width != {RAW_WIDTH}")


def write_version4(src: Path, dst: Path) -> Path:
    """Copy the version-5 index ``src`` to ``dst`` as a version-4 file (every list raw); returns
    ``dst``. ``src`` is only read; a file of another version is refused before ``dst`` is written."""
    probe = apsw.Connection(str(src), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        version = probe.execute("PRAGMA user_version").get
    finally:
        probe.close()
    if version != 5:
        raise IncompatibleIndexError(f"{src}: schema version {version}, not 5: nothing to write as version 4")
    shutil.copyfile(src, dst)
    conn = apsw.Connection(str(dst))
    try:
        with conn:
            coded = list(conn.execute(_CODED_LISTS))  # read whole: the loop rewrites these rows
            for tid, df, width, n_table, data in coded:
                rows, impacts, _ = decode(data, df, width, n_table, len(data))
                tail = data[rowids_at(df, width, n_table) + 4 * df:]  # its block maxima, as they are
                raw = np.asarray(impacts, "<f8").tobytes() + rows.tobytes() + tail
                conn.execute("UPDATE postings SET data = ? WHERE id = ?", (raw, tid))
            conn.execute(_TERMS_V4)
            conn.execute("INSERT INTO terms_v4 SELECT term, id, df, dense, max_impact FROM terms "
                         "ORDER BY term")
            conn.execute("DROP TABLE terms")
            conn.execute("ALTER TABLE terms_v4 RENAME TO terms")
            conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
        conn.execute("PRAGMA user_version=4")
        conn.execute("VACUUM")
    finally:
        conn.close()
    return dst


__all__ = ["write_version4"]
