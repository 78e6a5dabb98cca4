"""The three Searchers are interchangeable; the replay cache's modes and misses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from drsearch.agents import (
    CachedSearcher,
    EngineSearcher,
    HttpSearcher,
    ReplayCache,
    ReplayMissError,
    Searcher,
)
from drsearch.index import BlockList, Engine

from .conftest import BLOCKED

CALLS = [("search", ("bubonic plague quarantine", 5)), ("search", ("   ", 5)), ("search", ("x", 0)),
         ("open", {"docid": "d-f3540546157e417e", "url": None, "offset": 100, "length": 300}),
         ("open", {"docid": "no-such-doc", "url": None, "offset": 0, "length": None})]


def answers(s: Searcher) -> list[tuple[bool, bytes]]:
    out = []
    for tool, args in CALLS:
        r = s.search(*args) if tool == "search" else s.open(**args)  # type: ignore[arg-type]
        out.append((r.ok, r.body))
    return out


@pytest.fixture()
def engine(sample_index: Path) -> Iterator[Engine]:
    with Engine.open(sample_index, BlockList.from_file(BLOCKED)) as e:
        yield e


def test_engine_and_http_searchers_agree(engine: Engine, search_server: str) -> None:
    http = HttpSearcher.connect(search_server)
    try:
        local, remote = EngineSearcher(engine), http
        assert local.corpus() == remote.corpus()
        a, b = answers(local), answers(remote)
        assert [ok for ok, _ in a] == [True, False, False, True, False]
        assert a[0] == b[0] and a[3] == b[3] and a[4] == b[4]  # same bytes; 422 messages may differ
        assert isinstance(local, Searcher) and isinstance(remote, Searcher)
    finally:
        http.close()


def test_record_then_replay_offline(engine: Engine, tmp_path: Path) -> None:
    live = EngineSearcher(engine)
    rec = ReplayCache(tmp_path / "c.sqlite3", "record")
    recorded = answers(CachedSearcher(rec, live))
    rec.close()
    replay = ReplayCache(tmp_path / "c.sqlite3", "replay")
    offline = CachedSearcher(replay, None, live.corpus())
    assert answers(offline) == recorded == answers(live)
    assert replay.stats() == {"tool": {"hits": 5, "misses": 0, "stored": 0}}
    with pytest.raises(ReplayMissError, match=r'search\(\{"k":3,"query":"never asked"\}\)'):
        offline.search("never asked", 3)


def test_keys_include_corpus_identity_and_blocklist(engine: Engine, sample_index: Path, tmp_path: Path) -> None:
    cache = ReplayCache(tmp_path / "c.sqlite3", "record")
    CachedSearcher(cache, EngineSearcher(engine)).search("plague", 3)
    cache.close()
    replay = ReplayCache(tmp_path / "c.sqlite3", "replay")
    with Engine.open(sample_index) as unblocked, pytest.raises(ReplayMissError):  # another blocklist
        CachedSearcher(replay, None, EngineSearcher(unblocked).corpus()).search("plague", 3)


def test_replay_then_live_records_misses(engine: Engine, tmp_path: Path) -> None:
    cache = ReplayCache(tmp_path / "c.sqlite3", "replay-then-live")
    s = CachedSearcher(cache, EngineSearcher(engine))
    first, second = s.search("plague", 2), s.search("plague", 2)
    assert first == second
    assert cache.stats() == {"tool": {"hits": 1, "misses": 1, "stored": 1}}


def test_replay_needs_an_existing_cache(tmp_path: Path) -> None:
    with pytest.raises(ReplayMissError, match="no replay cache"):
        ReplayCache(tmp_path / "missing.sqlite3", "replay")
