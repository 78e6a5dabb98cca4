"""corpus layer (see docs/DESIGN.md): documents from elsewhere, handed to the index build.

Public API::

    inspect_source(path)                      -> SourceInfo (tables, columns, row counts)
    import_corpus(source, out, mapping)       -> BuildReport (SQLite table or JSONL)
    read_sqlite_documents(path, mapping)      -> documents of one SQLite table

    fetch_urls(urls.txt, crawl_dir, settings)  -> run summary   (async httpx, robots.txt, resumable)
    extract_crawl(crawl_dir, docs.jsonl)       -> extract report (trafilatura → selectolax, process pool)
    build_corpus(docs.jsonl, corpus.sqlite3)   -> CorpusBuild   (canonical URLs, dedup, index, reports)
    build_from_urls(urls.txt, corpus.sqlite3)  -> UrlBuild      (the three above in one call)

Pure batch functions for distributed builds: ``extract_batch`` (records → PageText),
``check_document`` / ``deduplicate`` (lines → unique documents), ``fetch_counts``,
``coverage_summary`` / ``source_summary`` / ``coverage_problems`` (counts → reports).
fetch needs the ``agents`` extra (httpx) and extract the ``extract`` extra (trafilatura,
selectolax); both are imported only when used.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_getattr
from .build_run import COVERAGE_FILE, SOURCES_FILE, CorpusBuild, build_corpus
from .crawl import FetchRecord, read_records
from .dedup import check_document, deduplicate
from .docids import content_key, stable_docid
from .extract import ExtractSettings, PageText, extract_batch, extract_page
from .extract_run import extract_crawl, fetch_counts
from .importer import (
    ChunkMapping,
    ColumnInfo,
    ColumnMapping,
    SourceInfo,
    TableInfo,
    detect_format,
    import_corpus,
    inspect_source,
    quote_identifier,
    read_sqlite_documents,
)
from .reports import coverage_problems, coverage_summary, source_summary
from .urllist import parse_url_lines, read_url_list

if TYPE_CHECKING:
    from .fetch import FetchSettings, fetch_urls
    from .pipeline import UrlBuild, build_from_urls


# fetch and pipeline import httpx (an optional extra): loaded on first use only.
_LAZY = {"FetchSettings": "fetch", "fetch_urls": "fetch", "UrlBuild": "pipeline",
         "build_from_urls": "pipeline"}
__getattr__ = lazy_getattr(__name__, _LAZY, globals())


__all__ = [
    "COVERAGE_FILE",
    "SOURCES_FILE",
    "ChunkMapping",
    "ColumnInfo",
    "ColumnMapping",
    "CorpusBuild",
    "ExtractSettings",
    "FetchRecord",
    "FetchSettings",
    "PageText",
    "SourceInfo",
    "TableInfo",
    "UrlBuild",
    "build_corpus",
    "build_from_urls",
    "check_document",
    "content_key",
    "coverage_problems",
    "coverage_summary",
    "deduplicate",
    "detect_format",
    "extract_batch",
    "extract_crawl",
    "extract_page",
    "fetch_counts",
    "fetch_urls",
    "import_corpus",
    "inspect_source",
    "parse_url_lines",
    "quote_identifier",
    "read_records",
    "read_sqlite_documents",
    "read_url_list",
    "source_summary",
    "stable_docid",
]
