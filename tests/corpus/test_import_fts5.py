"""Importing another tool's FTS5 search database (as DR-256 ships its corpus): its chunks and
its tokenizer are taken over, so our ranking is that table's own ``bm25()`` per document."""

from __future__ import annotations

import contextlib
import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from drsearch.contract import InvalidDocumentError, InvalidInputError
from drsearch.corpus import ChunkMapping, ColumnMapping, import_corpus
from drsearch.index import BuildSettings, Engine
from drsearch.tools.cli import main

from ..helpers import cranfield_docs, cranfield_queries

TOKENIZE = "unicode61 remove_diacritics 2"
DOCS = ColumnMapping("docs", docid="doc_id", url="url", text="body", title="title")
COPY = "zz-copy-of-cran-5"  # sorts after cran-5 by docid, but its chunks come first in the source
EXTRA_QUERIES = ["Ångström naïve boundary layer", "NAIVE angstrom heat transfer", "Mach Number Flow"]


def chunk_rows(docs: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """The fixture tool's own chunking: 40-word windows every 25 words, documents in their
    numeric order (not docid order), a few words with diacritics, and a copy of cran-5's
    chunks first of all (exact ties that only the source's rowid order breaks)."""
    by_id = {d["docid"]: d for d in docs}
    for docid in [COPY, *sorted(by_id, key=lambda d: int(d.split("-")[1]))]:
        words = by_id["cran-5" if docid == COPY else docid]["text"].split()
        n = int(docid.split("-")[-1])
        if n % 7 == 0:
            words = ["Ångström", "naïve", *words]
        for start in range(0, max(len(words) - 15, 1), 25):
            yield docid, " ".join(words[start:start + 40])


def foreign_fts5(path: Path, *, external: bool = False, tokenize: str = TOKENIZE,
                 extra_sql: str = "") -> Path:
    """Another tool's search database: a documents table, and an FTS5 table of its own chunks
    (contentful with a doc_id UNINDEXED column, or external content with the document column
    only in the content table)."""
    docs = cranfield_docs()
    conn = apsw.Connection(str(path))
    conn.execute("CREATE TABLE docs(id INTEGER PRIMARY KEY, doc_id TEXT, url TEXT, title TEXT, body TEXT)")
    tok = "'" + tokenize.replace("'", "''") + "'"
    if external:
        conn.execute("CREATE TABLE chunk_rows(cid INTEGER PRIMARY KEY, owner TEXT, passage TEXT)")
        conn.execute(f"CREATE VIRTUAL TABLE passages USING fts5(passage, content='chunk_rows', "
                     f"content_rowid='cid', tokenize={tok})")
    else:
        conn.execute(f"CREATE VIRTUAL TABLE passages USING fts5(doc_id UNINDEXED, passage, tokenize={tok})")
    with conn:
        for d in reversed(docs):  # the documents table in yet another order
            conn.execute("INSERT INTO docs(doc_id, url, title, body) VALUES(?,?,?,?)",
                         (d["docid"], d["url"], d["title"], d["text"]))
        conn.execute("INSERT INTO docs(doc_id, url, title, body) VALUES(?,?,?,?)",
                     (COPY, "https://copies.example/5", "copy", docs[4]["text"]))
        conn.execute("INSERT INTO docs(doc_id, url, title, body) VALUES('unchunked', 'https://x.example/', "
                     "'', 'a document the tool never indexed')")
        for rowid, (docid, text) in enumerate(chunk_rows(docs), 1):
            rowid *= 3  # rowids with gaps: only their order matters
            if external:
                conn.execute("INSERT INTO chunk_rows VALUES(?,?,?)", (rowid, docid, text))
                conn.execute("INSERT INTO passages(rowid, passage) VALUES(?,?)", (rowid, text))
            else:
                conn.execute("INSERT INTO passages(rowid, doc_id, passage) VALUES(?,?,?)", (rowid, docid, text))
        if extra_sql:
            conn.execute(extra_sql)
    conn.close()
    return path


def source_ranking(path: Path, query: str, k: int = 10, external: bool = False) -> list[tuple[str, float]]:
    """The fixture's own answer: FTS5 ``bm25()`` ``ORDER BY rank`` over its chunks, grouped to
    the best chunk per document. The MATCH is built here (each distinct word quoted, ORed),
    not by drsearch."""
    words = list(dict.fromkeys(w.casefold() for w in re.findall(r"\w+", query)))
    match = " OR ".join('"' + w + '"' for w in words)
    conn = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    doc = "c.owner" if external else "p.doc_id"
    join = "JOIN chunk_rows AS c ON c.cid = p.rowid" if external else ""
    rows = conn.execute(f"SELECT {doc}, bm25(passages) FROM passages AS p {join} WHERE passages MATCH ? "
                        "ORDER BY rank", (match,)).fetchall()
    conn.close()
    out: dict[str, float] = {}
    for docid, score in rows:
        if docid not in out:
            out[docid] = -score
            if len(out) == k:
                break
    return list(out.items())


def our_ranking(engine: Engine, query: str, k: int = 10) -> list[tuple[str, float]]:
    return [(h.docid, h.score) for h in engine.search(query, k, with_text=False).hits]


def call(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        code = main(list(args), out=out)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return foreign_fts5(tmp_path_factory.mktemp("fts5") / "search.sqlite3")


@pytest.fixture(scope="module")
def imported(source: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imported") / "corpus.sqlite3"
    code, stdout, err = call("import", "--from", str(source), "--table", "docs", "--docid-col", "doc_id",
                             "--url-col", "url", "--title-col", "title", "--text-col", "body",
                             "--out", str(out), "--quiet")
    assert code == 0, err
    assert "FTS5 table 'passages' in rowid order, tokenizer 'unicode61 remove_diacritics 2' (as declared)" in stdout
    return out


def test_top10_of_50_queries_equals_the_sources_own_bm25_per_document(source: Path, imported: Path) -> None:
    queries = cranfield_queries()[:50] + EXTRA_QUERIES
    with Engine.open(imported) as engine:
        for q in queries:
            ours, theirs = our_ranking(engine, q), source_ranking(source, q)
            assert len(theirs) == 10 and ours == theirs, q  # same docids, same order, same float scores
        # not vacuous: the copy ties with cran-5 exactly, and the source's rowid order puts it first
        tie = "transient heat conduction double-layer slab triangular heat rate"
        tied = our_ranking(engine, tie)
    assert tied[:2] == source_ranking(source, tie)[:2] == [(COPY, tied[0][1]), ("cran-5", tied[0][1])]


def test_the_chunks_their_order_and_documents_are_the_sources(source: Path, imported: Path) -> None:
    src = apsw.Connection(str(source), flags=apsw.SQLITE_OPEN_READONLY)
    theirs = [(d, t) for d, t in src.execute("SELECT doc_id, passage FROM passages ORDER BY rowid")]
    src.close()
    ours_conn = apsw.Connection(f"file:{imported}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    ours = [(d, t) for d, t in ours_conn.execute(
        "SELECT d.docid, c.text FROM chunks AS c JOIN documents AS d ON d.id = c.doc ORDER BY c.id")]
    ordinals = [o for (o,) in ours_conn.execute(
        "SELECT ordinal FROM chunks WHERE doc = (SELECT id FROM documents WHERE docid = 'cran-7') ORDER BY id")]
    ours_conn.close()
    assert ours == theirs and ordinals == list(range(len(ordinals)))
    with Engine.open(imported) as engine:
        meta = engine.meta
        assert engine.scorer.kind in ("c-auto", "numpy")
        assert engine.open_document(docid="cran-7").text == cranfield_docs()[6]["text"]  # the documents table's
        assert engine.stats()["build"]["tokenizer"] == TOKENIZE
    assert meta["tokenizer"] == TOKENIZE and meta["chunking"] == "pre-chunked"
    assert meta["chunks"] == len(theirs) and meta["documents"] == 1402 and meta["empty_documents"] == 1
    assert meta["chunk_words"] is None and meta["chunk_stride"] is None
    prov = meta["provenance"]
    assert prov["chunks"] == {"table": "passages", "docid": "doc_id", "text": "passage", "order": "rowid",
                              "content": None, "rows": len(theirs)}
    assert prov["tokenizer"] == {"declared": TOKENIZE, "used": TOKENIZE, "chosen_by": "source"}


def test_inspect_shows_the_fts5_declaration(source: Path) -> None:
    code, out, _ = call("import", "--from", str(source), "--inspect")
    assert code == 0 and "virtual table passages: " in out
    assert "FTS5: tokenize='unicode61 remove_diacritics 2', indexed ['passage'], unindexed ['doc_id']" in out
    code, out, _ = call("import", "--from", str(source), "--inspect", "--json")
    tables = {t["name"]: t for t in json.loads(out)["tables"]}
    assert tables["passages"]["fts5"] == {"tokenize": TOKENIZE, "indexed": ["passage"], "unindexed": ["doc_id"],
                                          "options": {"tokenize": TOKENIZE}}
    assert tables["docs"]["fts5"] is None


def test_the_same_source_imported_twice_is_byte_identical(source: Path, imported: Path, tmp_path: Path) -> None:
    again = import_corpus(source, tmp_path / "again.sqlite3", DOCS)
    assert again.path.read_bytes() == imported.read_bytes()


def test_external_content_chunks_with_the_document_column_in_the_content_table(tmp_path: Path) -> None:
    source = foreign_fts5(tmp_path / "ext.sqlite3", external=True)
    report = import_corpus(source, tmp_path / "ext-corpus.sqlite3", DOCS, chunks=ChunkMapping(docid="owner"))
    with Engine.open(report.path) as engine:
        for q in cranfield_queries()[50:70] + EXTRA_QUERIES:
            assert our_ranking(engine, q) == source_ranking(source, q, external=True), q
        assert engine.meta["provenance"]["chunks"] == {
            "table": "passages", "docid": "owner", "text": "passage", "order": "cid", "content": "chunk_rows",
            "rows": engine.meta["chunks"]}


def test_rechunking_or_another_tokenizer_is_what_was_asked_and_ranks_differently(
        source: Path, tmp_path: Path) -> None:
    """The opt-outs are recorded, and really change the ranking (so the equality above is not luck)."""
    queries = cranfield_queries()[:50] + EXTRA_QUERIES
    rechunked = import_corpus(source, tmp_path / "re.sqlite3", DOCS, chunks=None)
    porter = import_corpus(source, tmp_path / "porter.sqlite3", DOCS, BuildSettings(tokenizer="porter"))
    with Engine.open(rechunked.path) as re_engine, Engine.open(porter.path) as p_engine:
        assert "chunks" not in re_engine.meta["provenance"] and re_engine.meta["tokenizer"] == "porter unicode61"
        assert p_engine.meta["provenance"]["tokenizer"] == {"declared": TOKENIZE, "used": "porter unicode61",
                                                            "chosen_by": "caller"}
        for engine in (re_engine, p_engine):
            assert sum(our_ranking(engine, q) != source_ranking(source, q) for q in queries) > 25
    code, out, err = call("import", "--from", str(source), "--table", "docs", "--docid-col", "doc_id",
                          "--url-col", "url", "--text-col", "body", "--out", str(tmp_path / "cli.sqlite3"),
                          "--tokenizer", "unicode61", "--quiet")
    assert code == 0 and "tokenizer 'unicode61' (--tokenizer)" in out, err


def test_a_tokenizer_spec_reaches_build_and_query_time(tmp_path: Path) -> None:
    """Any FTS5 tokenize value is a build setting; the engine tokenises queries with it."""
    from drsearch.index import build

    docs = [{"docid": "a", "url": "https://a.example/", "text": "Ångström naïve café-au-lait"},
            {"docid": "b", "url": "https://b.example/", "text": "angstrom naive cafe au lait"}]
    spec = "unicode61 remove_diacritics 2 tokenchars '-'"
    report = build(docs, tmp_path / "t.sqlite3", BuildSettings(tokenizer=spec))
    with Engine.open(report.path) as engine:
        assert engine.meta["tokenizer"] == spec
        assert [t.term for t in engine.parse("NAÏVE Café-au-lait").terms] == ["naive", "cafe-au-lait"]
        hits = engine.search("café-au-lait angstrom", 10).hits
        assert [(h.docid, h.score) for h in hits] == [
            (engine._doc_table().get([int(engine._chunk_doc[c])])[0][0], s)
            for c, s in engine.fts5_rank("café-au-lait angstrom")]
        assert [h.docid for h in hits] == ["a", "b"]  # 'cafe-au-lait' is one token: only a has it
    for bad, why in [("nosuch", 'No tokenizer named "nosuch"'), ("unicode61 remove_diacritics 9", "not one FTS5"),
                     ("unicode61 -x", "cannot parse"), ("", "empty")]:
        with pytest.raises(ValueError, match=why):
            BuildSettings(tokenizer=bad)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"tokenize": "unicode61", "extra_sql": "CREATE VIRTUAL TABLE titles USING fts5(doc_id UNINDEXED, title)"},
     "has 2 FTS5 tables of chunks ('passages', 'titles'): give --chunks-table"),
    ({"extra_sql": "INSERT INTO passages(passages, rank) VALUES('rank', 'bm25(2.0, 1.0)')"},
     "ranks with 'bm25(2.0, 1.0)', not plain bm25()"),
])
def test_sources_whose_ranking_cannot_be_reproduced_are_refused(tmp_path: Path, kwargs: dict[str, Any],
                                                                message: str) -> None:
    source = foreign_fts5(tmp_path / "src.sqlite3", **kwargs)
    out = tmp_path / "out.sqlite3"
    with pytest.raises(InvalidInputError, match=re.escape(message)):
        import_corpus(source, out, DOCS)
    assert not out.exists()
    code, _, err = call("import", "--from", str(source), "--table", "docs", "--docid-col", "doc_id",
                        "--url-col", "url", "--text-col", "body", "--out", str(out))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and not out.exists()


