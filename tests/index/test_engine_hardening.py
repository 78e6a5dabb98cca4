"""The engine under hostile input: blocked = missing, damaged bytes, crafted files, huge queries."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import apsw
import pytest

from drsearch.contract import (
    MAX_QUERY_TERMS,
    CorruptIndexError,
    DocumentNotFoundError,
    IncompatibleIndexError,
    InvalidQueryError,
    QueryTimeoutError,
)
from drsearch.index import BlockList, Engine
from drsearch.index.engine import EngineOptions

QUERY = "video game streaming subscription"


def flip_a_bit_in_a_document(src: Path, dst: Path) -> str:
    """Copy ``src`` with one bit flipped in one document's compressed text; its docid."""
    data = bytearray(src.read_bytes())
    conn = apsw.Connection(str(src), flags=apsw.SQLITE_OPEN_READONLY)
    rows = conn.execute("SELECT d.docid, t.text FROM documents AS d JOIN doc_texts AS t ON t.id = d.id "
                        "WHERE length(t.text) BETWEEN 300 AND 2000 ORDER BY d.id").fetchall()
    conn.close()
    for docid, blob in rows:
        pos = data.find(blob)
        if pos >= 0 and data.find(blob, pos + 1) < 0:
            data[pos + len(blob) // 2] ^= 0x10
            dst.write_bytes(bytes(data))
            return str(docid)
    raise AssertionError("no document text stored in one piece")


def short_terms(engine: Engine, n: int) -> list[str]:
    return [t for (t,) in engine._conn.execute(
        "SELECT term FROM terms ORDER BY length(term), df DESC, term LIMIT ?", (n,))]


def test_opening_a_blocked_document_reads_nothing_of_it(sample_index: Path) -> None:
    """Blocked and missing take one path: a rowid lookup and the same exception; the
    blocked document's row (its compressed text) is never fetched."""
    with Engine.open(sample_index) as e:
        hidden = e.search(QUERY, 1).hits[0].docid
        url = e.open_document(docid=hidden).url
    engine = Engine.open(sample_index, BlockList.from_bytes(f"{hidden}\n".encode()))
    rows: list[tuple[Any, ...]] = []

    def trace(cursor: Any, row: tuple[Any, ...]) -> tuple[Any, ...]:
        rows.append(row)
        return row

    engine._conn.row_trace = trace
    messages = []
    for kwargs in ({"docid": hidden}, {"docid": "web-" + "0" * 16}, {"url": url}, {"url": "https://x.example/"}):
        with pytest.raises(DocumentNotFoundError) as info:
            engine.open_document(**kwargs)
        messages.append(info.value.message.replace(hidden, "ID").replace("web-" + "0" * 16, "ID"))
    assert all(len(r) == 1 and isinstance(r[0], int) for r in rows), rows  # rowids only, no text
    assert messages[0] == messages[1]
    engine.close()


def test_a_flipped_bit_is_a_corrupt_index_error(sample_index: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.sqlite3"
    docid = flip_a_bit_in_a_document(sample_index, damaged)
    with Engine.open(damaged) as e:
        with pytest.raises(CorruptIndexError) as info:
            e.open_document(docid=docid)
        assert info.value.http_status == 500 and info.value.error_type == "corrupt_index"
        assert "validate --deep" in info.value.message and str(tmp_path) not in info.value.message
        assert e.search(QUERY, 5).hits  # the rest of the file still answers


@pytest.mark.parametrize(("sql", "message"), [
    ("UPDATE meta SET value = 'true' WHERE key = 'documents'", "'documents'"),
    ("UPDATE meta SET value = '-5' WHERE key = 'chunks'", "negative"),
    ("UPDATE meta SET value = '{\"k1\": null, \"b\": 0.75}' WHERE key = 'bm25'", "k1"),
    ("UPDATE meta SET value = 'not json' WHERE key = 'tokenizer'", "not JSON"),
    ("DELETE FROM meta WHERE key = 'vocabulary'", "'vocabulary'"),
    ("UPDATE arrays SET data = substr(data, 1, 7) WHERE name = 'chunk_len'", "'chunk_len'"),
    ("UPDATE arrays SET dtype = '<i8' WHERE name = 'chunk_ordinal'", "'chunk_ordinal'"),
    ("DELETE FROM arrays WHERE name = 'chunk_doc'", "'chunk_doc'"),
])
def test_crafted_meta_and_arrays_are_incompatible(sample_index: Path, tmp_path: Path, sql: str,
                                                  message: str) -> None:
    crafted = tmp_path / "crafted.sqlite3"
    crafted.write_bytes(sample_index.read_bytes())
    conn = apsw.Connection(str(crafted))
    conn.execute(sql)
    conn.close()
    with pytest.raises(IncompatibleIndexError, match=message):
        Engine.open(crafted)


def test_distinct_terms_are_capped(sample_engine: Engine) -> None:
    terms = [str(10_000 + i) for i in range(MAX_QUERY_TERMS + 1)]  # numbers: each its own term
    assert MAX_QUERY_TERMS == 1024
    sample_engine.parse(" ".join(terms[:MAX_QUERY_TERMS]))  # at the cap: fine
    with pytest.raises(InvalidQueryError, match="the limit is 1024"):
        sample_engine.search(" ".join(terms), 10)
    with pytest.raises(InvalidQueryError, match="the limit is 3"):
        sample_engine.search(" ".join(terms[:4]), 10, max_terms=3)
    assert sample_engine.search(" ".join([terms[0]] * 5000), 10) is not None  # repeats count once


def test_the_deadline_covers_snippets(sample_engine: Engine, monkeypatch: pytest.MonkeyPatch) -> None:
    # The Python snippets (without the C kernel): matching 1,024 short terms in 100 chunks is
    # the slowest part of this search. The C snippets' own deadline checks are tested in
    # test_snippet_native.py (they finish this search well within the limit).
    import drsearch.index.native as native

    # (a search in one call makes them in C)
    with Engine.open(sample_engine.path, options=EngineOptions(search_in_one_call=False)) as e:
        monkeypatch.setattr(native, "available", lambda: False)  # (the engine was opened with it)
        query = " ".join(short_terms(e, MAX_QUERY_TERMS))
        t = time.monotonic()
        with pytest.raises(QueryTimeoutError):
            e.search(query, 100, deadline=time.monotonic() + 0.05)
        assert time.monotonic() - t < 0.5
        with pytest.raises(QueryTimeoutError):
            e.search("game", 10, deadline=time.monotonic() - 1)


def test_random_bit_flips_raise_only_drsearch_errors(sample_index: Path, tmp_path: Path) -> None:
    """A flipped bit anywhere in the file: refused at open, or answered (a damaged read is a
    CorruptIndexError), never an unhandled zlib/UnicodeDecode/apsw error."""
    import random

    from drsearch.contract import DrsearchError

    rng = random.Random(20261201)
    original = sample_index.read_bytes()
    with Engine.open(sample_index) as e:
        docids = [d for (d,) in e._conn.execute("SELECT docid FROM documents ORDER BY id")]
    queries = [QUERY, "climate policy", "the of and", "boundary layer flow 1950s", "game"]
    outcomes: dict[str, int] = {}
    for i in range(60):
        data = bytearray(original)
        pos = rng.randrange(100, len(data))  # past the SQLite header: that is the fast check's job
        data[pos] ^= 1 << rng.randrange(8)
        damaged = tmp_path / f"flip-{i}.sqlite3"
        damaged.write_bytes(bytes(data))
        try:
            engine = Engine.open(damaged)
        except DrsearchError:
            outcomes["refused at open"] = outcomes.get("refused at open", 0) + 1
            continue
        with engine:
            calls: list[tuple[str, str]] = [("search", q) for q in queries] + [("open", d) for d in docids]
            for kind, arg in calls:
                try:
                    if kind == "search":
                        engine.search(arg, 50)
                    else:
                        engine.open_document(docid=arg)
                except CorruptIndexError:
                    outcomes["corrupt_index"] = outcomes.get("corrupt_index", 0) + 1
                except DrsearchError as err:  # e.g. a damaged docid no longer found
                    outcomes[err.error_type] = outcomes.get(err.error_type, 0) + 1
        damaged.unlink()
    assert outcomes.get("corrupt_index", 0) > 0, outcomes  # the flips did reach what is read
