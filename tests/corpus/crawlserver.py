"""The loopback crawl server of the fetch tests: shipped as ``scripts/offline_recipe/crawl_site.py``
(the construction recipe's offline crawl runs on it too); re-exported here for the tests."""

from __future__ import annotations

from offline_recipe.crawl_site import (
    CRAWL,
    MAX_BYTES,
    SLOW_S,
    CrawlServer,
    LocalTransport,
    Reply,
    Site,
    _key,
    sample_pages,
)

__all__ = ["CRAWL", "MAX_BYTES", "SLOW_S", "CrawlServer", "LocalTransport", "Reply", "Site", "_key", "sample_pages"]