@pytest.mark.parametrize(("declaration", "message"), [
    ("fts5(doc_id UNINDEXED, title, passage)", "scores 2 columns ('title', 'passage')"),
    ("fts5(doc_id UNINDEXED, passage, detail=column)", "has detail=column"),
    ("fts5(doc_id UNINDEXED, passage, content='')", "is contentless"),
])
def test_fts5_declarations_we_cannot_rank_like_are_refused(tmp_path: Path, declaration: str,
                                                           message: str) -> None:
    source = tmp_path / "s.sqlite3"
    conn = apsw.Connection(str(source))
    conn.execute("CREATE TABLE docs(doc_id TEXT, url TEXT, title TEXT, body TEXT)")
    conn.execute("INSERT INTO docs VALUES('d1', 'https://d.example/', 't', 'some text')")
    conn.execute(f"CREATE VIRTUAL TABLE passages USING {declaration}")
    conn.close()
    with pytest.raises(InvalidInputError, match=re.escape(message)):
        import_corpus(source, tmp_path / "o.sqlite3", DOCS)
    assert import_corpus(source, tmp_path / "o.sqlite3", DOCS, chunks=None).chunks == 1  # --rechunk still works


def test_an_fts5_table_that_names_no_documents_is_not_taken_for_chunks(tmp_path: Path) -> None:
    """An FTS5 index of titles (no column naming a document) is not chunks: the documents are
    chunked 800/700 and the provenance and CLI say why the table was not used; naming it
    explicitly is an error."""
    source = tmp_path / "s.sqlite3"
    conn = apsw.Connection(str(source))
    conn.execute("CREATE TABLE docs(doc_id TEXT, url TEXT, title TEXT, body TEXT)")
    conn.execute("INSERT INTO docs VALUES('d1', 'https://d.example/', 't', 'some text')")
    conn.execute("CREATE VIRTUAL TABLE title_fts USING fts5(title)")
    conn.close()
    report = import_corpus(source, tmp_path / "o.sqlite3", DOCS)
    with Engine.open(report.path) as engine:
        prov = engine.meta["provenance"]
    assert "chunks" not in prov and prov["unused_fts5_tables"] == {
        "title_fts": "no column 'doc_id' naming each chunk's document (has: 'title')"}
    code, out, _ = call("import", "--from", str(source), "--table", "docs", "--docid-col", "doc_id", "--url-col",
                        "url", "--text-col", "body", "--out", str(tmp_path / "c.sqlite3"), "--quiet")
    assert code == 0 and "(chunked 800/700; FTS5 tables not taken as chunks: 'title_fts': no column" in out
    with pytest.raises(InvalidInputError, match=r"FTS5 table 'title_fts': no column 'doc_id' naming each "
                                                r"chunk's document .*give --chunk-docid-col"):
        import_corpus(source, tmp_path / "x.sqlite3", DOCS, chunks=ChunkMapping("title_fts"))


