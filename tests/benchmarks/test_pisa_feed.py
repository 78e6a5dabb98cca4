"""benchmarks/search_bench.py's PISA anchor indexes exactly FTS5's tokens of every chunk, so its
BM25 scores are ours within float32 rounding.

A generated corpus of 250 documents (its own cache in pytest's tmp dir): it holds Korean,
Cyrillic and accented pages, whose terms PISA's plain-text tokenizer would drop or cut. Skipped
where pyterrier-pisa is not installed (the ``bench`` extra)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import corpus_gen
import numpy as np
import pytest
import search_bench as sb

DOCS = 250


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    pisa, why = sb.load_pisathon()
    if pisa is None:
        pytest.skip(why)
    work = tmp_path_factory.mktemp("pisa-feed")
    corpus, _ = corpus_gen.ensure_corpus(DOCS, 1, cache=work)
    _, queries = corpus_gen.ensure_queries(80, 1, cache=work)
    ours, pisa_dir = work / "ours.sqlite3", work / "pisa"
    common = {"corpus": str(corpus), "tokenizer": "porter"}
    sb.run_child("build-ours", {**common, "out": str(ours)})
    report = sb.run_child("build-pisa", {**common, "dir": str(pisa_dir), "index": str(ours),
                                         "threads": 2})
    return {"corpus": corpus, "ours": ours, "pisa": pisa_dir, "queries": queries,
            "report": report, "work": work}


def test_the_corpus_has_terms_that_pisas_own_tokenizer_would_cut(built: dict[str, Any]) -> None:
    """What makes the other tests able to fail: chunks whose FTS5 terms are not ASCII."""
    from drsearch.index import Engine

    with Engine.open(built["ours"]) as e:
        non_ascii = sum(any(not t.isascii() for t in e.tokenizer.terms(c.text))
                        for c in sb.iter_chunks(built["corpus"]))
    assert non_ascii >= 10, non_ascii


def test_fts5_chunk_sizes_are_the_token_counts_of_fts5s_tokenizer(built: dict[str, Any]) -> None:
    from drsearch.index import Engine

    sizes = sb.fts5_chunk_sizes(built["ours"])
    with Engine.open(built["ours"]) as e:
        counted = [len(e.tokenizer.terms(c.text)) for c in sb.iter_chunks(built["corpus"])]
    assert sizes[1:].tolist() == counted


def test_pisa_indexes_fts5s_token_count_of_every_chunk_under_its_rowid(
        built: dict[str, Any]) -> None:
    n = built["report"]["chunks"]
    raw = np.fromfile(built["pisa"] / "inv.sizes", dtype=np.uint32)
    docnos = (built["pisa"] / "fwd.documents").read_text().split()
    assert docnos == [str(i) for i in range(1, n + 1)]
    assert raw[0] == n
    pisa_sizes, fts5_sizes = raw[1:], sb.fts5_chunk_sizes(built["ours"])[1:]
    assert int((pisa_sizes != fts5_sizes).sum()) == 0, (pisa_sizes[:8], fts5_sizes[:8])
    assert built["report"]["sizes_equal_fts5"] == n  # the build child checked them all too


def test_pisas_top10_scores_are_ours_within_float32_rounding(built: dict[str, Any]) -> None:
    meta = sb.Meta(built["ours"])
    pa = sb.pisa_agreement(sb.Ours(built["ours"]),
                           sb.Pisa(built["pisa"], built["ours"], meta, "maxscore"),
                           built["queries"])
    assert pa["max_rel_score_diff"] <= sb.PISA_SCORE_RTOL, pa
    assert pa["differ"] == 0, pa
    assert pa["ordered"] + pa["near_ties"] == pa["queries"] == 80
    assert pa["ordered"] >= 78, pa
    assert "ordered documents equal on" in sb.pisa_agreement_line("normal", pa)


def test_a_pisa_size_that_is_not_fts5s_fails_loudly_naming_the_chunk(
        built: dict[str, Any]) -> None:
    bad = built["work"] / "pisa-bad"
    shutil.copytree(built["pisa"], bad)
    raw = np.fromfile(bad / "inv.sizes", dtype=np.uint32)
    raw[7] += 1  # chunk rowid 7 (entry 0 is the count)
    raw.tofile(bad / "inv.sizes")
    n, mismatches = sb.pisa_size_mismatches(bad, built["ours"])
    assert n == built["report"]["chunks"]
    assert [m[0] for m in mismatches] == [7]
    with pytest.raises(SystemExit, match=r"1 of \d+ chunks have another size, the first chunk 7"):
        sb.check_pisa_sizes(bad, built["ours"])


def test_a_pisa_index_without_the_term_codes_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="rebuild it"):
        sb.pisa_term_codes(tmp_path)


def test_codes_are_distinct_lower_case_ascii_words() -> None:
    codes = [sb.pisa_code(i) for i in range(26 * 27 + 5)]
    assert codes[:3] == ["a", "b", "c"] and codes[25:28] == ["z", "aa", "ab"]
    assert len(set(codes)) == len(codes)
    assert all(c.isascii() and c.isalpha() and c.islower() for c in codes)


class _Fixed:
    """An engine whose ranked lists are given per query (rows: docid, url, title, score,
    ordinal): pisa_agreement's classification on its own."""

    def __init__(self, lists: dict[str, list[tuple[str, float]]]) -> None:
        self.lists = lists

    def ranked(self, q: str, k: int, ties: bool = False) -> list[sb.Row]:
        return [(d, "", "", s, 0) for d, s in self.lists[q][:k]]


