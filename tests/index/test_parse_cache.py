"""Engine.parse keeps the queries it parsed (``_parsed``, by their raw text): a kept parse is
the index's own (another index, another tokenizer, a rebuilt file never gets one made for
another), the distinct-term cap still applies per call, a blocklist still hides what it
hides, and threads sharing the dict (started over when full) get the answers one thread gets."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from drsearch.contract import InvalidQueryError
from drsearch.index import BlockList, BuildSettings, Engine, parse_query
from drsearch.index import engine as engine_module
from drsearch.index.build import build
from drsearch.index.engine import EngineOptions

DOCS = [{"docid": f"d{i}", "url": f"https://example.com/{i}", "title": f"t{i}",
         "text": f"{'running runners ran' if i % 2 else 'swimming swimmers'} quietly {i} "
                 f"{'zebra' if i == 3 else 'horse'}"}
        for i in range(8)]


def _index(path: Path, tokenizer: str, docs: list[dict[str, str]] = DOCS) -> Path:
    build(docs, path, BuildSettings(tokenizer=tokenizer))
    return path


def test_a_kept_parse_is_the_indexs_own_and_a_rebuilt_file_parses_anew(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite3"
    q = "Running swimmers"
    for tokenizer in ("porter", "unicode61", "porter"):  # the same path, rebuilt each time
        path.unlink(missing_ok=True)
        _index(path, tokenizer)
        with Engine.open(path) as e:
            fresh = parse_query(q, e.tokenizer)
            for _ in range(2):  # parsed, then kept
                assert e.parse(q) == fresh
                got = e.rank(q, 10)
                assert got == e.fts5_rank(q, 10)[:len(got)] and got
            assert q in e._parsed
            terms = [t.term for t in e.parse(q).terms]
            assert terms == (["run", "swimmer"] if tokenizer == "porter" else ["running", "swimmers"])


def test_the_term_cap_applies_to_a_kept_parse_and_errors_are_not_kept(sample_index: Path) -> None:
    with Engine.open(sample_index) as e:
        q = "alpha beta gamma"
        assert len(e.parse(q).terms) == 3
        with pytest.raises(InvalidQueryError) as kept:
            e.parse(q, max_terms=2)
        e._parsed.clear()
        with pytest.raises(InvalidQueryError) as fresh:
            e.parse(q, max_terms=2)
        assert str(kept.value) == str(fresh.value)
        assert len(e.parse(q).terms) == 3  # the cap was the call's, not the kept parse's
        for bad in ("   ", "x" * 100_000):
            with pytest.raises(InvalidQueryError):
                e.parse(bad)
            assert bad not in e._parsed
        with pytest.raises(InvalidQueryError):
            e.parse(["not", "a", "string"])  # type: ignore[arg-type]  (refused, not hashed)


def test_a_blocklist_hides_a_term_whatever_was_parsed_before_with_any_options(tmp_path: Path) -> None:
    path = _index(tmp_path / "b.sqlite3", "porter")
    blocked = tmp_path / "blocked.txt"
    blocked.write_text("d3\n")  # the only document with "zebra"
    for options in (EngineOptions(), EngineOptions(hide_blocked_only_terms=False),
                    EngineOptions(search_in_one_call=False, paged_list_bytes=0)):
        with Engine.open(path, options=options) as open_e, \
                Engine.open(path, blocklist=BlockList.from_file(blocked), options=options) as hid:
            for _ in range(2):  # parsed, then kept: the same answers
                assert [h.docid for h in open_e.search("zebra", 5, with_text=False).hits] == ["d3"]
                assert hid.search("zebra", 5, with_text=False).hits == []
                assert "d3" not in {h.docid for h in hid.search("zebra horse", 10, with_text=False).hits}
                assert [h.docid for h in open_e.search("zebra", 5).hits] == ["d3"]
                assert hid.search("zebra", 5).hits == []


def test_threads_share_the_kept_parses_and_get_one_threads_answers(sample_index: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(engine_module, "_PARSED_MAX", 8)  # started over again and again
    queries = ["climate change", "football transfer", "election results", "new phone", "video game",
               "the weather", "music festival", "stock market", "space launch", "climate"] * 3
    with Engine.open(sample_index) as e:
        want = {q: e.search(q, 10, with_text=False) for q in queries}
        e._parsed.clear()
        bad: list[str] = []

        def work(seed: int) -> None:
            for i in range(200):
                q = queries[(i * 7 + seed) % len(queries)]
                if e.search(q, 10, with_text=False) != want[q] or e.parse(q) != parse_query(q, e._tokenizer()):
                    bad.append(q)

        threads = [threading.Thread(target=work, args=(s,)) for s in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not bad
        assert len(e._parsed) <= 8


def test_a_search_result_made_by_its_slots_is_the_dataclasss(sample_index: Path) -> None:
    """The one-call path's SearchResult (made without its dataclass __init__): the same type,
    equal, hashing alike as the dataclass makes it, and still frozen."""
    import dataclasses

    from drsearch.contract.models import SearchResult

    with Engine.open(sample_index) as e:
        for with_text in (False, True):
            got = e.search("climate change", 5, with_text=with_text)
            assert type(got) is SearchResult and got.hits
            assert got == SearchResult("climate change", 5, got.hits)
            assert dataclasses.astuple(got) == ("climate change", 5, [tuple(h) for h in got.hits])
            with pytest.raises(dataclasses.FrozenInstanceError):
                got.k = 3  # type: ignore[misc]
