"""Writing a schema-version-1 index in tests: the format before block maxima.

Version 2 only appends each long posting list's block maxima to its ``postings.data`` BLOB
and records ``meta.block_postings``; everything else is version 1's. Cutting those off gives
the very file a version-1 build wrote (``test_build_streaming`` checks it against the
digests of files built before version 2 existed), so tests can check that such files still
open and rank exactly.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import apsw


def write_v1(src: Path, dst: Path) -> Path:
    """Copy the version-2 index ``src`` to ``dst`` as a version-1 file (no block maxima)."""
    shutil.copyfile(src, dst)
    conn = apsw.Connection(str(dst))
    try:
        assert conn.execute("PRAGMA user_version").get == 2
        with conn:
            lists = conn.execute("SELECT id, df FROM terms WHERE dense = 0").fetchall()
            conn.executemany("UPDATE postings SET data = substr(data, 1, ?) WHERE id = ?",
                             [(12 * df, tid) for tid, df in lists])
            conn.execute("DELETE FROM meta WHERE key = 'block_postings'")
            conn.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        conn.execute("PRAGMA user_version=1")
        conn.execute("VACUUM")
    finally:
        conn.close()
    return dst
