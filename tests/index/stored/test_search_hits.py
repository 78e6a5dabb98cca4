"""A complete search made in one kernel call (``_kernels.search_hits``: the ranking, the chunk
texts and snippets, the snippet plan and the hits; ``Engine._search_hits``) against the same
search made call by call (``EngineOptions(search_in_one_call=False)``): the same results, hit for
hit, on real web pages and Cranfield, lists in the pages and in memory, every pruning choice,
blocklists, k 1 to 100; the snippet plan made in C against SnippetMaker's; and the outcomes that
are not hits: a deadline, a term of another kind, a snippet left to the Python code, a refused
argument."""

from __future__ import annotations

import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from drsearch.contract import QueryTimeoutError
from drsearch.contract.models import Hit
from drsearch.index import BlockList, BuildSettings, Engine
from drsearch.index.build import build
from drsearch.index.engine import EngineOptions
from drsearch.index.native import native_kernels
from drsearch.index.scoring import IDF_FLOOR, DenseTerm
from drsearch.index.snippet import SnippetMaker

from ...helpers import cranfield_queries

kernels = native_kernels()
pytestmark = pytest.mark.skipif(kernels is None, reason="C kernel not built")


def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """What search_hits handed back, by kind (what the equality tests must have covered)."""
    assert kernels is not None
    seen: dict[str, int] = {}
    real = kernels.search_hits

    def spy(*args: Any) -> Any:
        got = real(*args)
        kind = type(got).__name__ if got not in (None, False, NotImplemented) else repr(got)
        seen[kind] = seen.get(kind, 0) + 1
        if len(args) > 6 and args[6] is not None and kind == "list":  # with `rescore`: beside clamped terms
            seen["rescored"] = seen.get("rescored", 0) + 1
        if args[2] is None and kind == "list":  # a ranked search (no texts)
            one = len(args[1]) == 1 and args[1][0].df <= args[8]
            seen["ranked_one" if one else "ranked"] = seen.get("ranked_one" if one else "ranked", 0) + 1
        return got

    monkeypatch.setattr(kernels, "search_hits", spy)
    return seen


def _queries(e: Engine, n: int, seed: int) -> list[str]:
    """Random queries of 1 to 8 words of the index's own chunks (rare and common words, and
    now and then a word no chunk holds), deterministic."""
    rng = random.Random(seed)
    rows = e._db().execute("SELECT text FROM chunks ORDER BY id LIMIT 400").fetchall()
    words = sorted({w for (text,) in rows for w in text.split() if w.isalpha()})
    out = []
    for _ in range(n):
        q = rng.sample(words, rng.randint(1, 8))
        if rng.random() < 0.1:
            q.append("zzqxnotaword")
        out.append(" ".join(q))
    return out


BY_CALLS = EngineOptions(search_in_one_call=False)


def _both(e: Engine, by_calls: Engine, q: str, k: int) -> None:
    """``e`` (the one call) and ``by_calls`` (the same file and settings, search_in_one_call off)
    give the same result."""
    assert e.options.search_in_one_call and not by_calls.options.search_in_one_call
    for with_text in (True, False):
        want = by_calls.search(q, k, with_text=with_text)
        got = e.search(q, k, with_text=with_text)
        assert got == want, (q, k, with_text)
        # hits made in C are what Hit(...) makes: the same type, equal and hashing alike
        assert all(type(h) is Hit and hash(h) == hash(Hit(*h)) for h in got.hits)


