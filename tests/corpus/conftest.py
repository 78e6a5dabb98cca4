"""Fixtures for the fetch → extract → build tests: one local crawl server and one crawl of it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from drsearch.corpus import ExtractSettings, FetchSettings, build_corpus, extract_crawl, fetch_urls

from .crawlserver import MAX_BYTES, CrawlServer

MALFORMED = ["not a url", "ftp://files.test/x", "https://", "http://bad host/x", "https://x.test:99999/"]
SETTINGS = FetchSettings(concurrency=8, per_host=2, timeout_s=0.8, retries=1, backoff_s=0.05,
                         max_retry_after_s=5, max_bytes=MAX_BYTES, max_redirects=3)


@dataclass
class Crawled:
    server: CrawlServer
    url_file: Path
    crawl: Path
    summary: dict[str, Any]
    seconds: float
    docs: Path
    extract: dict[str, Any]
    corpus: Path
    build: Any


def write_url_list(path: Path, server: CrawlServer) -> list[str]:
    urls = sorted(server.site.pages) + server.site.special_urls
    lines = ["# the 181 sample pages, then the special cases", *urls[:100], "", *MALFORMED[:2], *urls[100:],
             urls[0], *MALFORMED[2:]]
    path.write_text("\n".join(lines) + "\n")
    return urls


@pytest.fixture(scope="session")
def crawl_server() -> Iterator[CrawlServer]:
    with CrawlServer() as server:
        yield server


@pytest.fixture(scope="session")
def crawled(crawl_server: CrawlServer, tmp_path_factory: pytest.TempPathFactory) -> Crawled:
    root = tmp_path_factory.mktemp("crawl")
    url_file = root / "urls.txt"
    write_url_list(url_file, crawl_server)
    t0 = time.monotonic()
    summary = fetch_urls(url_file, root / "crawl", SETTINGS, transport=crawl_server.transport())
    seconds = time.monotonic() - t0
    docs = root / "docs.jsonl"
    extract = extract_crawl(root / "crawl", docs, ExtractSettings(workers=2))
    corpus = root / "out" / "corpus.sqlite3"
    corpus.parent.mkdir()
    build = build_corpus(docs, corpus)
    return Crawled(crawl_server, url_file, root / "crawl", summary, seconds, docs, extract, corpus, build)
