"""Writing a schema-version-4 index in tests: the format before coded posting lists.

Version 5 only stores a list's impacts as codes into a table of its distinct impacts where
that is smaller (``drsearch.index.listcodes``) and adds ``width`` and ``n_table`` to the
``terms`` rows; everything else is version 4's. Decoding every list back to its raw float64
impacts and dropping those columns gives the file a version-4 build wrote, so tests can
check that such files still open and rank exactly.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import apsw
import numpy as np

from drsearch.index.listcodes import RAW_WIDTH, decode, rowids_at

_TERMS_V4 = """CREATE TABLE terms_v4(
    term TEXT PRIMARY KEY, id INTEGER NOT NULL, df INTEGER NOT NULL, dense INTEGER NOT NULL,
    max_impact REAL NOT NULL
) WITHOUT ROWID"""


def write_v4(src: Path, dst: Path) -> Path:
    """Copy the version-5 index ``src`` to ``dst`` as a version-4 file (every list raw)."""
    shutil.copyfile(src, dst)
    conn = apsw.Connection(str(dst))
    try:
        assert conn.execute("PRAGMA user_version").get == 5
        with conn:
            coded = conn.execute("SELECT t.id, t.df, t.width, t.n_table, p.data FROM terms AS t JOIN postings "
                                 f"AS p ON p.id = t.id WHERE t.dense = 0 AND t.width != {RAW_WIDTH}").fetchall()
            for tid, df, width, n_table, data in coded:
                rows, impacts, _ = decode(data, df, width, n_table, len(data))
                tail = data[rowids_at(df, width, n_table) + 4 * df:]  # its block maxima, as they are
                raw = np.asarray(impacts, "<f8").tobytes() + rows.tobytes() + tail
                conn.execute("UPDATE postings SET data = ? WHERE id = ?", (raw, tid))
            conn.execute(_TERMS_V4)
            conn.execute("INSERT INTO terms_v4 SELECT term, id, df, dense, max_impact FROM terms ORDER BY term")
            conn.execute("DROP TABLE terms")
            conn.execute("ALTER TABLE terms_v4 RENAME TO terms")
            conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
        conn.execute("PRAGMA user_version=4")
        conn.execute("VACUUM")
    finally:
        conn.close()
    return dst
