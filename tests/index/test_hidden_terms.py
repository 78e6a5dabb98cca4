"""Terms that only blocked documents hold are looked up as unknown words:
the same lookup, the same miss, nothing of their postings read; and every ranking and score
is bit for bit what the term itself gives (its postings touch no visible chunk)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import apsw
import pytest

from drsearch.index import BlockList, Engine, build
from drsearch.index.blobs import MappedRows
from drsearch.index.engine import EngineOptions
from drsearch.index.native import NATIVE_AVAILABLE

from ..helpers import blocklist_of, cranfield_queries

NEEDS_C = pytest.mark.skipif(not NATIVE_AVAILABLE, reason="drsearch.index._kernels not built")
SCORERS = [pytest.param(m, marks=NEEDS_C) for m in ("auto", "maxscore", "blocks")] + ["numpy"]
PRUNING = {"auto": "auto", "maxscore": "always", "blocks": "never", "numpy": "auto"}
# Every 35th Cranfield abstract (40 of 1,400) is blocked.
BLOCKED = blocklist_of(*(f"cran-{n}" for n in range(7, 1401, 35)))


@pytest.fixture(scope="module", params=SCORERS)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def open_engine(path: Path, mode: str, blocklist: BlockList | None = BLOCKED, *, hide: bool = True) -> Engine:
    return Engine.open(path, blocklist, native=mode != "numpy", pruning=PRUNING[mode],  # type: ignore[arg-type]
                       options=EngineOptions(hide_blocked_only_terms=hide))


def fts5_blocked_only(path: Path, tmp: Path, blocklist: BlockList) -> set[str]:
    """The oracle, from FTS5's own index (fts5vocab over a copy of the file): the terms whose
    every chunk belongs to a blocked document."""
    copy = tmp / "vocab.sqlite3"
    shutil.copyfile(path, copy)
    conn = apsw.Connection(str(copy))
    conn.execute("CREATE VIRTUAL TABLE temp.vocab USING fts5vocab(main, 'chunks_fts', 'instance')")
    blocked = {r[0] for r in conn.execute(
        "SELECT c.id FROM chunks AS c JOIN documents AS d ON d.id = c.doc "
        "WHERE d.docid IN (SELECT value FROM json_each(?))", (str(sorted(blocklist.docids)).replace("'", '"'),))}
    chunks: dict[str, set[int]] = {}
    for term, chunk in conn.execute("SELECT term, doc FROM temp.vocab"):
        chunks.setdefault(term, set()).add(chunk)
    conn.close()
    return {t for t, cs in chunks.items() if cs <= blocked}


@pytest.fixture(scope="module")
def hidden(cran_small_chunks: Path, tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    terms = fts5_blocked_only(cran_small_chunks, tmp_path_factory.mktemp("vocab"), BLOCKED)
    assert len(terms) > 20
    return sorted(terms)


def test_the_blocked_only_terms_are_those_fts5_finds_in_blocked_chunks_only(
        cran_small_chunks: Path, hidden: list[str], mode: str) -> None:
    with open_engine(cran_small_chunks, mode) as e:
        assert sorted(e._hidden_terms) == hidden
        # each is looked up under a key that no row of the file holds
        keys = list(e._hidden_terms.values())
        assert not e._conn.execute("SELECT count(*) FROM terms WHERE term IN "
                                   "(SELECT value FROM json_each(?))", (str(keys).replace("'", '"'),)).get
    with open_engine(cran_small_chunks, mode, None) as e:
        assert e._hidden_terms == {}


def test_a_blocked_only_term_is_looked_up_as_an_unknown_word(
        cran_small_chunks: Path, hidden: list[str], mode: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """No posting list of it is read, found or kept: the term comes back None, as an unknown
    word's does, and its own name is never a key the engine looks up."""
    looked_up: list[str] = []
    find = MappedRows.find

    def spy(self: MappedRows, keys: list[str]) -> object:
        looked_up.extend(keys)
        return find(self, keys)

    monkeypatch.setattr(MappedRows, "find", spy)
    with open_engine(cran_small_chunks, mode) as e:
        e.inline_postings = 0  # every list by the path that reads it on its own (none may be)
        seen: list[object] = []
        look_up = e._look_up

        def spy_look_up(todo: list[str], *args: object) -> None:
            seen.extend(todo)
            look_up(todo, *args)  # type: ignore[arg-type]

        e._look_up = spy_look_up  # type: ignore[method-assign]
        deadline = time.monotonic() + 10
        for term in hidden[:25]:
            for _ in range(2):  # the second time too: nothing of it was kept
                assert e._postings(e.parse(term), deadline) == [None], term
            assert e.search(term, 10).hits == []
            assert term not in e._kept_terms
        assert e._postings(e.parse("qqqzzzxxx"), deadline) == [None]
        assert not set(hidden) & (set(seen) | set(looked_up))
        # with a visible word beside it, only the visible word is found
        got = e._postings(e.parse(f"{hidden[0]} wing"), deadline)
        assert got[0] is None and got[1] is not None and got[1].term == "wing"


