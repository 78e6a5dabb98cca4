"""The public surface of each layer changes only on purpose."""

from __future__ import annotations

import drsearch.contract
import drsearch.index

EXPECTED_INDEX_API = {
    "TokenizerPreset", "gil_poll_ns",  # the kernel's poll for the GIL (docs/ENGINE.md, "Threads")
    "CHUNK_STRIDE", "CHUNK_WORDS", "BlockList", "BuildReport", "BuildSettings", "ChunkSpan", "Engine",
    "ParsedQuery", "build", "canonicalize_url", "chunk_spans", "chunk_words", "parse_query",
    "read_jsonl", "split_words", "SourcedDoc", "SourceChunk",
    "EngineOptions",  # the routes an engine takes (tests and probes compare them)
    # the release rule (docs/SERVER.md) and the file hash run.json records
    "Release", "ReleasePolicy", "locate", "policy_for", "release_holding", "cached_sha256",
    # integrity checks (drsearch.index.integrity, release validation)
    "SQLiteHeader", "document_problems", "fts5_integrity_check", "header_problems", "missing_docids", "posting_problems", "quick_check",
    "read_sqlite_header", "sha256_file",
}

# The floor every layer speaks (docs/DESIGN.md, "Layers"): errors, the request contract, the
# result models, the Retriever and Searcher protocols, atomic writes.
EXPECTED_CONTRACT_API = {
    "CorpusInfo", "Searcher", "ToolResponse", "IDENTITY_HEADER", "fleet_identity", "Retriever", "BlocklistInfo",
    "DEFAULT_K", "DEFAULT_LIMITS", "DEFAULT_TIME_LIMIT_S", "MAX_JSON_INT", "MAX_MESSAGE_CHARS", "OPEN_TOOL",
    "SEARCH_TOOL", "Limits", "OpenRequest", "SearchRequest", "canonical_bytes", "canonical_json", "check_query",
    "hit_passage", "json_integer", "DEFAULT_MAX_BATCH_QUERIES", "RetrieveRequest", "parse_retrieve",
    "number_from_text", "open_parameters", "parse_open", "parse_search", "error_body", "check_k",
    "search_parameters", "strict_parameters", "tool_arguments", "MAX_K", "MAX_QUERY_CHARS", "MAX_QUERY_TERMS",
    "MAX_RUN_K", "BlocklistError", "BuildError", "CorpusFileError", "CorruptIndexError", "DirectoryBusyError",
    "Document",
    "DocumentNotFoundError", "DrsearchError", "Hit", "IncompatibleIndexError",
    "InvalidDocumentError", "InvalidInputError", "InvalidKError", "InvalidQueryError",
    "InvalidRequestError", "NotADatabaseError", "QueryTimeoutError", "SearchResult",
    "UpstreamUnavailableError",
    "atomic_output", "write_bytes_atomic", "write_json_atomic",
    "BlocklistOrigin", "ReleaseInfo", "OPEN_FIELDS", "RETRIEVE_FIELDS", "SEARCH_FIELDS", "UnknownFields",
    "check_http_url", "error_of", "too_many_terms", "read_json_object", "json_object_lines",
    # one writer per output directory
    "DirLock", "LOCK_NAME", "entries", "holder_pid", "is_locked", "lock_dir", "pid_alive",
}


def test_the_contract_exports_each_module_s_names_once() -> None:
    from drsearch.contract import atomic, dirlock, errors, jsonfile, models, request, retriever, searcher

    modules = (atomic, dirlock, errors, jsonfile, models, request, retriever, searcher)
    assert sorted(drsearch.contract.__all__) == sorted(n for m in modules for n in m.__all__)
    assert len(set(drsearch.contract.__all__)) == len(drsearch.contract.__all__)


def test_index_exports() -> None:
    assert set(drsearch.index.__all__) == EXPECTED_INDEX_API
    for name in drsearch.index.__all__:
        assert getattr(drsearch.index, name) is not None


def test_contract_exports() -> None:
    assert set(drsearch.contract.__all__) == EXPECTED_CONTRACT_API
    for name in drsearch.contract.__all__:
        assert getattr(drsearch.contract, name) is not None


def test_the_engine_is_a_retriever(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from drsearch.index import Engine, build

    build([{"docid": "d1", "url": "https://example.com/1", "title": "t", "text": "alpha beta"}],
          tmp_path / "c.sqlite3")
    with Engine.open(tmp_path / "c.sqlite3") as engine:
        assert isinstance(engine, drsearch.contract.Retriever)
        assert isinstance(engine.blocklist, drsearch.contract.BlocklistInfo)


def test_every_error_maps_to_an_exit_code_and_http_status() -> None:
    for name in drsearch.contract.__all__:
        obj = getattr(drsearch.contract, name)
        if isinstance(obj, type) and issubclass(obj, drsearch.contract.DrsearchError):
            assert obj.exit_code in (1, 2)
            assert 400 <= obj.http_status < 600
            assert obj.__doc__ or obj.error_type