def test_a_chunk_of_an_unknown_document_stops_the_import(tmp_path: Path) -> None:
    source = tmp_path / "s.sqlite3"
    conn = apsw.Connection(str(source))
    conn.execute("CREATE TABLE docs(doc_id TEXT, url TEXT, title TEXT, body TEXT)")
    conn.execute("INSERT INTO docs VALUES('d1', 'https://d.example/', 't', 'some text')")
    conn.execute("CREATE VIRTUAL TABLE passages USING fts5(doc_id UNINDEXED, passage)")
    conn.execute("INSERT INTO passages(rowid, doc_id, passage) VALUES(4, 'd1', 'some text'), (9, 'd2', 'lost')")
    conn.close()
    with pytest.raises(InvalidDocumentError, match=r"s.sqlite3 table 'passages' rowid 9: chunk of docid 'd2', "
                                                   "which no document has"):
        import_corpus(source, tmp_path / "o.sqlite3", DOCS)
    assert not (tmp_path / "o.sqlite3").exists()


def test_cli_chunk_options_usage(source: Path, tmp_path: Path) -> None:
    base = ["import", "--from", str(source), "--table", "docs", "--docid-col", "doc_id", "--url-col", "url",
            "--text-col", "body", "--out", str(tmp_path / "o.sqlite3")]
    code, _, err = call(*base, "--rechunk", "--chunks-table", "passages")
    assert code == 2 and "--rechunk ignores the source's chunks: not with --chunks-table" in err
    code, _, err = call(*base, "--chunks-table", "docs")
    assert code == 2 and "no FTS5 table 'docs' (has: 'passages')" in err
    code, _, err = call(*base, "--tokenizer", "nosuch")
    assert code == 2 and 'tokenizer \'nosuch\' is not one FTS5 accepts: No tokenizer named "nosuch"' in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = call(*base, "--rechunk", "--quiet")
    assert code == 0 and "(chunked 800/700)" in out, err