def _queries(hidden: list[str]) -> list[str]:
    visible = cranfield_queries()[:12]
    return ([f"{hidden[i]} {q}" for i, q in enumerate(visible)]
            + [f"{q} {hidden[i]} {hidden[-i - 1]}" for i, q in enumerate(visible)]
            + [" ".join(hidden[:5]), hidden[3], f"the of {hidden[7]} flow", f"{hidden[9]} the"])


@pytest.mark.parametrize("k", [1, 10, 100])
def test_rankings_and_scores_are_bit_identical_with_and_without_the_lookup_as_unknown(
        cran_small_chunks: Path, hidden: list[str], mode: str, k: int) -> None:
    """The ranking (chunks, scores: floats compared exactly), the hits' documents, scores and
    texts: those of the term itself, looked up and ranked (snippets: the next test)."""
    with open_engine(cran_small_chunks, mode) as e, open_engine(cran_small_chunks, mode, hide=False) as named:
        assert sum(len(e.rank(q, k)) for q in _queries(hidden)) > 20 * min(k, 10)
        for q in _queries(hidden):
            ranked, hits = e.rank(q, k), e.search(q, k).hits
            assert named.rank(q, k) == ranked, q
            assert [h[:7] for h in named.search(q, k).hits] == [h[:7] for h in hits], q


def test_a_query_with_a_blocked_only_term_answers_as_with_an_unknown_word(
        cran_small_chunks: Path, hidden: list[str], mode: str) -> None:
    """Hits, texts and snippets too: the same answer as the query with the term replaced by a
    word of its length that no document holds."""
    with open_engine(cran_small_chunks, mode) as e:
        for q in _queries(hidden):
            unknown = " ".join("q" * len(w) + "zx" if w in hidden else w for w in q.split())
            assert e.search(q, 10).hits == e.search(unknown, 10).hits, q


# A clamped term (in half the chunks or more) that only blocked documents hold: its tf array,
# not a posting list, says so.
DENSE_DOCS = [{"docid": f"d{i}", "url": f"https://example.com/{i}", "title": f"Doc {i}",
               "text": ("quokka marsupial island " if i < 4 else "kangaroo marsupial desert ") * (i + 1)}
              for i in range(6)]


def test_a_clamped_term_that_only_blocked_documents_hold_is_hidden_too(tmp_path: Path, mode: str) -> None:
    path = tmp_path / "dense.sqlite3"
    build(DENSE_DOCS, path)
    blocked = blocklist_of("d0", "d1", "d2", "d3")
    with open_engine(path, mode, blocked) as e, open_engine(path, mode, blocked, hide=False) as named:
        assert e._conn.execute("SELECT dense FROM terms WHERE term = 'quokka'").get == 1
        assert set(e._hidden_terms) == {"quokka", "island"}
        assert e._postings(e.parse("quokka"), time.monotonic() + 10) == [None]
        for q in ("quokka", "quokka marsupial", "kangaroo quokka island", "marsupial island"):
            ranked, hits = e.rank(q, 10), e.search(q, 10).hits
            assert named.rank(q, 10) == ranked, q
            assert [h[:7] for h in named.search(q, 10).hits] == [h[:7] for h in hits], q
            assert {h.docid for h in hits} <= {"d4", "d5"}
