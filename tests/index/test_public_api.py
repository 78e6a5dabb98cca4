"""The public surface of each layer changes only on purpose."""

from __future__ import annotations

import drsearch.index

EXPECTED_INDEX_API = {
    "CorpusInfo", "Searcher", "ToolResponse", "error_body", "TokenizerPreset", "IDENTITY_HEADER", "fleet_identity",
    "gil_poll_ns",  # the kernel's poll for the GIL (docs/ENGINE.md, "Threads")
    # the request contract (drsearch.index.contract)
    "DEFAULT_K", "DEFAULT_LIMITS", "DEFAULT_TIME_LIMIT_S", "MAX_JSON_INT", "MAX_MESSAGE_CHARS", "OPEN_TOOL",
    "SEARCH_TOOL", "Limits", "OpenRequest", "SearchRequest", "canonical_bytes", "canonical_json", "check_query",
    "hit_passage", "json_integer", "DEFAULT_MAX_BATCH_QUERIES", "RetrieveRequest", "parse_retrieve", "number_from_text", "open_parameters", "parse_open", "parse_search",
    "search_parameters", "strict_parameters", "tool_arguments",
    "CHUNK_STRIDE", "CHUNK_WORDS", "MAX_K", "MAX_QUERY_CHARS", "MAX_QUERY_TERMS", "MAX_RUN_K", "BlockList", "BlocklistError",
    "BuildError", "BuildReport", "BuildSettings", "ChunkSpan", "CorpusFileError", "CorruptIndexError", "DirectoryBusyError", "Document",
    "DocumentNotFoundError", "DrsearchError", "Engine", "Hit", "IncompatibleIndexError",
    "InvalidDocumentError", "InvalidInputError", "InvalidKError", "InvalidQueryError",
    "InvalidRequestError", "NotADatabaseError", "ParsedQuery", "QueryTimeoutError", "SearchResult",
    "build", "canonicalize_url", "check_k", "chunk_spans", "chunk_words", "parse_query",
    "read_jsonl", "split_words", "SourcedDoc", "SourceChunk",
    # integrity checks (drsearch.index.integrity, release validation)
    "SQLiteHeader", "fts5_integrity_check", "header_problems", "missing_docids", "quick_check",
    "read_sqlite_header", "sha256_file",
}


def test_index_exports() -> None:
    assert set(drsearch.index.__all__) == EXPECTED_INDEX_API
    for name in drsearch.index.__all__:
        assert getattr(drsearch.index, name) is not None


def test_every_error_maps_to_an_exit_code_and_http_status() -> None:
    for name in drsearch.index.__all__:
        obj = getattr(drsearch.index, name)
        if isinstance(obj, type) and issubclass(obj, drsearch.index.DrsearchError):
            assert obj.exit_code in (1, 2)
            assert 400 <= obj.http_status < 600
            assert obj.__doc__ or obj.error_type
