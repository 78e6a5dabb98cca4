"""Integrity checks of a frozen index file: they detect damage and never write."""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from pathlib import Path

import apsw
import pytest

from drsearch.contract import NotADatabaseError
from drsearch.index import (
    fts5_integrity_check,
    header_problems,
    missing_docids,
    quick_check,
    read_sqlite_header,
    sha256_file,
)
from drsearch.index.schema import APPLICATION_ID, SCHEMA_VERSION

from ..helpers import DATA
from .schema_v1 import write_v1


def fingerprint(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return hashlib.sha256(path.read_bytes()).hexdigest(), st.st_mtime_ns, st.st_size


@pytest.fixture()
def copy(sample_index_stored: Path, tmp_path: Path) -> Path:
    """A version-2 file (chunk texts stored: found in the file's bytes); test_span_text.py
    damages a version-4 file's spans."""
    dst = tmp_path / "copy.sqlite3"
    shutil.copyfile(sample_index_stored, dst)
    return dst


def page_of(path: Path, table: str) -> int:
    """A leaf page of ``table`` (from SQLite's dbstat)."""
    conn = apsw.Connection(f"file:{path}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        return conn.execute("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' "
                            "ORDER BY pageno LIMIT 1 OFFSET 3", (table,)).get
    finally:
        conn.close()


def test_header_of_a_built_index(sample_index: Path) -> None:
    h = read_sqlite_header(sample_index)
    assert h.application_id == APPLICATION_ID and h.user_version == SCHEMA_VERSION
    assert h.page_count_valid and h.expected_bytes == h.file_bytes == sample_index.stat().st_size
    assert header_problems(h) == []


def test_header_problems_name_truncation_and_foreign_files(copy: Path, tmp_path: Path) -> None:
    size = copy.stat().st_size
    with open(copy, "r+b") as fh:
        fh.truncate(size - 4096)
    (problem,) = header_problems(read_sqlite_header(copy))
    assert problem.startswith(f"file is {size - 4096:,} bytes") and f"= {size:,} bytes" in problem
    foreign = tmp_path / "foreign.sqlite3"
    conn = apsw.Connection(str(foreign))
    conn.execute("CREATE TABLE t(x); PRAGMA user_version=7")
    conn.close()
    problems = header_problems(read_sqlite_header(foreign))
    assert any("application_id 0x0" in p for p in problems) and any("version" in p for p in problems)
    assert "schema version (user_version) 7, expected one of 1, 2, 3, 4, 5" in problems


def test_a_version_1_index_header_has_no_problems(sample_index_stored: Path, tmp_path: Path) -> None:
    v1 = write_v1(sample_index_stored, tmp_path / "v1.sqlite3")  # the format before block maxima: still read
    h = read_sqlite_header(v1)
    assert h.user_version == 1 and header_problems(h) == []
    for junk in (b"", b"not sqlite at all" * 10):
        (tmp_path / "junk").write_bytes(junk)
        with pytest.raises(NotADatabaseError, match="not a SQLite file"):
            read_sqlite_header(tmp_path / "junk")
    with pytest.raises(NotADatabaseError, match="cannot read"):
        read_sqlite_header(tmp_path / "missing")


@pytest.mark.parametrize("block", [97, 4096, 1 << 20, 8 << 20])
def test_sha256_file_matches_hashlib_at_any_block_size(block: int) -> None:
    path = DATA / "sample/docs.jsonl"
    seen: list[int] = []
    assert sha256_file(path, seen.append, block_bytes=block) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert sum(seen) == path.stat().st_size
    assert all(n == block for n in seen[:-1])


def test_sha256_of_an_empty_file(tmp_path: Path) -> None:
    (tmp_path / "e").write_bytes(b"")
    assert sha256_file(tmp_path / "e") == hashlib.sha256(b"").hexdigest()


def test_checks_pass_on_a_sound_index_and_never_write(sample_index: Path) -> None:
    before = fingerprint(sample_index)
    assert quick_check(sample_index) == []
    assert fts5_integrity_check(sample_index) == []
    assert fingerprint(sample_index) == before
    assert sorted(os.listdir(sample_index.parent)) == [sample_index.name]  # no journal left behind


def test_fts5_check_runs_on_a_read_only_file_and_leaves_it_unchanged(copy: Path) -> None:
    copy.chmod(stat.S_IRUSR | stat.S_IRGRP)
    try:
        before = fingerprint(copy)
        assert fts5_integrity_check(copy) == []
        assert fingerprint(copy) == before
    finally:
        copy.chmod(0o644)


def test_fts5_check_detects_content_that_no_longer_matches_the_index(copy: Path) -> None:
    data = bytearray(copy.read_bytes())
    at = data.find(b"demonstrators inside the Polytechnic University")
    assert at > 0
    data[at : at + 3] = b"XYZ"  # same length: the page stays well-formed
    copy.write_bytes(bytes(data))
    assert quick_check(copy) == []  # SQLite's structure is intact...
    before = fingerprint(copy)
    problems = fts5_integrity_check(copy)  # ...but FTS5 sees its content changed
    assert problems and "integrity-check" in problems[0]
    assert fingerprint(copy) == before


def test_quick_check_detects_a_damaged_btree_page(copy: Path) -> None:
    page = page_of(copy, "chunks")
    with open(copy, "r+b") as fh:
        fh.seek((page - 1) * 4096)
        fh.write(b"\xff" * 12)  # the page header: type, freeblock, cell count, content start
    problems = quick_check(copy)
    assert problems and problems != ["ok"]


def test_fts5_check_rejects_unknown_or_non_fts_tables(sample_index: Path) -> None:
    assert fts5_integrity_check(sample_index, "nope") == ["no FTS5 table 'nope' in sample.sqlite3"]
    assert fts5_integrity_check(sample_index, "chunks")[0].startswith("no FTS5 table")
    assert fts5_integrity_check(sample_index, 'x"); DROP TABLE meta; --')[0].startswith("no FTS5 table")


def test_missing_docids(sample_index: Path) -> None:
    assert missing_docids(sample_index, ["d-8b601c6f3f2c9567", "nope", "also-nope"]) == ["also-nope", "nope"]
    assert missing_docids(sample_index, []) == []


@pytest.mark.skipif(not Path("/proc/self/fdinfo").is_dir(), reason="needs Linux /proc")
def test_fts5_check_reads_through_a_descriptor_the_os_opened_read_only(
        sample_index: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even as root (who may write to any file), the descriptor itself forbids writing."""
    from drsearch.index import integrity

    modes: list[int] = []
    real_read = integrity._ReadOnlyFile.xRead

    def spy(self: object, amount: int, offset: int) -> bytes:
        if not modes:
            for fd in os.listdir("/proc/self/fd"):
                try:
                    if os.readlink(f"/proc/self/fd/{fd}") == str(sample_index.resolve()):
                        flags = Path(f"/proc/self/fdinfo/{fd}").read_text().split("flags:")[1].split()[0]
                        modes.append(int(flags, 8) & os.O_ACCMODE)
                except OSError:
                    continue
        return real_read(self, amount, offset)  # type: ignore[arg-type]

    monkeypatch.setattr(integrity._ReadOnlyFile, "xRead", spy)
    assert fts5_integrity_check(sample_index) == []
    assert modes and set(modes) == {os.O_RDONLY}
