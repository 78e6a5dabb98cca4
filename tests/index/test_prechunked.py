"""Pre-chunked builds and FTS5 tokenize specs: the chunks and tokenizer are kept as given,
and the engine still ranks exactly as FTS5's bm25() over them."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from drsearch.contract import IncompatibleIndexError, InvalidDocumentError, InvalidInputError
from drsearch.index import BuildSettings, Engine, SourceChunk, build
from drsearch.index.fts5spec import parse_fts5_table, sql_string, tokenize_words
from drsearch.index.native import NATIVE_AVAILABLE

from ..helpers import cranfield_docs, cranfield_queries


def fts5_grouped(engine: Engine, query: str, k: int = 10) -> list[tuple[str, float]]:
    """FTS5's own ranking of the index's chunks, best chunk per document, as (docid, score)."""
    out: dict[str, float] = {}
    for chunk, score in engine.fts5_rank(query, 100_000):
        docid = engine._doc_table().get([int(engine._chunk_doc[chunk])])[0][0]
        if docid not in out:
            out[docid] = score
            if len(out) == k:
                break
    return list(out.items())


def ranking(engine: Engine, query: str, k: int = 10) -> list[tuple[str, float]]:
    return [(h.docid, h.score) for h in engine.search(query, k, with_text=False).hits]


DOCS = [{"docid": d, "url": f"https://{d}.example/", "text": t} for d, t in [
    ("b", "wing flutter at transonic speed"), ("a", "wing flutter at transonic speed"), ("c", "heat transfer"),
]]


def test_chunks_keep_their_order_which_breaks_ties(tmp_path: Path) -> None:
    """Equal chunks of b and a: the one given first ranks first (FTS5's lower rowid), although
    a sorts first by docid; documents are laid out in the order of their first chunk."""
    chunks = [SourceChunk("b", "wing flutter"), SourceChunk("a", "wing flutter"), SourceChunk("c", "heat transfer"),
              SourceChunk("c", "")]
    report = build(DOCS, tmp_path / "x.sqlite3", chunks=chunks)
    assert report.chunks == 4 and report.indexed_documents == 3
    with Engine.open(report.path) as engine:
        hits = engine.search("flutter wing", 10).hits
        assert [(h.docid, h.chunk_text) for h in hits] == [("b", "wing flutter"), ("a", "wing flutter")]
        assert hits[0].score == hits[1].score and ranking(engine, "flutter wing") == fts5_grouped(engine, "flutter wing")
        assert engine.meta["chunking"] == "pre-chunked" and engine.meta["chunk_words"] is None
        assert engine.stats()["build"]["chunking"] == "pre-chunked"
        assert engine.open_document(docid="c").n_chunks == 2
    flipped = build(DOCS, tmp_path / "y.sqlite3", chunks=[chunks[1], chunks[0], *chunks[2:]])
    with Engine.open(flipped.path) as engine:
        assert [h.docid for h in engine.search("flutter wing", 10).hits] == ["a", "b"]
    assert flipped.content_identity != report.content_identity
    again = build(list(reversed(DOCS)), tmp_path / "z.sqlite3", chunks=chunks)  # documents in any order
    assert again.path.read_bytes() == report.path.read_bytes()


@pytest.mark.parametrize("interleave", [False, True])
def test_pre_chunked_cranfield_ranks_as_fts5_on_both_scorer_paths(tmp_path: Path, interleave: bool) -> None:
    """Consecutive chunks per document keep the C path; interleaved ones fall back to numpy.
    Either way every top 10 equals FTS5's bm25() over the same chunks, tokenized with
    ``unicode61 remove_diacritics 2``."""
    docs = cranfield_docs()[:400]
    per_doc = [[SourceChunk(d["docid"], " ".join(d["text"].split()[i:i + 30]))
                for i in range(0, max(len(d["text"].split()), 1), 20)] for d in docs]
    chunks = [c for group in per_doc for c in group]
    if interleave:  # every document's chunks scattered: even positions first, then odd ones
        chunks = chunks[::2] + chunks[1::2]
    report = build(docs, tmp_path / "c.sqlite3", BuildSettings(tokenizer="unicode61 remove_diacritics 2"),
                   chunks=chunks)
    with Engine.open(report.path) as engine:
        assert engine.meta["tokenizer"] == "unicode61 remove_diacritics 2"
        assert engine.scorer.kind == ("numpy" if interleave or not NATIVE_AVAILABLE else "c-auto")
        for q in cranfield_queries()[:40]:
            assert ranking(engine, q) == fts5_grouped(engine, q), q
    with Engine.open(report.path, native=False) as plain:
        assert all(ranking(plain, q) == fts5_grouped(plain, q) for q in cranfield_queries()[:10])


def test_bad_chunks_stop_the_build_and_leave_nothing(tmp_path: Path) -> None:
    out = tmp_path / "x.sqlite3"
    cases: list[tuple[list[object], str]] = [
        ([SourceChunk("a", "x"), SourceChunk("nope", "y", "t rowid 7")], "t rowid 7: chunk of docid 'nope', which no"),
        ([SourceChunk("", "x")], "chunk 1: a chunk's docid must be a non-empty string"),
        ([SourceChunk("a", None)], "chunk 1: a chunk's text must be a string"),  # type: ignore[arg-type]
        ([("a", "x")], "chunk 1: a chunk must be a SourceChunk, got tuple"),
        ([SourceChunk("a", "bad \udc80")], "chunk 1: chunk text is not valid Unicode"),
    ]
    for chunks, message in cases:
        with pytest.raises(InvalidDocumentError, match=message.replace("(", r"\(")):
            build(DOCS, out, chunks=chunks)  # type: ignore[arg-type]
        assert not out.exists()


def test_tokenize_specs_follow_fts5s_own_syntax() -> None:
    assert tokenize_words("unicode61 remove_diacritics 2") == ["unicode61", "remove_diacritics", "2"]
    assert tokenize_words("  porter   unicode61 ") == ["porter", "unicode61"]
    assert tokenize_words("unicode61 tokenchars '-''.'") == ["unicode61", "tokenchars", "-'."]
    assert tokenize_words("unicode61 separators 'é'") == ["unicode61", "separators", "é"]
    for bad in ("", "   ", "unicode61 -x", "unicode61 'open"):
        with pytest.raises(InvalidInputError):
            tokenize_words(bad)
    assert sql_string("unicode61 tokenchars '-'") == "'unicode61 tokenchars ''-'''"


def test_fts5_declarations_are_read_as_fts5_reads_them() -> None:
    t = parse_fts5_table("p", "CREATE VIRTUAL TABLE \"my, (odd) table\" USING fts5(\"doc id\" UNINDEXED, "
                              "[passage], tokenize = \"unicode61 tokenchars '-'\", content='rows', "
                              "content_rowid=cid, detail=full, prefix='2 3')")
    assert t is not None and [(c.name, c.unindexed) for c in t.columns] == [("doc id", True), ("passage", False)]
    assert t.indexed == ["passage"] and t.tokenize == "unicode61 tokenchars '-'"
    assert t.options == {"tokenize": "unicode61 tokenchars '-'", "content": "rows", "content_rowid": "cid",
                         "detail": "full", "prefix": "2 3"}
    plain = parse_fts5_table("q", "create virtual table q using FTS5(body)")
    assert plain is not None and plain.tokenize == "unicode61" and plain.indexed == ["body"]  # FTS5's default
    assert parse_fts5_table("r", "CREATE VIRTUAL TABLE r USING rtree(id, x0, x1)") is None


def test_an_index_whose_tokenizer_fts5_cannot_load_is_refused_at_open(tmp_path: Path) -> None:
    report = build(DOCS, tmp_path / "x.sqlite3", BuildSettings(tokenizer="unicode61 remove_diacritics 2"))
    conn = apsw.Connection(str(report.path))
    conn.execute("UPDATE meta SET value = '\"icu zh_CN\"' WHERE key = 'tokenizer'")
    conn.close()
    with pytest.raises(IncompatibleIndexError, match=r"damaged or incomplete drsearch index .*icu zh_CN"):
        Engine.open(report.path)