def test_agreement_tells_near_ties_from_real_differences() -> None:
    ours = _Fixed({"same": [("a", 3.0), ("b", 2.0)],
                   "swap": [("a", 3.0), ("b", 2.0000001), ("c", 2.0)],
                   "real": [("a", 3.0), ("b", 2.0)],
                   "short": [("a", 3.0), ("b", 2.0)]})
    pisa = _Fixed({"same": [("a", 3.0000004), ("b", 2.0)],
                   "swap": [("a", 3.0), ("c", 2.0000001), ("b", 2.0000001)],
                   "real": [("a", 3.0), ("c", 1.9)],
                   "short": [("a", 3.0)]})
    pa = sb.pisa_agreement(ours, pisa, ["same", "swap", "real", "short"])
    assert (pa["ordered"], pa["near_ties"], pa["differ"], pa["same_set"]) == (1, 1, 2, 2)
    assert pa["mismatches"] == ["real", "short"]
    assert pa["near_tie_swaps"] == [{"query": "swap", "ranks": [2, 3],
                                     "ours": [["b", 2.0000001], ["c", 2.0]],
                                     "pisa": [["c", 2.0000001], ["b", 2.0000001]]}]
    assert pa["max_rel_score_diff"] == pytest.approx(0.05)  # "real": 1.9 against 2.0


def test_with_ties_every_chunk_tied_at_the_kth_score_is_fetched(built: dict[str, Any]) -> None:
    """PISA's top-``limit`` heap may keep any of the chunks tied at its lowest score: here the
    highest rowids. ``ranked(ties=True)`` fetches on until the boundary is below the k-th
    document's score, then orders equal scores by rowid, as ours does."""
    meta = sb.Meta(built["ours"])
    first_chunk_of = {int(d): c for c, d in reversed(list(enumerate(meta.chunk_doc))) if d}
    tied = sorted(first_chunk_of.values())[:6]  # six chunks of six documents, equal scores
    calls: list[int] = []

    class Adversarial(sb.Pisa):
        def _retrieve(self, terms: dict[str, float], limit: int) -> tuple[np.ndarray, np.ndarray]:
            calls.append(limit)
            kept = sorted(tied, reverse=True)[:limit]
            return (np.array([str(c) for c in kept], dtype=object),
                    np.full(len(kept), 1.5, dtype=np.float32))

    pisa = Adversarial(built["pisa"], built["ours"], meta, "maxscore")
    q = built["queries"][0]
    assert [r[0] for r in pisa.ranked(q, 1, ties=True)] == [meta.docs[int(meta.chunk_doc[tied[0]])][0]]
    assert calls == [4, 16]
    calls.clear()
    assert [r[0] for r in pisa.ranked(q, 1)] != [meta.docs[int(meta.chunk_doc[tied[0]])][0]]
    assert calls == [4]  # the timed path fetches once
