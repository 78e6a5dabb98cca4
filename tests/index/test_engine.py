"""Open, blocklist semantics, stats, frozen files, determinism and build validation."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import apsw
import pytest

from drsearch.contract import (
    BlocklistError,
    BuildError,
    DocumentNotFoundError,
    IncompatibleIndexError,
    InvalidDocumentError,
    InvalidKError,
    InvalidRequestError,
    NotADatabaseError,
    QueryTimeoutError,
)
from drsearch.contract import canonical_json as dumps
from drsearch.index import BlockList, Engine, build, chunktext, read_jsonl

from ..helpers import DATA, blocklist_of, sample_docs

DOCS = [
    {"docid": "b", "url": "https://Example.com/b/", "title": "Bee", "text": "bees make honey " * 5,
     "lang": "en", "aliases": ["https://mirror.example.org/bee?utm_source=x"]},
    {"docid": "a", "url": "https://example.com/a", "title": "Ant", "text": "ants carry leaves " * 900},
    {"docid": "c", "url": "https://example.com/c", "title": "Empty", "text": "   "},
    {"docid": "d", "url": "https://example.com/a#dup", "title": "Same URL as a", "text": "ants too"},
]


@pytest.fixture()
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.sqlite3"
    build(DOCS, path)
    return path


def test_open_by_docid_and_every_url_spelling(small: Path) -> None:
    with Engine.open(small) as e:
        doc = e.open_document(docid="b")
        assert (doc.docid, doc.title, doc.metadata) == ("b", "Bee", {"lang": "en"})
        assert doc.text == DOCS[0]["text"]  # full original text, whitespace kept
        for url in ["https://example.com/b", "HTTPS://EXAMPLE.COM:443/b/#x",
                    "https://mirror.example.org/bee", "https://mirror.example.org/bee?utm_medium=y"]:
            assert e.open_document(url=url).docid == "b"
        # URL collision: the first docid in sorted order keeps the URL.
        assert e.open_document(url="https://example.com/a").docid == "a"
        assert e.open_document(docid="d").docid == "d"


def test_long_document_chunks_and_full_text(small: Path) -> None:
    with Engine.open(small) as e:
        doc = e.open_document(docid="a")
        assert doc.n_words == 2700 and doc.n_chunks == 4
        hit = e.search("ants", k=5).hits[0]
        assert hit.docid == "a" and len(hit.chunk_text.split()) == 800


def test_empty_documents_are_counted_not_indexed(small: Path) -> None:
    with Engine.open(small) as e:
        s = e.stats()
        assert (s["documents"], s["indexed_documents"], s["empty_documents"]) == (4, 3, 1)
        assert e.open_document(docid="c").text == "   "


@pytest.mark.parametrize("kwargs", [{}, {"docid": "a", "url": "https://example.com/a"}])
def test_open_needs_exactly_one_key(small: Path, kwargs: dict[str, str]) -> None:
    with Engine.open(small) as e, pytest.raises(InvalidRequestError):
        e.open_document(**kwargs)


def test_blocked_is_indistinguishable_from_missing(small: Path) -> None:
    with Engine.open(small, blocklist_of("b")) as e:
        errors = []
        for kwargs in [{"docid": "b"}, {"docid": "zzz"}, {"url": "https://mirror.example.org/bee"},
                       {"url": "https://nowhere.example/"}]:
            with pytest.raises(DocumentNotFoundError) as info:
                e.open_document(**kwargs)
            errors.append((type(info.value), info.value.http_status, info.value.exit_code))
            key, value = next(iter(kwargs.items()))
            assert info.value.message == f"no document with {key} {value!r}"
        assert len(set(errors)) == 1
        assert "b" not in {h.docid for h in e.search("bees honey", k=10).hits}
        s = e.stats()
        assert s["blocked_documents"] == 1 and s["blocklist"]["count"] == 1
        assert ': "b"' not in json.dumps(s)  # only counts are reported, never the docids


def test_blocklist_file_format(tmp_path: Path) -> None:
    f = tmp_path / "blocked.txt"
    f.write_text("# answer docs\n\n  a  \nb\n# c\n")
    bl = BlockList.from_file(f)
    assert bl.docids == {"a", "b"} and len(bl) == 2
    assert bl.sha256 == hashlib.sha256(f.read_bytes()).hexdigest()
    f.write_text("a\nb c\n")
    with pytest.raises(BlocklistError, match=":2:"):
        BlockList.from_file(f)
    f.write_bytes(b"a\n\xff\n")
    with pytest.raises(BlocklistError, match="UTF-8"):
        BlockList.from_file(f)
    with pytest.raises(BlocklistError, match="cannot read"):
        BlockList.from_file(tmp_path / "missing.txt")


@pytest.mark.parametrize("k", [0, 101, -1, 2.5, "10", True, None])
def test_k_out_of_range(small: Path, k: object) -> None:
    with Engine.open(small) as e, pytest.raises(InvalidKError):
        e.search("ants", k=k)  # type: ignore[arg-type]


def test_time_limit(small: Path) -> None:
    with Engine.open(small, time_limit_s=0.0) as e, pytest.raises(QueryTimeoutError):
        e.search("ants bees", k=5)
    with Engine.open(small, time_limit_s=5.0) as e:  # a timeout leaves nothing behind
        assert e.search("ants", k=5).hits


def test_frozen_file_is_never_written(sample_index: Path) -> None:
    before = (hashlib.sha256(sample_index.read_bytes()).hexdigest(), sample_index.stat().st_mtime_ns)
    with Engine.open(sample_index) as e:
        for q in ["game console", "election results", "climate"]:
            e.search(q, k=10)
        e.open_document(docid=sample_docs()[0]["docid"])
        with pytest.raises(apsw.Error):
            e._conn.execute("DELETE FROM meta")
    assert (hashlib.sha256(sample_index.read_bytes()).hexdigest(),
            sample_index.stat().st_mtime_ns) == before
    assert not list(sample_index.parent.glob("*-wal")) and not list(sample_index.parent.glob("*-journal"))


def test_refuses_files_that_are_not_our_index(tmp_path: Path, small: Path) -> None:
    with pytest.raises(NotADatabaseError, match="no such file"):
        Engine.open(tmp_path / "missing.sqlite3")
    junk = tmp_path / "junk.sqlite3"
    junk.write_bytes(b"not a database" * 300)
    with pytest.raises(NotADatabaseError):
        Engine.open(junk)
    foreign = tmp_path / "foreign.sqlite3"
    conn = apsw.Connection(str(foreign))
    conn.execute("CREATE TABLE pages(url, body); INSERT INTO pages VALUES('u', 'b')")
    conn.close()
    with pytest.raises(IncompatibleIndexError, match="application_id"):
        Engine.open(foreign)
    newer = tmp_path / "newer.sqlite3"
    newer.write_bytes(small.read_bytes())
    conn = apsw.Connection(str(newer))
    conn.execute("PRAGMA user_version=99")
    conn.close()
    with pytest.raises(IncompatibleIndexError, match="schema version 99, this drsearch reads versions 1, 2"):
        Engine.open(newer)
    for bad in ("0", "true", '"64"', "null"):  # version 2 needs its block size to read its lists
        damaged = tmp_path / "damaged.sqlite3"
        damaged.write_bytes(small.read_bytes())
        conn = apsw.Connection(str(damaged))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'block_postings'", (bad,))
        conn.close()
        with pytest.raises(IncompatibleIndexError, match="damaged meta value 'block_postings'"):
            Engine.open(damaged)
    with pytest.raises(NotADatabaseError):
        Engine.open(tmp_path)  # a directory


def test_build_is_byte_identical_and_order_independent(tmp_path: Path) -> None:
    docs = sample_docs()[:60]
    build(docs, tmp_path / "one.sqlite3")
    build(list(reversed(docs)), tmp_path / "two.sqlite3")
    assert (tmp_path / "one.sqlite3").read_bytes() == (tmp_path / "two.sqlite3").read_bytes()
    with Engine.open(tmp_path / "one.sqlite3") as e1, Engine.open(tmp_path / "two.sqlite3") as e2:
        for q in ["video games", "the", "president election 2020"]:
            assert dumps(e1.search(q, 20).to_dict()) == dumps(e2.search(q, 20).to_dict())
        assert e1.stats()["content_identity"] == e2.stats()["content_identity"]


def test_content_identity_changes_with_content(tmp_path: Path) -> None:
    build(DOCS, tmp_path / "one.sqlite3")
    changed = [dict(DOCS[0], text="bees make wax"), *DOCS[1:]]
    build(changed, tmp_path / "two.sqlite3")
    with Engine.open(tmp_path / "one.sqlite3") as e1, Engine.open(tmp_path / "two.sqlite3") as e2:
        assert e1.stats()["content_identity"] != e2.stats()["content_identity"]


def test_unicode_is_nfc_normalised_at_build_and_query(tmp_path: Path) -> None:
    nfd = "Cafe\u0301 e\u0301migre\u0301"
    build([{"docid": "x", "url": "u", "title": nfd, "text": nfd + " menu"}], tmp_path / "u.sqlite3")
    with Engine.open(tmp_path / "u.sqlite3") as e:
        assert e.open_document(docid="x").title == "Café émigré"
        assert e.search("émigré", k=1).hits[0].docid == "x"  # composed query
        assert e.search("e\u0301migre\u0301", k=1).hits[0].docid == "x"  # decomposed query


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"docid": "a", "url": "u", "text": "t"}', '{"docid": "a", "url": "v", "text": "t"}'],
         ':2: duplicate docid'),
        (['{"docid": "a", "url": "u"}'], ":1: 'text' must be a string"),
        (['{"docid": "", "url": "u", "text": "t"}'], ":1: 'docid' must be a non-empty"),
        (['{"docid": "a", "url": "u", "text": "t"}', "{not json"], ":2: not valid JSON"),
        (['["a list"]'], ":1: a document must be a JSON object"),
        (['{"docid": "a b\\n", "url": "u", "text": "t"}'], "whitespace or control"),
    ],
)
def test_bad_documents_are_rejected_with_line_numbers(tmp_path: Path, lines: list[str],
                                                      message: str) -> None:
    src = tmp_path / "docs.jsonl"
    src.write_text("\n".join(lines) + "\n")
    with pytest.raises(InvalidDocumentError, match=message):
        build(read_jsonl(src), tmp_path / "out.sqlite3")
    assert not list(tmp_path.glob("*.sqlite3*")) and not list(tmp_path.glob(".out*"))


def test_existing_output_is_kept_unless_overwrite(tmp_path: Path, small: Path) -> None:
    before = small.read_bytes()
    with pytest.raises(BuildError, match="already exists"):
        build(DOCS, small)
    with pytest.raises(InvalidDocumentError):
        build([{"docid": "x"}], small, overwrite=True)
    assert small.read_bytes() == before  # a failed rebuild loses nothing
    build(DOCS[:2], small, overwrite=True)
    with Engine.open(small) as e:
        assert e.stats()["documents"] == 2


def test_meta_records_build_parameters(small: Path) -> None:
    with Engine.open(small) as e:
        m = e.meta
        assert m["tokenizer"] == "porter unicode61"
        assert (m["chunk_words"], m["chunk_stride"], m["chunk_overlap"]) == (800, 700, 100)
        assert m["bm25"] == {"k1": 1.2, "b": 0.75, "idf_floor": 1e-6}
        assert m["frozen"] is True and m["sqlite_version"] == apsw.sqlite_lib_version()
        conn = e._conn
        assert conn.execute("PRAGMA application_id").get == 0x44525331
        assert conn.execute("PRAGMA user_version").get == 5
        assert m["schema_version"] == 5 and m["block_postings"] == 64


def test_fts5_integrity_check_passes(sample_index: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.sqlite3"
    copy.write_bytes(sample_index.read_bytes())
    conn = apsw.Connection(str(copy))  # a plain connection, as the sqlite3 shell's
    assert conn.execute("PRAGMA integrity_check").get == "ok"
    # rank=1: also compare the index against the external content, the chunk_texts view,
    # which needs drsearch's function (chunktext.register)
    with pytest.raises(apsw.SQLError):
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
    chunktext.register(conn)
    conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
    conn.execute("UPDATE chunks SET end_byte = end_byte - 5 WHERE id = 3")
    with pytest.raises(apsw.CorruptError):
        conn.execute("INSERT INTO chunks_fts(chunks_fts, rank) VALUES('integrity-check', 1)")
    conn.close()


def test_sample_corpus_is_bundled() -> None:
    assert (DATA / "sample/LICENSE").read_text().startswith("MIT License")
    assert len(sample_docs()) == 184
    assert os.path.getsize(DATA / "sample/docs.jsonl") > 500_000


def test_snippets_are_short_and_show_the_query_terms(sample_engine: Engine) -> None:
    for query in ["Stadia game streaming", "cannabis legal", "Boeing 737 MAX crash"]:
        for hit in sample_engine.search(query, k=5).hits:
            assert len(hit.snippet) <= 260
            assert hit.snippet.strip("…") in hit.chunk_text
            words = {w.lower().rstrip("s") for w in query.split()}
            assert any(w in hit.snippet.lower() for w in words), (query, hit.snippet)


def test_snippet_edge_cases() -> None:
    from drsearch.index.snippet import SnippetMaker

    make = SnippetMaker([("boundari", "boundary", 3.0), ("the", "the", 1e-6)], width=40)
    assert make("short text") == "short text"
    text = " ".join(["filler"] * 30 + ["the", "Boundary", "layer"] + ["filler"] * 30)
    snip = make(text)
    assert "Boundary" in snip and snip.startswith("…") and snip.endswith("…")
    assert make(text) == snip  # deterministic
    assert SnippetMaker([])(text).startswith("filler")


def test_an_index_missing_tables_names_them(sample_index: Path, tmp_path: Path) -> None:
    import shutil

    import apsw

    from drsearch.contract import IncompatibleIndexError

    broken = tmp_path / "broken.sqlite3"
    shutil.copy(sample_index, broken)
    conn = apsw.Connection(str(broken))
    conn.execute("DROP TABLE doc_texts")
    conn.close()
    with pytest.raises(IncompatibleIndexError, match="missing tables: doc_texts"):
        Engine.open(broken)


def test_building_onto_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    from drsearch.contract import BuildError
    from drsearch.index import build

    (tmp_path / "out.sqlite3").mkdir()
    with pytest.raises(BuildError, match="is a directory"):
        build(sample_docs()[:3], tmp_path / "out.sqlite3", overwrite=True)
    assert (tmp_path / "out.sqlite3").is_dir()  # left as it was
