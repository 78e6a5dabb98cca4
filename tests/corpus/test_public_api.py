"""The corpus layer's public surface changes only on purpose."""

from __future__ import annotations

import drsearch.corpus

EXPECTED_CORPUS_API = {
    "ChunkMapping", "ColumnInfo", "ColumnMapping", "SourceInfo", "TableInfo", "detect_format", "import_corpus",
    "inspect_source", "quote_identifier", "read_sqlite_documents",
    # fetch → extract → build
    "COVERAGE_FILE", "SOURCES_FILE", "CorpusBuild", "ExtractSettings", "FetchRecord", "FetchSettings",
    "PageText", "build_corpus", "check_document", "content_key", "coverage_problems", "coverage_summary",
    "deduplicate", "extract_batch", "extract_crawl", "extract_page", "fetch_counts", "fetch_urls",
    "parse_url_lines", "read_records", "read_url_list", "source_summary", "stable_docid",
    # one-shot: URLs → corpus
    "UrlBuild", "build_from_urls",
}


def test_corpus_exports() -> None:
    assert set(drsearch.corpus.__all__) == EXPECTED_CORPUS_API
    for name in drsearch.corpus.__all__:
        value = getattr(drsearch.corpus, name)
        assert value.__doc__ or isinstance(value, str), name


def test_quote_identifier_doubles_quotes() -> None:
    assert drsearch.corpus.quote_identifier('a "b"') == '"a ""b"""'
