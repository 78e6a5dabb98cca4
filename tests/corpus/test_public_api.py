"""The corpus layer's public surface changes only on purpose."""

from __future__ import annotations

import drsearch.corpus

EXPECTED_CORPUS_API = {
    "ColumnInfo", "ColumnMapping", "SourceInfo", "TableInfo", "detect_format", "import_corpus",
    "inspect_source", "quote_identifier", "read_sqlite_documents",
}


def test_corpus_exports() -> None:
    assert set(drsearch.corpus.__all__) == EXPECTED_CORPUS_API
    for name in drsearch.corpus.__all__:
        assert getattr(drsearch.corpus, name).__doc__


def test_quote_identifier_doubles_quotes() -> None:
    assert drsearch.corpus.quote_identifier('a "b"') == '"a ""b"""'