def test_a_tokenizer_this_sqlite_lacks_is_refused_unless_one_is_named(tmp_path: Path) -> None:
    """A source declaring e.g. an ICU tokenizer (an extension we do not have): its ranking
    cannot be reproduced, so the import stops saying so; naming a tokenizer is the caller's
    explicit choice and is recorded as such."""
    source = tmp_path / "s.sqlite3"
    conn = apsw.Connection(str(source))
    conn.execute("CREATE TABLE docs(doc_id TEXT, url TEXT, title TEXT, body TEXT)")
    conn.execute("INSERT INTO docs VALUES('d1', 'https://d.example/', 't', 'some text')")
    conn.execute("CREATE TABLE chunk_rows(id INTEGER PRIMARY KEY, doc_id TEXT, passage TEXT)")
    conn.execute("INSERT INTO chunk_rows VALUES(1, 'd1', 'some text')")
    conn.execute("CREATE VIRTUAL TABLE passages USING fts5(passage, content='chunk_rows', content_rowid='id')")
    conn.execute("INSERT INTO passages(passages) VALUES('rebuild')")
    conn.execute("PRAGMA writable_schema=ON")  # as if built where an ICU tokenizer was loaded
    conn.execute("UPDATE sqlite_schema SET sql = replace(sql, 'content_rowid=''id''', "
                 "'content_rowid=''id'', tokenize=''icu zh_CN''') WHERE name = 'passages'")
    conn.close()
    with pytest.raises(InvalidInputError, match=r"s.sqlite3 FTS5 table 'passages' is tokenized with 'icu zh_CN', "
                                                r"which this SQLite cannot load"):
        import_corpus(source, tmp_path / "o.sqlite3", DOCS)
    report = import_corpus(source, tmp_path / "o.sqlite3", DOCS, BuildSettings(tokenizer="unicode61"))
    with Engine.open(report.path) as engine:
        assert engine.meta["provenance"]["tokenizer"] == {"declared": "icu zh_CN", "used": "unicode61",
                                                          "chosen_by": "caller"}
        assert [h.docid for h in engine.search("text").hits] == ["d1"]
