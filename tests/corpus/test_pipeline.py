"""``drsearch corpus build --urls``: fetch → extract → build in one command, end to end against
the local crawl server (crawlserver.py; no test reaches the internet)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from drsearch.contract import BuildError, InvalidInputError
from drsearch.corpus import COVERAGE_FILE, SOURCES_FILE, build_from_urls, coverage_problems, read_records
from drsearch.corpus.extract import ExtractSettings
from drsearch.corpus.fetch import FetchSettings
from drsearch.corpus.pipeline import DOCS_FILE, default_crawl_dir
from drsearch.index import Engine
from drsearch.tools.cli import main

from .conftest import SETTINGS, Crawled, write_url_list
from .crawlserver import CrawlServer


@pytest.fixture(scope="module")
def own_server() -> Iterator[CrawlServer]:
    """A server of its own, so that its request log does not disturb test_fetch's checks."""
    with CrawlServer() as server:
        yield server


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def test_one_shot_equals_the_three_stages_and_resumes(own_server: CrawlServer, crawled: Crawled,
                                                      tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    write_url_list(urls, own_server)
    out = tmp_path / "out" / "corpus.sqlite3"
    out.parent.mkdir()
    run = build_from_urls(urls, out, fetch_settings=SETTINGS, extract_settings=ExtractSettings(workers=2),
                          transport=own_server.transport())
    crawl = default_crawl_dir(out)
    assert run.crawl == crawl == tmp_path / "out" / "corpus.sqlite3.crawl" and run.docs == crawl / DOCS_FILE
    assert (crawl / "fetches.jsonl").exists() and (crawl / "docs.report.json").exists()
    # the same reports as fetch, extract and build run one by one (conftest's `crawled`)
    cov, src = _json(out.parent / COVERAGE_FILE), _json(out.parent / SOURCES_FILE)
    two_step = _json(crawled.corpus.parent / COVERAGE_FILE)
    assert coverage_problems(cov, src) == []
    assert cov == run.build.coverage
    # every count the same; the content identity differs only through the documents' fetched_at
    assert {k: v for k, v in cov.items() if k != "content_identity"} == \
        {k: v for k, v in two_step.items() if k != "content_identity"}
    assert cov["url_records"] == run.fetch["urls"] and run.fetch["malformed_url_lines"] == 5
    with Engine.open(out) as engine:
        assert engine.open_document(url="https://mirror.test/copy").url
    # a rerun resumes the crawl: only the transient failures are fetched again
    records = len(read_records(crawl).records)
    with pytest.raises(BuildError, match="already exists"):
        build_from_urls(urls, out, fetch_settings=SETTINGS, transport=own_server.transport())
    assert len(read_records(crawl).records) == records  # refused before fetching anything
    again = build_from_urls(urls, out, fetch_settings=SETTINGS, extract_settings=ExtractSettings(workers=1),
                            transport=own_server.transport(), overwrite=True)
    assert again.fetch["run"]["attempted"] == 3 and again.fetch["already_fetched"] == again.fetch["urls"] - 3
    assert _json(out.parent / COVERAGE_FILE) == {**cov, "superseded_records": 3}  # the 3 retried
    assert again.build.report.content_identity == run.build.report.content_identity


def test_crawl_dir_can_be_given_and_missing_out_dir_fetches_nothing(own_server: CrawlServer,
                                                                    tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("https://robots.test/public/a\nhttps://robots.test/private/b\nhttps://redirect.test/old\n")
    with pytest.raises(InvalidInputError, match="does not exist"):
        build_from_urls(urls, tmp_path / "nope" / "c.sqlite3", transport=own_server.transport())
    assert not (tmp_path / "nope").exists()
    out = tmp_path / "c.sqlite3"
    run = build_from_urls(urls, out, tmp_path / "my-crawl", fetch_settings=SETTINGS,
                          extract_settings=ExtractSettings(workers=1), transport=own_server.transport())
    assert run.crawl == tmp_path / "my-crawl" and not default_crawl_dir(out).exists()
    c = run.build.coverage
    assert (c["url_records"], c["fetched_ok"], c["robots_disallowed"], c["documents"]) == (3, 2, 1, 2)
    assert _json(tmp_path / COVERAGE_FILE) == c


def test_cli_one_shot_end_to_end(own_server: CrawlServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The CLI has no transport option: route its client to the local server."""
    from drsearch.corpus import fetch

    real_client = fetch._client

    def local_client(settings: FetchSettings, transport: httpx.AsyncBaseTransport | None) -> httpx.AsyncClient:
        return real_client(settings, transport or own_server.transport())

    monkeypatch.setattr(fetch, "_client", local_client)
    urls = tmp_path / "urls.txt"
    pages = sorted(own_server.site.pages)[:4]
    urls.write_text("\n".join([*pages, "not a url", "https://robots.test/private/b"]) + "\n")
    out = io.StringIO()
    corpus = tmp_path / "corpus.sqlite3"
    argv = ["corpus", "build", "--urls", str(urls), "--out", str(corpus), "--quiet", "--timeout", "5",
            "--workers", "1"]
    assert main(argv, out) == 0
    text = out.getvalue()
    assert "asked for 5 URLs" in text and "4 ok" in text and "1 disallowed by robots.txt" in text
    assert "extracted 4 documents" in text and "built " in text and "4 documents" in text
    assert "urls.txt:5: " in capsys.readouterr().err  # the malformed line, with its number
    assert _json(tmp_path / COVERAGE_FILE)["url_records"] == 5
    assert main(argv, io.StringIO()) == 1  # the corpus exists now (BuildError, as for DOCS.jsonl)
    assert "already exists" in capsys.readouterr().err
    again = io.StringIO()
    assert main([*argv, "--force"], again) == 0  # resumed: nothing left to fetch
    assert "asked for 0 URLs" in again.getvalue() and "5 already fetched" in again.getvalue()


@pytest.mark.parametrize(("argv", "message"), [
    (["corpus", "build", "--out", "c.sqlite3"], "needs DOCS.jsonl or --urls"),
    (["corpus", "build", "docs.jsonl", "--urls", "u.txt", "--out", "c.sqlite3"], "not both"),
    (["corpus", "build", "docs.jsonl", "--out", "c.sqlite3", "--crawl-dir", "x"], "--crawl-dir only with --urls"),
    (["corpus", "build", "docs.jsonl", "--out", "c.sqlite3", "--concurrency", "3", "--ignore-robots"],
     "--concurrency, --ignore-robots only with --urls"),
    (["corpus", "build", "--urls", "missing.txt", "--out", "c.sqlite3"], "cannot read URL list"),
])
def test_cli_build_argument_errors_are_one_line_exit_2(argv: list[str], message: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(argv, io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err
    assert not (tmp_path / "c.sqlite3.crawl").exists() and not (tmp_path / "c.sqlite3").exists()


def test_cli_build_where_every_fetch_fails_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """An offline machine (here: a closed port on 127.0.0.1): the one line says that every fetch
    failed and why, not only that no valid document was found; the summary counts attempts."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "u.txt").write_text("".join(f"http://127.0.0.1:9/page{i}\n" for i in range(3)))
    argv = ["corpus", "build", "--urls", "u.txt", "--out", "c.sqlite3", "--retries", "0", "--timeout", "2",
            "--quiet"]
    assert main(argv, io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert "no valid document" in err and "no page was fetched: of 3 URLs asked for, 0 failed and 3 were " \
        "not fetched under robots.txt (robots_unavailable: 3)" in err, err
    summary = _json(tmp_path / "c.sqlite3.crawl" / "fetch_summary.json")
    assert summary["run"]["attempted"] == 3 and summary["run"]["ok"] == 0 and "fetched" not in summary["run"]
    assert not (tmp_path / "c.sqlite3").exists()
    # robots.txt ignored: the pages themselves are what fails
    assert main([*argv, "--ignore-robots", "--crawl-dir", "crawl2"], io.StringIO()) == 2
    err = capsys.readouterr().err
    assert "no page was fetched: of 3 URLs asked for, 3 failed and 0 were not fetched" in err, err
