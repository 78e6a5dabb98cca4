"""benchmarks/corpus_gen.py's web vocabulary (the benchmark's default corpus): the sample's
text with a tail of types fitted to real text (benchmarks/vocab_fit.py), so that the corpus's
FTS5 vocabulary grows as Heaps' law says real web text does."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import apsw
import corpus_gen as cg
import numpy as np
import pytest
import vocab_fit

from drsearch.index import build, read_jsonl
from drsearch.index.text import Tokenizer


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _docs(path: Path) -> list[dict[str, str]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _vocabulary(index: Path) -> set[str]:
    """The index's FTS5 terms (its own fts5vocab table)."""
    with apsw.Connection(str(index)) as db:
        tables = [r[0] for r in db.execute(
            "SELECT name FROM sqlite_master WHERE sql LIKE '%USING fts5%'")]
        assert tables, "no FTS5 table"
        db.execute(f"CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, {tables[0]}, row)")
        return {r[0] for r in db.execute("SELECT term FROM temp.v")}


def test_the_committed_fit_is_what_the_real_text_gives() -> None:
    """vocab_fit.json is measured, not written by hand: a fresh fit gives its bytes."""
    assert vocab_fit.dumps(vocab_fit.fit()) == vocab_fit.FIT_FILE.read_text(encoding="utf-8")


def test_the_fit_predicts_about_a_million_types_at_dr256_scale() -> None:
    model = vocab_fit.load_fit()["model"]
    ref = model["reference"]
    assert 5e5 < ref["heaps_types"] < 2e6  # web text of 163M words: order 10^6 (Heaps)
    assert model["tail_s"] == pytest.approx(1 / model["heaps_beta"], rel=1e-5)
    # the solved rate gives the Heaps prediction at 1x, and Heaps' growth at 4x
    expect = vocab_fit.expected_tail_types(model["rate"] * ref["content_words"], model["tail_q"],
                                           model["tail_s"], model["tail_types"])
    assert expect + model["backbone_types"] == pytest.approx(ref["heaps_types"], rel=1e-3)
    expect4 = vocab_fit.expected_tail_types(4 * model["rate"] * ref["content_words"],
                                            model["tail_q"], model["tail_s"], model["tail_types"])
    assert expect4 / expect == pytest.approx(4 ** model["heaps_beta"], rel=0.02)


def test_same_seed_same_bytes_another_seed_other_bytes(tmp_path: Path) -> None:
    a, meta_a = cg.ensure_corpus(25, 3, cache=tmp_path / "a", vocab=cg.WEB)
    b, meta_b = cg.ensure_corpus(25, 3, cache=tmp_path / "b", vocab=cg.WEB)
    assert _sha(a) == _sha(b) and meta_a == meta_b and meta_a["vocabulary"] == "web"
    qa = cg.ensure_web_queries(a, meta_a, 10, 3)[1]
    assert qa == cg.ensure_web_queries(b, meta_b, 10, 3)[1]
    c, _ = cg.ensure_corpus(25, 4, cache=tmp_path / "c", vocab=cg.WEB)
    assert _sha(c) != _sha(a)


def test_web_is_the_sample_text_with_content_words_replaced(tmp_path: Path) -> None:
    synth, meta_s = cg.ensure_corpus(30, 2, cache=tmp_path, vocab=cg.NORMAL)
    web, meta_w = cg.ensure_corpus(30, 2, cache=tmp_path, vocab=cg.WEB)
    assert (meta_s["chunks"], meta_s["words"]) == (meta_w["chunks"], meta_w["words"])
    replaced = content = 0
    for ds, dw in zip(_docs(synth), _docs(web), strict=True):
        ws, ww = ds["text"].split(), dw["text"].split()
        assert len(ws) == len(ww)  # the same words and chunks, some of them replaced
        for x, y in zip(ws, ww, strict=True):
            if x != y:
                # the letters of a content word gave way; its punctuation stayed
                core = cg._CORE.fullmatch(x)
                assert core and len(core.group(1)) > 3, (x, y)
                assert x[:core.start(1)] + x[core.end(1):] == \
                    y[:core.start(1)] + y[len(y) - (len(x) - core.end(1)):], (x, y)
                replaced += 1
    for d in _docs(synth):
        content += sum(1 for w in d["text"].split() if (m := cg._CORE.fullmatch(w))
                       and len(m.group(1)) > 3 and m.group(1).lower() not in cg._STOP)
    assert replaced == meta_w["tail_tokens"]
    assert abs(replaced / content - meta_w["tail_rate"]) < 0.01


def test_every_tail_type_is_one_new_fts5_term_and_the_count_is_the_models(tmp_path: Path) -> None:
    synth, _ = cg.ensure_corpus(40, 1, cache=tmp_path, vocab=cg.NORMAL)
    web, meta = cg.ensure_corpus(40, 1, cache=tmp_path, vocab=cg.WEB)
    build(read_jsonl(synth), tmp_path / "s.sqlite3")
    build(read_jsonl(web), tmp_path / "w.sqlite3")
    vs, vw = _vocabulary(tmp_path / "s.sqlite3"), _vocabulary(tmp_path / "w.sqlite3")
    stats = np.load(web.with_name(web.name.removesuffix(".jsonl") + ".web.npz"))
    model = cg.WebModel.load()
    tail = {t.lower() for t in model.tokens(stats["ranks"])}
    assert len(tail) == len(stats["ranks"]) == meta["tail_types"]  # distinct ranks, terms
    assert tail <= vw and not tail & vs  # each one a term, none a word of the sample
    assert vw - tail <= vs  # nothing else is new
    assert len(vw) == len(vw & vs) + meta["tail_types"]
    # the sampler gives the model's expected number of types (a few % at this size)
    assert meta["tail_types"] == pytest.approx(meta["tail_types_expected"], rel=0.03)


