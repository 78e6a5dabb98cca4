"""The agent's tools: every response within the preset's size cap; long documents read in
pages that cover every character exactly once."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from drsearch.agents import DR256, EngineSearcher, Preset
from drsearch.agents.tools import execute, format_open
from drsearch.index import Engine

LONG = "d-2848b55a2a3917e3"  # the sample corpus's longest page: 53,372 characters
NEXT = re.compile(r"characters (\d+)-(\d+) of (\d+); (?:next page: open with offset=(\d+)|end of document)")


@pytest.fixture(scope="module")
def engine(sample_index: Path) -> Iterator[Engine]:
    with Engine.open(sample_index) as e:
        yield e


def read_all_pages(engine: Engine, preset: Preset) -> tuple[str, int]:
    """Follow the 'next page' offsets from 0 to the end; the text read and the page count."""
    searcher, offset, parts, pages = EngineSearcher(engine), 0, [], 0
    while True:
        text = execute("open", {"docid": LONG, "offset": offset}, searcher, preset).text
        assert len(text) <= preset.max_tool_response_chars
        m = NEXT.search(text)
        assert m is not None and int(m.group(1)) == offset, text[:300]
        parts.append(text.split("\n\n", 1)[1])
        assert len(parts[-1]) == int(m.group(2)) - offset
        pages += 1
        if m.group(4) is None:
            return "".join(parts), pages
        assert int(m.group(4)) == int(m.group(2)) > offset  # the next page starts where this one ended
        offset = int(m.group(4))


def test_a_long_document_is_read_in_pages_without_losing_text(engine: Engine) -> None:
    full = engine.open_document(docid=LONG).text
    assert len(full) > 6 * DR256.open_page_chars
    text, pages = read_all_pages(engine, DR256)
    assert text == full and pages == -(-len(full) // DR256.open_page_chars)


def test_pages_shrink_to_fit_a_tight_cap_and_still_cover_everything(engine: Engine) -> None:
    # a page as large as the cap: the header pushes it over, so each page gives up some text
    tight = DR256.model_copy(update={"max_tool_response_chars": 1000, "open_page_chars": 1000})
    full = engine.open_document(docid=LONG).text
    text, pages = read_all_pages(engine, tight)
    assert text == full and pages > len(full) // 1000


def test_search_responses_respect_the_cap(engine: Engine) -> None:
    searcher = EngineSearcher(engine)
    for cap in (500, 2_000, DR256.max_tool_response_chars):
        preset = DR256.model_copy(update={"max_tool_response_chars": cap, "open_page_chars": 200})
        result = execute("search", {"query": "video game streaming service history", "k": 20}, searcher, preset)
        assert result.response.ok and len(json.loads(result.response.body)["results"]) == 20
        assert len(result.text) <= cap
        assert result.text.startswith("20 result(s) for") and "[1] docid: " in result.text
    uncapped = execute("search", {"query": "video game streaming service history", "k": 20}, searcher,
                       DR256.model_copy(update={"max_tool_response_chars": 10**6}))
    assert len(uncapped.text) > DR256.max_tool_response_chars  # so the cap above did cut something


def test_a_huge_query_echo_is_capped_too(engine: Engine) -> None:
    result = execute("search", {"query": "plague " * 2000, "k": 5}, EngineSearcher(engine), DR256)
    assert len(result.text) <= DR256.max_tool_response_chars and result.text.endswith("…[truncated]")


def test_format_open_without_a_limit_is_the_whole_page() -> None:
    body = {"docid": "d", "title": "t", "url": "u", "text": "abc", "total_length": 10, "next_offset": 7}
    assert format_open(body, 4) == "docid: d\ntitle: t\nurl: u\ncharacters 4-7 of 10; next page: open with offset=7\n\nabc"
