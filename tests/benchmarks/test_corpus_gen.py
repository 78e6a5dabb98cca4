"""benchmarks/corpus_gen.py's large vocabulary: rare entity names injected, deterministic,
Zipf-distributed over the requested types, and queries whose names are in the corpus."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from pathlib import Path

import apsw
import corpus_gen as cg
import numpy as np
import pytest

from drsearch.index import Engine, build, read_jsonl
from drsearch.index.text import Tokenizer

SMALL = cg.Vocabulary("large", types=5_000, rate=0.05)


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _docs(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_same_seed_gives_the_same_bytes_and_another_seed_does_not(tmp_path: Path) -> None:
    a, meta_a = cg.ensure_corpus(30, 3, cache=tmp_path / "a", vocab=SMALL)
    b, meta_b = cg.ensure_corpus(30, 3, cache=tmp_path / "b", vocab=SMALL)
    assert _sha(a) == _sha(b) and meta_a == meta_b
    sa, sb = (np.load(p.with_name(p.name.removesuffix(".jsonl") + ".entities.npz")) for p in (a, b))
    for key in ("counts", "first_doc", "source_of_doc"):
        assert np.array_equal(sa[key], sb[key])
    qa = cg.ensure_entity_queries(a, meta_a, 12, 3)[1]
    qb = cg.ensure_entity_queries(b, meta_b, 12, 3)[1]
    assert qa == qb
    c, _ = cg.ensure_corpus(30, 4, cache=tmp_path / "c", vocab=SMALL)
    assert _sha(c) != _sha(a)
    # cached: a second call reads the files back instead of generating
    again, meta_again = cg.ensure_corpus(30, 3, cache=tmp_path / "a", vocab=SMALL)
    assert again == a and meta_again == meta_a


# sha256 of the 20-document large corpus (seed 1, 5,000 types, rate 0.05) from this sample.
PINNED = ("9d8aafd0d2c8", "191100ac2d8696bf2bebb7303fb9848cacca7c3ed1dd8705872bd71498b86bf1")


def test_the_bytes_are_pinned_so_a_cached_corpus_is_never_stale(tmp_path: Path) -> None:
    """Cache file names carry ENTITY_VERSION, not a hash of the output: a generator change
    that moves one byte must bump ENTITY_VERSION (and then this digest)."""
    if cg._sample_digest() != PINNED[0]:
        pytest.skip("another sample file: the pinned digest is for data/sample as vendored")
    path, _ = cg.ensure_corpus(20, 1, cache=tmp_path, vocab=SMALL)
    assert _sha(path) == PINNED[1], "the large corpus changed: bump ENTITY_VERSION"


def test_large_is_the_normal_corpus_with_some_words_replaced_by_names(tmp_path: Path) -> None:
    normal, meta_n = cg.ensure_corpus(30, 2, cache=tmp_path, vocab=cg.NORMAL)
    large, meta_l = cg.ensure_corpus(30, 2, cache=tmp_path, vocab=SMALL)
    assert normal != large and meta_n["vocabulary"] == "synthetic15k"
    assert meta_l["vocabulary"] == "large"
    assert meta_n["chunks"] == meta_l["chunks"] and meta_n["words"] == meta_l["words"]
    replaced = total = 0
    for dn, dl in zip(_docs(normal), _docs(large), strict=True):
        assert (dn["docid"], dn["title"], dn["url"]) == (dl["docid"], dl["title"], dl["url"])
        wn, wl = dn["text"].split(), dl["text"].split()
        assert len(wn) == len(wl)  # so the chunks are the same ones
        for x, y in zip(wn, wl, strict=True):
            if x != y:
                assert cg.NAME_RE.fullmatch(y), (x, y)
                replaced += 1
        total += len(wn)
    assert replaced == meta_l["entity_tokens"]
    assert abs(replaced / total - SMALL.rate) < 0.005


def test_names_are_zipf_distributed_over_the_requested_types(tmp_path: Path) -> None:
    vocab = cg.Vocabulary("large", types=2_000, rate=0.2)
    path, meta = cg.ensure_corpus(30, 5, cache=tmp_path, vocab=vocab)
    counts = Counter(cg.entity_rank(m) for d in _docs(path) for m in cg.NAME_RE.findall(d["text"]))
    stats = np.load(path.with_name(path.name.removesuffix(".jsonl") + ".entities.npz"))
    # the recorded counts are the text's own, over exactly the requested types
    assert max(counts) < vocab.types and len(stats["counts"]) == vocab.types
    assert dict(counts) == {r: int(c) for r, c in enumerate(stats["counts"].tolist()) if c}
    assert meta["entity_types_present"] == len(counts)
    n = sum(counts.values())
    assert n == meta["entity_tokens"]
    # Zipf, s = 1: log(count) falls by one per unit of log(rank) over the well-sampled head
    ranks = np.arange(100)
    freq = np.array([counts[r] for r in ranks.tolist()], dtype=float)
    slope = np.polyfit(np.log(ranks + 1), np.log(freq), 1)[0]
    assert -1.15 < slope < -0.85, slope
    harmonic = float((1.0 / np.arange(1, vocab.types + 1)).sum())
    assert abs(freq[0] / (n / harmonic) - 1.0) < 0.1


def test_the_sampler_spreads_two_million_types_by_decade_as_zipf_does() -> None:
    ranks = cg.zipf_draw(cg.zipf_cdf(2_000_000), np.random.default_rng(7), 1_000_000)
    assert ranks.min() >= 0 and ranks.max() < 2_000_000
    assert ranks.max() > 1_900_000  # the tail is reached
    harmonic = float((1.0 / np.arange(1, 2_000_001)).sum())
    for lo in (1, 10, 100, 1_000, 10_000, 100_000):  # Zipf puts ~ln(10)/H in every decade
        got = float(np.mean((ranks >= lo - 1) & (ranks < 10 * lo - 1)))
        want = float((1.0 / np.arange(lo, 10 * lo)).sum()) / harmonic
        assert abs(got / want - 1.0) < 0.03, (lo, got, want)


def test_entity_and_rare_queries_use_names_that_are_in_the_corpus(tmp_path: Path) -> None:
    path, meta = cg.ensure_corpus(20, 6, cache=tmp_path, vocab=SMALL)
    _, queries = cg.ensure_entity_queries(path, meta, 16, 6)
    assert sorted(queries) == ["entity", "rare"] and all(len(v) == 16 for v in queries.values())
    in_text = Counter(m for d in _docs(path) for m in cg.NAME_RE.findall(d["text"]))
    cap = max(1, int(meta["chunks"]) // cg.RARE_PER_CHUNKS)
    for i, q in enumerate(queries["entity"]):
        names = [w for w in q.split() if cg.NAME_RE.fullmatch(w)]
        assert len(names) == 1 + i % 2 and len(q.split()) == len(names) + 2, q
        assert all(0 < in_text[n] <= cap for n in names), q
    for q in queries["rare"]:
        assert cg.NAME_RE.fullmatch(q) and 0 < in_text[q] <= cap
    # and the engine finds them: every rare query's best hit contains its name
    index = tmp_path / "large.sqlite3"
    build(read_jsonl(path), index)
    with Engine.open(index) as e:
        for q in queries["rare"]:
            hits = e.search(q, 10).hits
            assert hits and re.search(rf"\b{q}\b", hits[0].chunk_text), q


@pytest.mark.parametrize("spec", ["porter unicode61", "unicode61"])
def test_every_name_is_one_term_of_its_own(spec: str) -> None:
    ranks = np.arange(0, 2_000_000, 211)
    names = cg.entity_names(ranks)
    terms = Tokenizer(apsw.Connection(":memory:"), spec).terms(" ".join(names))
    assert terms == [n.lower() for n in names]  # the Porter stemmer leaves them as they are
    assert len(set(names)) == len(names)
    assert [cg.entity_rank(n) for n in names] == ranks.tolist()


def test_a_word_that_is_not_an_injected_name_is_refused() -> None:
    with pytest.raises(ValueError, match="not an injected entity name"):
        cg.entity_rank("Colorado")


def test_a_sample_word_shaped_like_a_name_stops_generation() -> None:
    sources = cg.load_sources()
    cg.check_no_name_collisions(sources)  # the vendored sample has none
    bad = cg.Source("x", "https://example.org/x", "t", ("met Bakuziroto there",))
    with pytest.raises(SystemExit, match="Bakuziroto"):
        cg.check_no_name_collisions([*sources, bad])


@pytest.mark.parametrize("argv", [["--entity-rate", "1.5"], ["--entity-types", "0"],
                                  ["--entity-queries", "0"], ["--vocabulary", "huge"]])
def test_bad_options_are_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        cg.main(["--docs", "5", *argv])
    assert exc.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_passages_are_search_r1_shaped_deterministic_and_build_one_chunk_each(tmp_path: Path) -> None:
    a, meta = cg.ensure_passages(500, 3, cache=tmp_path / "a")
    b, _ = cg.ensure_passages(500, 3, cache=tmp_path / "b")
    assert _sha(a) == _sha(b) and meta["passages"] == 500
    rows = _docs(a)
    assert [r["id"] for r in rows] == [str(i) for i in range(500)]
    assert all(set(r) == {"id", "contents"} for r in rows)
    title, _, text = rows[0]["contents"].partition("\n")
    assert title.startswith('"') and title.endswith('"') and len(text.split()) == cg.PASSAGE_WORDS
    lengths = [len(r["contents"].partition("\n")[2].split()) for r in rows]
    assert max(lengths) == cg.PASSAGE_WORDS and sum(lengths) / len(lengths) > 90
    out = tmp_path / "p.sqlite3"
    report = build(read_jsonl(a), out)
    assert (report.documents, report.chunks) == (500, 500)
    with Engine.open(out) as engine:
        assert engine.passages


def test_passages_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cg, "CACHE", tmp_path)
    with pytest.raises(SystemExit) as e:
        cg.main(["--passages", "0"])
    assert e.value.code == 2
    capsys.readouterr()
    assert cg.main(["--passages", "50", "--seed", "2"]) == 0
    path = Path(capsys.readouterr().out.split()[1])
    assert path.parent == tmp_path and len(_docs(path)) == 50