@pytest.mark.parametrize("which", ["sample", "cran", "cran_small"])
def test_one_call_gives_the_hits_of_the_calls_one_by_one(which: str, sample_index: Path, cran_index: Path,
                                                        cran_small_chunks: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    path = {"sample": sample_index, "cran": cran_index, "cran_small": cran_small_chunks}[which]
    with Engine.open(path) as e:
        queries = _queries(e, 60, 7) + cranfield_queries()[:10] + ["video game streaming", "東京 Москва"]
        docids = sorted({h.docid for q in queries[:10] for h in e.search(q, 3, with_text=False).hits})
    blocked = tmp_path / "block.txt"
    blocked.write_text("".join(f"{d}\n" for d in docids[::2]))
    seen = _counting(monkeypatch)
    for blocklist, pruning in [(None, "auto"), (BlockList.from_file(blocked), "auto"), (None, "always"),
                               (BlockList.from_file(blocked), "never")]:
        for paged_list_bytes in (0, 1 << 62):
            # every long list in the pages, or every list a copy in memory (SparseTerm)
            one = EngineOptions(paged_list_bytes=paged_list_bytes)
            with Engine.open(path, blocklist=blocklist, pruning=pruning, options=one) as e, \
                    Engine.open(path, blocklist=blocklist, pruning=pruning,
                                options=replace(one, search_in_one_call=False)) as by_calls:
                for q in queries:
                    for k in (1, 10, 100):
                        _both(e, by_calls, q, k)
    assert seen.get("list", 0) >= 500, seen
    # ranked searches (no texts) in one call too: one short list by the one-term pass, in the
    # pages and in memory, and the others
    assert seen.get("ranked_one", 0) >= 50 and seen.get("ranked", 0) >= 200, seen
    # (the sample's few pages rank no query beside clamped terms by the rescoring)
    assert seen.get("rescored", 0) >= (0 if which == "sample" else 100), seen


def test_the_snippet_plan_in_c_is_snippetmakers(cran_index: Path) -> None:
    """search_hits plans the snippets' stems from (stem, weight) pairs as SnippetMaker does:
    weights at or below the IDF floor only when nothing is above it, empty stems left out, a
    stem once with its largest weight, longest first then by code points."""
    assert kernels is not None
    rng = random.Random(3)
    stems = ["flow", "flo", "pressur", "boundar", "layer", "", "a", "distribut", "wing", "wingx", "é"]
    with Engine.open(cran_index) as e:
        parsed = e.parse("pressure distribution boundary layer flow wing")
        terms = [t for t in e._postings(parsed, time.monotonic() + 60)
                 if t is not None and not isinstance(t, DenseTerm)]  # ("flow": in most chunks)
        assert len(terms) >= 4
        for _ in range(200):
            pairs = [(rng.choice(stems), rng.choice([IDF_FLOOR, IDF_FLOOR / 2, 0.5, 1.0, 2.5, rng.random()]))
                     for _ in range(rng.randint(0, 9))]
            got = kernels.search_hits(e._search_context(), terms, pairs, 10, 60.0, time.monotonic() + 60)
            assert type(got) is list and got
            maker = SnippetMaker.of_stems(pairs)
            assert [h.snippet for h in got] == maker.many([h.chunk_text for h in got], native=False), pairs


def test_a_snippet_the_kernel_leaves_is_made_in_python(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chunk with a capital sigma (its lower case depends on its neighbours): the kernel leaves
    its snippet to the Python code, which makes it in the hit (the same hits as call by call)."""
    filler = " ".join(f"word{i}" for i in range(120))
    # "boundary" in 4 of 12 documents, "layer" in 4 (neither clamped), the sigma in every other
    docs = [{"docid": f"d{i}", "url": f"https://example.com/{i}", "title": f"t{i}",
             "text": f"{filler} {'ΟΔΟΣ ' if i % 2 else ''}{'boundary ' if i < 4 else ''}"
                     f"{'layer ' if 2 <= i < 6 else ''}{i} {filler}"}
            for i in range(12)]
    path = tmp_path / "sigma.sqlite3"
    build(docs, path, BuildSettings(chunk_text="stored"))  # texts read from the pages
    seen = _counting(monkeypatch)
    with Engine.open(path) as e, Engine.open(path, options=BY_CALLS) as by_calls:
        for k in (1, 3, 10):
            _both(e, by_calls, "boundary layer", k)
        got = e.search("boundary layer", 10)
    assert seen.get("tuple", 0) >= 3, seen
    assert len(got.hits) == 6 and all("boundary" in h.snippet or "layer" in h.snippet for h in got.hits)
    assert any("ΟΔΟΣ" in h.chunk_text for h in got.hits)


def test_the_outcomes_that_are_not_hits(cran_index: Path) -> None:
    assert kernels is not None
    with Engine.open(cran_index) as e:
        parsed = e.parse("pressure distribution boundary layer")
        terms = [t for t in e._postings(parsed, time.monotonic() + 60) if t is not None]
        pairs = e._stem_pairs(parsed, terms)
        ctx = e._search_context()
        assert type(kernels.search_hits(ctx, terms, pairs, 10, 60.0, time.monotonic() + 60)) is list
        # a deadline long past: None (the engine's QueryTimeoutError)
        assert kernels.search_hits(ctx, terms, pairs, 10, 60.0, 1.0) is None
        with pytest.raises(QueryTimeoutError):
            e.search("pressure distribution boundary layer", 10, deadline=time.monotonic() - 1)
        # a clamped term: the other calls rank
        the = e._postings(e.parse("the"), time.monotonic() + 60)[0]
        assert isinstance(the, DenseTerm)
        assert kernels.search_hits(ctx, [*terms, the], pairs, 10, 60.0, time.monotonic() + 60) is NotImplemented
        with pytest.raises(TypeError):
            kernels.search_hits(list(ctx), terms, pairs, 10, 60.0, time.monotonic() + 60)
        with pytest.raises(TypeError):
            kernels.search_hits(ctx[:-1], terms, pairs, 10, 60.0, time.monotonic() + 60)
        with pytest.raises(TypeError, match="hit_type"):
            kernels.search_hits((*ctx[:17], object, *ctx[18:]), terms, pairs, 10, 60.0, time.monotonic() + 60)
        with pytest.raises(TypeError, match="hits is a tuple"):
            kernels.search_hits((*ctx[:16], ctx[16][:4], *ctx[17:]), terms, pairs, 10, 60.0, time.monotonic() + 60)
        for bad in (["pressur"], [("pressur",)], [(1, 2.0)], [("pressur", "x")], [("pressur", 1)]):
            with pytest.raises(TypeError):
                kernels.search_hits(ctx, terms, bad, 10, 60.0, time.monotonic() + 60)
        with pytest.raises(ValueError, match="no terms"):
            kernels.search_hits(ctx, [], [], 10, 60.0, time.monotonic() + 60)
        with pytest.raises(ValueError, match="k >= 1"):
            kernels.search_hits(ctx, terms, pairs, 0, 60.0, time.monotonic() + 60)


def test_a_ranked_search_in_one_call_and_its_refusals(cran_index: Path) -> None:
    """stems None (a ranked search): the hits without texts, a short list ranked by the
    one-term pass whether it lies in the pages or in memory; a list out of order refused."""
    assert kernels is not None
    with Engine.open(cran_index, options=EngineOptions(paged_list_bytes=0)) as e, \
            Engine.open(cran_index, options=BY_CALLS) as by_calls:
        ctx = e._search_context()
        dl = time.monotonic() + 60
        (term,) = e._postings(e.parse("pressure"), dl)
        assert type(term).__name__ == "PagedTerm" and 0 < term.df <= e.scorer.single_term_postings
        want = by_calls.search("pressure", 10, with_text=False).hits
        for one_list in (term.df, 0):  # the one-term pass, or the windowed kernel: the same
            got = kernels.search_hits(ctx, [term], None, 10, 60.0, dl, None, -1.0, one_list)
            assert got == want and all(h.chunk_text == "" and h.snippet == "" for h in got)
        arrays = term.read()
        assert kernels.search_hits(ctx, [arrays], None, 10, 60.0, dl, None, -1.0, term.df) == want
        # rowids out of order: refused in the one-term pass as in the windowed one
        bad = replace(arrays, chunks=arrays.chunks[::-1].copy(), impacts=arrays.impacts[::-1].copy())
        for one_list in (term.df, 0):
            with pytest.raises(ValueError, match="not ascending"):
                kernels.search_hits(ctx, [bad], None, 10, 60.0, dl, None, -1.0, one_list)
        # a clamped term: the other calls rank (its type is not a list's)
        the = e._postings(e.parse("the"), dl)[0]
        assert isinstance(the, DenseTerm)
        assert kernels.search_hits(ctx, [term, the], None, 10, 60.0, dl, None, -1.0, 10**6) is NotImplemented