@pytest.mark.parametrize("spec", ["porter unicode61", "unicode61"])
def test_tail_tokens_are_stable_under_the_tokenizers(spec: str) -> None:
    model = cg.WebModel.load()
    ranks = np.arange(1, 3_000_000, 997, dtype=np.int64)
    toks = model.tokens(ranks)
    terms = Tokenizer(apsw.Connection(":memory:"), spec).terms(" ".join(toks))
    assert terms == [t.lower() for t in toks]
    assert len(set(terms)) == len(terms)
    kinds = model.kind_of(ranks)
    shares = np.bincount(kinds, minlength=4) / len(kinds)
    for (name, want), got in zip(model.kinds, shares.tolist(), strict=True):
        assert abs(got - want) < 0.01, name


def test_the_sampler_follows_the_tail_cdf() -> None:
    model = cg.WebModel.load()
    ranks = model.draw(np.random.default_rng(5), 400_000)
    assert ranks.min() >= 1 and ranks.max() <= model.types
    for lo, hi in ((1, 10), (10, 1_000), (1_000, 100_000), (100_000, 10_000_000)):
        got = float(np.mean((ranks >= lo) & (ranks < hi)))
        want = float(vocab_fit.tail_cdf(np.array([hi - 0.5]), model.q, model.s, model.types)[0]
                     - vocab_fit.tail_cdf(np.array([lo - 0.5]), model.q, model.s, model.types)[0])
        assert abs(got - want) < 0.005 + 0.02 * want, (lo, got, want)


def test_web_queries_are_agent_shaped_and_their_tail_types_are_in_the_corpus(
        tmp_path: Path) -> None:
    path, meta = cg.ensure_corpus(40, 1, cache=tmp_path, vocab=cg.WEB)
    _, queries = cg.ensure_web_queries(path, meta, 30, 1)
    assert sorted(queries) == ["entity", "rare", "web"]
    stats = np.load(path.with_name(path.name.removesuffix(".jsonl") + ".web.npz"))
    model = cg.WebModel.load()
    count = {t: int(c) for t, c in zip(model.tokens(stats["ranks"]), stats["counts"].tolist(),
                                       strict=True)}
    text = " ".join(d["text"] for d in _docs(path))
    cap = max(1, int(meta["chunks"]) // cg.RARE_PER_CHUNKS)
    for q in queries["web"]:
        words = q.split()
        assert 2 <= len(words) <= 8, q
        tails = [w for w in words if w in count]
        assert 1 <= len(tails) <= 3 and all(w in text for w in tails), q
    assert any(any(w.isdigit() for w in q.split()) for q in queries["web"])
    for q in queries["entity"]:
        assert len(q.split()) == 3 and sum(w in count for w in q.split()) >= 1, q
    for q in queries["rare"]:
        assert 0 < count[q] <= cap, q


def test_normal_still_names_the_old_corpus_and_a_bad_name_is_refused(tmp_path: Path) -> None:
    assert cg.Vocabulary("normal") == cg.NORMAL and cg.NORMAL.tag == ""
    run = subprocess.run([sys.executable, str(cg.Path(cg.__file__)), "--vocabulary", "nope"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "web, synthetic15k, large" in run.stderr
    assert "Traceback" not in run.stderr


@pytest.mark.parametrize("vocab", [cg.WEB, cg.Vocabulary("large", 20_000)])
def test_short_query_classes_are_seeded_and_shaped(tmp_path: Path, vocab: cg.Vocabulary) -> None:
    """single (one word: frequent, mid, rare in turn) and pair-rare (a word + a rare name):
    the same seed gives the same queries, another seed others; the rare words occur."""
    path, meta = cg.ensure_corpus(40, 1, cache=tmp_path, vocab=vocab)
    qpath, queries = cg.ensure_short_queries(path, meta, 30, 1)
    assert list(queries) == ["single", "pair-rare"] and all(len(q) == 30 for q in queries.values())
    qpath.unlink()  # made again from the seed: the same bytes
    again = cg.ensure_short_queries(path, meta, 30, 1)[1]
    assert again == queries
    assert cg.ensure_short_queries(path, meta, 30, 2)[1] != queries
    text = " ".join(d["text"] for d in _docs(path)).lower()
    assert all(len(q.split()) == 1 and q.lower() in text for q in queries["single"])
    assert all(len(q.split()) == 2 for q in queries["pair-rare"])
    # the frequent third's words are among the sample's most common content words
    sources = cg.load_sources()
    maker = cg._QueryMaker(sources, np.random.default_rng(0))
    counts = cg.Counter(w for words in maker.content for w in words)
    top = {w for w, _ in counts.most_common(cg.FREQUENT_TYPES)}
    singles = queries["single"]
    assert all(singles[i] in top for i in range(0, 30, 3))
    assert sum(singles[i] in top for i in range(1, 30, 3)) <= 2  # mid: from outside (fallback aside)
    assert all(counts[singles[i]] == 0 for i in range(2, 30, 3))  # rare types: not sample words
