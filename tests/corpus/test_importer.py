"""Importing corpora built by other tools: a foreign-schema SQLite file and JSONL."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import apsw
import pytest

from drsearch.contract import InvalidDocumentError, InvalidInputError, NotADatabaseError
from drsearch.corpus import ColumnMapping, import_corpus, inspect_source, quote_identifier
from drsearch.corpus.importer import read_sqlite_documents
from drsearch.index import Engine, build, sha256_file
from drsearch.tools.cli import main

from ..helpers import DATA, sample_docs

TABLE = 'crawl "pages" 2019'  # a hostile but legal name: spaces and quotes
MAPPING = ColumnMapping(TABLE, docid="doc key", url="address", text="body", title="headline",
                        metadata=("source_id",))


def foreign_db(path: Path, docs: list[dict[str, Any]], table: str = TABLE, typed: bool = True) -> Path:
    """Another tool's schema: different table and column names, an extra table, a view.

    ``typed=False`` declares no column types, so SQLite stores values as given (a TEXT
    column would turn 42 into '42').
    """
    conn = apsw.Connection(str(path))
    t = quote_identifier(table)
    text = " TEXT" if typed else ""
    conn.execute(f'CREATE TABLE {t}(page_id INTEGER PRIMARY KEY, "doc key"{text}, address{text}, '
                 f"headline{text}, body{text}, source_id{text}, fetched_at REAL)")
    conn.execute("CREATE TABLE crawl_log(id INTEGER PRIMARY KEY, note TEXT)")
    conn.execute(f"CREATE VIEW recent AS SELECT * FROM {t}")
    with conn:
        for i, d in enumerate(reversed(docs)):  # a different order than docs.jsonl
            conn.execute(f"INSERT INTO {t} VALUES(?,?,?,?,?,?,?)",
                         (i + 1, d["docid"], d["url"], d["title"], d["text"], d["source_id"], 1.5e9 + i))
        conn.execute("INSERT INTO crawl_log(note) VALUES('done')")
    conn.close()
    return path


@pytest.fixture(scope="module")
def foreign(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return foreign_db(tmp_path_factory.mktemp("foreign") / "other.sqlite3", sample_docs())


def call(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    return main(list(args), out=buf), buf.getvalue()


def test_inspect_lists_tables_columns_and_rows(foreign: Path) -> None:
    info = inspect_source(foreign)
    tables = {t.name: t for t in info.tables}
    assert info.format == "sqlite" and set(tables) == {TABLE, "crawl_log", "recent"}
    assert tables[TABLE].rows == 184 and tables["recent"].kind == "view"
    cols = {c.name: c for c in tables[TABLE].columns}
    assert list(cols)[:3] == ["page_id", "doc key", "address"] and cols["page_id"].primary_key
    code, out = call("import", "--from", str(foreign), "--inspect")
    assert code == 0 and f"table {TABLE}: 184 rows" in out and "doc key  TEXT" in out
    code, out = call("import", "--from", str(foreign), "--inspect", "--json")
    assert code == 0 and {t["name"]: t["rows"] for t in json.loads(out)["tables"]}["crawl_log"] == 1


def test_inspect_jsonl_and_our_own_index(sample_index: Path) -> None:
    info = inspect_source(DATA / "sample/docs.jsonl")
    (t,) = info.tables
    assert info.format == "jsonl" and t.rows == 184
    assert [c.name for c in t.columns] == ["docid", "source_id", "text", "title", "url"]
    assert inspect_source(sample_index).note.startswith("this file already is a drsearch index")


def test_import_from_foreign_sqlite_equals_building_from_jsonl(foreign: Path, tmp_path: Path) -> None:
    direct = build(sample_docs(), tmp_path / "direct.sqlite3")
    imported = import_corpus(foreign, tmp_path / "imported.sqlite3", MAPPING)
    assert imported.content_identity == direct.content_identity
    with Engine.open(tmp_path / "imported.sqlite3") as e:
        assert e.meta["chunk_words"] == 800 and e.meta["chunk_overlap"] == 100
        doc = e.open_document(docid="d-8b601c6f3f2c9567")
        assert doc.metadata == {"source_id": sample_docs()[0]["source_id"]}
        provenance = e.meta["provenance"]
    assert provenance == {
        "method": "drsearch import",
        "source": {"name": "other.sqlite3", "format": "sqlite", "bytes": foreign.stat().st_size,
                   "sha256": sha256_file(foreign)},
        "mapping": {"table": TABLE, "docid": "doc key", "url": "address", "title": "headline", "text": "body",
                    "metadata": ["source_id"]},
    }
    # the provenance is the only difference: the same build with it gives the same bytes
    build(sample_docs(), tmp_path / "again.sqlite3", provenance=provenance)
    assert (tmp_path / "imported.sqlite3").read_bytes() == (tmp_path / "again.sqlite3").read_bytes()


def test_build_without_provenance_writes_no_such_meta_key(tmp_path: Path) -> None:
    build(sample_docs()[:5], tmp_path / "a.sqlite3")
    with Engine.open(tmp_path / "a.sqlite3") as e:
        assert "provenance" not in e.meta
    for bad in ({"x": {1, 2}}, {"x": float("nan")}, ["not", "an", "object"]):
        with pytest.raises(InvalidInputError, match="provenance must be a JSON object"):
            build(sample_docs()[:5], tmp_path / "b.sqlite3", provenance=bad)  # type: ignore[arg-type]
        assert not (tmp_path / "b.sqlite3").exists()


def test_import_records_a_recognised_source_as_derived_from(foreign: Path, tmp_path: Path) -> None:
    seen: list[tuple[str, int]] = []

    def identify(sha256: str, size: int) -> dict[str, str] | None:
        seen.append((sha256, size))
        return {"name": "Mini", "revision": "v1"} if sha256 == sha256_file(foreign) else None

    ticks: list[int] = []
    mapping = ColumnMapping("RECENT", docid="DOC KEY", url="address", text="body")
    import_corpus(foreign, tmp_path / "i.sqlite3", mapping, identify=identify, hash_progress=ticks.append)
    assert seen == [(sha256_file(foreign), foreign.stat().st_size)] and sum(ticks) == foreign.stat().st_size
    with Engine.open(tmp_path / "i.sqlite3") as e:
        prov = e.meta["provenance"]
    assert prov["derived_from"] == {"name": "Mini", "revision": "v1"}
    # names as the source spells them, whatever case the mapping used
    assert prov["mapping"] == {"table": "recent", "docid": "doc key", "url": "address", "title": None,
                               "text": "body", "metadata": []}


def test_import_jsonl_records_its_source(tmp_path: Path) -> None:
    src = DATA / "sample/docs.jsonl"
    import_corpus(src, tmp_path / "j.sqlite3", identify=lambda sha, size: None)
    with Engine.open(tmp_path / "j.sqlite3") as e:
        assert e.meta["provenance"] == {"method": "drsearch import", "mapping": None, "source": {
            "name": "docs.jsonl", "format": "jsonl", "bytes": src.stat().st_size, "sha256": sha256_file(src)}}


def test_a_source_that_changes_during_the_import_leaves_nothing(foreign: Path, tmp_path: Path) -> None:
    copy = tmp_path / "moving.sqlite3"
    copy.write_bytes(foreign.read_bytes())

    def touch(sha256: str, size: int) -> None:
        os.utime(copy, ns=(1, 1))  # as if another process rewrote the file after it was hashed

    with pytest.raises(InvalidInputError, match="changed while it was imported"):
        import_corpus(copy, tmp_path / "out.sqlite3", MAPPING, identify=touch)
    assert not (tmp_path / "out.sqlite3").exists()


def test_cli_import_sqlite_view_and_jsonl(foreign: Path, tmp_path: Path) -> None:
    code, out = call("import", "--from", str(foreign), "--table", "RECENT", "--docid-col", "doc key",
                     "--url-col", "address", "--text-col", "body", "--out", str(tmp_path / "v.sqlite3"),
                     "--quiet")
    assert code == 0 and "184 documents" in out
    with Engine.open(tmp_path / "v.sqlite3") as e:  # no --title-col: empty titles
        assert e.open_document(docid="d-8b601c6f3f2c9567").title == ""
    code, out = call("import", "--from", str(DATA / "sample/docs.jsonl"), "--out", str(tmp_path / "j.sqlite3"),
                     "--quiet")
    direct = build(sample_docs(), tmp_path / "d.sqlite3")
    assert code == 0 and direct.content_identity in out


def bad_db(tmp_path: Path, value: object, column: str = "body") -> Path:
    docs = sample_docs()[:3]
    path = foreign_db(tmp_path / f"bad-{column}.sqlite3", docs, typed=False)
    conn = apsw.Connection(str(path))
    conn.execute(f'UPDATE {quote_identifier(TABLE)} SET {quote_identifier(column)} = ? WHERE page_id = 2',
                 (value,))
    conn.close()
    return path


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("body", None, r"row 2 \(docid '.*'\): column 'body' is NULL"),
        ("body", b"\x00\x01", "column 'body' holds BLOB of 2 bytes, expected text"),
        ("headline", 42, "column 'headline' holds INTEGER, expected text"),
        ("address", 1.5, "column 'address' holds REAL, expected text"),
        ("doc key", None, "row 2: column 'doc key' is NULL"),
        ("doc key", 3.25, "column 'doc key' holds REAL"),
        ("source_id", b"x", "metadata column 'source_id' holds a BLOB"),
    ],
)
def test_bad_values_name_table_row_and_column(tmp_path: Path, column: str, value: object, message: str) -> None:
    path = bad_db(tmp_path, value, column)
    with pytest.raises(InvalidDocumentError, match=message):
        list(read_sqlite_documents(path, MAPPING))
    assert not (tmp_path / "out.sqlite3").exists()


def test_integer_docids_become_strings(tmp_path: Path) -> None:
    path = bad_db(tmp_path, 12345, "doc key")
    docs = list(read_sqlite_documents(path, MAPPING))
    assert docs[1]["docid"] == "12345"


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        (ColumnMapping("pages", "doc key", "address", "body"), r"no table or view 'pages' \(has: "),
        (ColumnMapping(TABLE, "docid", "address", "body"), "no column 'docid'"),
        (ColumnMapping(TABLE, "doc key", "address", "body", metadata=("url",)), "clashes with a document field"),
        (ColumnMapping(TABLE, "doc key", "address", "body", metadata=("page_id", "PAGE_ID")), "given twice"),
        (ColumnMapping('x"; DROP TABLE crawl_log; --', "a", "b", "c"), "no table or view"),
    ],
)
def test_unknown_or_clashing_names_are_clear_errors(foreign: Path, mapping: ColumnMapping, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        list(read_sqlite_documents(foreign, mapping))
    assert {t.name for t in inspect_source(foreign).tables} >= {"crawl_log"}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--table", TABLE], "needs --docid-col, --url-col, --text-col too"),
        ([], "is SQLite: give --table"),
        (["--table", "nope", "--docid-col", "a", "--url-col", "b", "--text-col", "c"], "no table or view 'nope'"),
    ],
)
def test_cli_usage_errors_exit_2_with_one_line(foreign: Path, tmp_path: Path, extra: list[str], message: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = call("import", "--from", str(foreign), "--out", str(tmp_path / "o.sqlite3"), "--quiet", *extra)
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err


def test_cli_other_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = call("import", "--from", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "o.sqlite3"))
    assert code == 2 and "cannot read" in capsys.readouterr().err
    code, _ = call("import", "--from", str(DATA / "sample/docs.jsonl"))
    assert code == 2 and "give --out" in capsys.readouterr().err
    code, _ = call("import", "--from", str(DATA / "sample/docs.jsonl"), "--table", "t", "--docid-col", "a",
                   "--url-col", "b", "--text-col", "c", "--out", str(tmp_path / "o.sqlite3"))
    assert code == 2 and "is JSONL" in capsys.readouterr().err
    # some column flags, not all: still about JSONL, never "a SQLite import needs --table"
    code, _ = call("import", "--from", str(DATA / "sample/docs.jsonl"), "--docid-col", "a",
                   "--out", str(tmp_path / "o.sqlite3"))
    err = capsys.readouterr().err
    assert code == 2 and "is JSONL: --docid-col: options of SQLite sources only" in err and "needs" not in err
    (tmp_path / "fake.sqlite3").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    with pytest.raises(NotADatabaseError):
        inspect_source(tmp_path / "fake.sqlite3")


def test_an_empty_source_is_refused_and_an_existing_output_kept(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.sqlite3"
    conn = apsw.Connection(str(empty))
    conn.execute(f'CREATE TABLE {quote_identifier(TABLE)}("doc key" TEXT, address TEXT, body TEXT)')
    conn.close()
    out = tmp_path / "kept.sqlite3"
    out.write_bytes(b"an earlier import")
    code, _ = call("import", "--from", str(empty), "--table", TABLE, "--docid-col", "doc key", "--url-col",
                   "address", "--text-col", "body", "--out", str(out), "--force", "--quiet")
    err = capsys.readouterr().err
    assert code == 2 and f"table {TABLE!r} holds no documents, nothing to import" in err
    assert out.read_bytes() == b"an earlier import"
    (tmp_path / "empty.jsonl").write_text("\n")
    code, _ = call("import", "--from", str(tmp_path / "empty.jsonl"), "--out", str(tmp_path / "e.sqlite3"))
    assert code == 2 and "the file holds no documents" in capsys.readouterr().err
    assert not (tmp_path / "e.sqlite3").exists()
