"""fetch against a real HTTP server on 127.0.0.1 (crawlserver.py): politeness, robots.txt,
retries, limits, resumability. No test reaches the internet."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import httpx
import pytest

from drsearch.corpus import fetch_urls, read_records
from drsearch.corpus.crawl import RECORDS, read_body
from drsearch.corpus.fetch import USER_AGENT, FetchSettings, backoff_seconds
from drsearch.corpus.robots import RobotsCache

from .conftest import MALFORMED, SETTINGS, Crawled
from .crawlserver import CrawlServer


def _by_url(crawl: Path) -> dict[str, object]:
    return {r.url: r for r in read_records(crawl).records}


def test_sample_pages_are_fetched_byte_for_byte(crawled: Crawled) -> None:
    recs = _by_url(crawled.crawl)
    site = crawled.server.site
    ok = [u for u in site.pages if u != site.real_disallowed]
    for url in ok:
        rec = recs[url]
        assert rec.outcome == "ok", (url, rec)
        assert read_body(crawled.crawl, rec) == site.pages[url]
        assert rec.status == 200 and rec.bytes == len(site.pages[url]) and rec.robots == "allowed"
    assert site.user_agents == {USER_AGENT}


def test_malformed_and_duplicate_lines_are_reported_with_line_numbers_and_skipped(crawled: Crawled) -> None:
    s = crawled.summary
    assert s["malformed_url_lines"] == len(MALFORMED) and s["duplicate_url_lines"] == 1
    lines = crawled.url_file.read_text().splitlines()
    for problem in s["problems"]:
        n = int(problem.split(":")[1])
        assert lines[n - 1] in MALFORMED
    assert {int(p.split(":")[1]) for p in s["problems"]} == {i + 1 for i, x in enumerate(lines) if x in MALFORMED}
    assert s["completed"] is True


def test_robots_decision_is_made_per_path_not_cached_per_origin(crawled: Crawled) -> None:
    """DR-256 v1.0.2 applied the first robots decision of an origin to all its paths."""
    recs = _by_url(crawled.crawl)
    site = crawled.server.site
    assert recs[site.real_allowed].outcome == "ok"
    assert recs[site.real_disallowed].outcome == "disallowed"
    assert recs[site.real_disallowed].error == "robots_disallowed"
    assert recs["https://robots.test/public/a"].outcome == "ok"
    assert recs["https://robots.test/private/b"].outcome == "disallowed"
    assert ("robots.test", "/private/b") not in site.hits  # never requested
    assert len(site.hits[("robots.test", "/robots.txt")]) == 1  # rules cached per origin


@pytest.mark.parametrize("first", ["/public/a", "/private/b"])
def test_robots_cache_answers_each_path_in_either_order(crawl_server: CrawlServer, first: str) -> None:
    async def decide() -> dict[str, str | None]:
        async with httpx.AsyncClient(transport=crawl_server.transport()) as client:
            cache = RobotsCache(client, USER_AGENT)
            order = [first, *({"/public/a", "/private/b", "/public/c"} - {first})]
            out = {p: await cache.decision(f"https://robots.test{p}") for p in order}
            assert cache.fetches == 1
            return out

    assert asyncio.run(decide()) == {"/public/a": None, "/public/c": None, "/private/b": "robots_disallowed"}


def test_unavailable_robots_txt_disallows_and_is_retried_later(crawled: Crawled) -> None:
    rec = _by_url(crawled.crawl)["https://flaky-robots.test/page"]
    assert rec.outcome == "disallowed" and rec.error == "robots_unavailable"


def test_redirects_errors_retries_and_limits(crawled: Crawled) -> None:
    recs = _by_url(crawled.crawl)
    hits = crawled.server.site.hits
    moved = recs["https://redirect.test/old"]
    assert moved.outcome == "ok" and moved.final_url == "https://redirect.test/new"
    assert recs["https://redirect.test/loop"].error == "too_many_redirects"
    assert recs["https://errors.test/missing"].error == "http_404"
    assert len(hits[("errors.test", "/missing")]) == 1  # 404 is not retried
    down = recs["https://errors.test/down"]
    assert down.error == "http_503" and down.attempts == SETTINGS.retries + 1
    assert recs["https://errors.test/slow"].error == "timeout"
    assert recs["https://errors.test/slowish"].outcome == "ok"
    busy = recs["https://errors.test/busy"]
    assert busy.outcome == "ok" and busy.attempts == 2
    t = hits[("errors.test", "/busy")]
    assert t[1] - t[0] >= 0.95  # Retry-After: 1 honoured
    assert recs["https://files.test/huge.html"].error == "too_large"
    assert recs["https://files.test/huge-stream.html"].error == "too_large"
    assert recs["https://files.test/report.pdf"].outcome == "ok"


def test_rerun_skips_done_urls_and_retries_only_transient_failures(crawled: Crawled, tmp_path: Path) -> None:
    crawl = tmp_path / "crawl"
    shutil.copytree(crawled.crawl, crawl)
    before = (crawl / RECORDS).read_bytes()
    again = fetch_urls(crawled.url_file, crawl, SETTINGS, transport=crawled.server.transport())
    transient = {"https://errors.test/down", "https://errors.test/slow", "https://flaky-robots.test/page"}
    assert again["run"]["attempted"] == len(transient)
    assert again["already_fetched"] == again["urls"] - len(transient)
    assert (crawl / RECORDS).read_bytes().startswith(before)  # append-only: nothing lost
    assert len(read_records(crawl).records) == len(read_records(crawled.crawl).records)


def test_torn_last_line_is_fenced_off_and_reported(crawled: Crawled, tmp_path: Path) -> None:
    crawl = tmp_path / "crawl"
    shutil.copytree(crawled.crawl, crawl)
    n = len(read_records(crawl).records)
    with open(crawl / RECORDS, "ab") as fh:
        fh.write(b'{"url": "https://torn.test/x", "canon')  # a crash mid-append
    torn = read_records(crawl)
    assert len(torn.records) == n and "incomplete last line" in torn.problems[0]
    urls = tmp_path / "urls.txt"
    urls.write_text("https://robots.test/public/a\nhttps://redirect.test/new\n")
    fetch_urls(urls, crawl, SETTINGS, transport=crawled.server.transport())
    after = read_records(crawl)
    assert len(after.records) == n and len(after.problems) == 1 and "not valid JSON" in after.problems[0]


def test_interrupted_run_keeps_what_was_written(crawl_server: CrawlServer, tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("\n".join(sorted(crawl_server.site.pages)[:30]) + "\n")
    seen = []

    class Crash(Exception):
        pass

    def stop_after_five(rec: object) -> None:  # a crash in the middle of a run
        seen.append(rec)
        if len(seen) == 5:
            raise Crash

    with pytest.raises(Crash):
        fetch_urls(urls, tmp_path / "crawl", SETTINGS, transport=crawl_server.transport(), progress=stop_after_five)
    kept = read_records(tmp_path / "crawl")
    assert len(kept.records) >= 5 and not kept.problems
    assert json.loads((tmp_path / "crawl" / "fetch_summary.json").read_text())["completed"] is False
    done = fetch_urls(urls, tmp_path / "crawl", SETTINGS, transport=crawl_server.transport())
    assert done["already_fetched"] == len(kept.records) and len(read_records(tmp_path / "crawl").records) == 30


def test_retry_after_is_a_floor_under_the_backoff_and_capped() -> None:
    """The shared policy (drsearch.contract.retry): a server's Retry-After of 0 does not make
    the crawler retry sooner than its own backoff; a long one is capped at max_retry_after_s."""
    settings = FetchSettings(backoff_s=0.5, max_backoff_s=30, max_retry_after_s=5)
    assert 0.5 <= backoff_seconds(0, settings, "0") <= 0.625  # jitter: at most a quarter more
    assert backoff_seconds(0, settings, "3") == 3.0
    assert backoff_seconds(0, settings, "3600") == 5.0
    assert 0.5 <= backoff_seconds(0, settings, "soon") <= 0.625


def test_unwritable_crawl_dir_and_missing_url_list_are_clean_errors(tmp_path: Path) -> None:
    from drsearch.contract import InvalidInputError

    with pytest.raises(InvalidInputError, match="cannot read URL list"):
        fetch_urls(tmp_path / "nope.txt", tmp_path / "crawl", FetchSettings())
    (tmp_path / "file").write_text("")
    urls = tmp_path / "u.txt"
    urls.write_text("https://example.test/\n")
    with pytest.raises(InvalidInputError, match="cannot create crawl directory"):
        fetch_urls(urls, tmp_path / "file" / "crawl", FetchSettings())
