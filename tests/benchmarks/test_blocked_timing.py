"""benchmarks/blocked_timing.py: the word pairs it times are what it says they are (a word only
blocked documents hold, a word that occurs nowhere, parsed alike), its statistics, and a
tiny in-process run end to end."""

from __future__ import annotations

import json
import random
import threading
from pathlib import Path

import blocked_timing as bt
import pytest

from drsearch.index import BlockList, Engine, build


@pytest.fixture(scope="module")
def picked(sample_index: Path) -> tuple[list[str], list[tuple[str, str]]]:
    blocked, _ = bt.pick(sample_index, 20, 1)
    docids = [d for d, _ in blocked]
    return docids, bt.pick_words(sample_index, docids, 30, 1)


def test_each_pair_is_a_blocked_only_word_and_a_word_that_occurs_nowhere(
        sample_index: Path, picked: tuple[list[str], list[tuple[str, str]]]) -> None:
    docids, pairs = picked
    assert len(pairs) == 30 and len({w for w, _ in pairs}) == 30
    blocklist = BlockList.from_bytes("".join(f"{d}\n" for d in docids).encode())
    with Engine.open(sample_index) as whole, Engine.open(sample_index, blocklist) as served:
        for word, fake in pairs:
            assert len(word) == len(fake) and word[3:] == fake[3:] and word != fake
            hits = whole.search(word, 100).hits
            assert hits and {h.docid for h in hits} <= set(docids), word
            assert served.search(word, 10).hits == [] and whole.search(fake, 10).hits == []
            assert len(whole.parse(word).terms) == len(whole.parse(fake).terms) == 1


def test_a_respelt_word_keeps_its_length_ending_and_vowel_pattern() -> None:
    rng = random.Random(3)
    for word in ("turbulence", "yacht", "aerofoil", "boundary"):
        fake = bt._respell(word, rng)
        assert len(fake) == len(word) and fake[3:] == word[3:]
        assert [c in "aeiou" for c in fake[:3]] == [c in "aeiou" for c in word[:3]]
        assert all(f == "y" for f, w in zip(fake[:3], word[:3], strict=True) if w == "y")


def test_compare_counts_the_pairs_whose_blocked_side_is_slower() -> None:
    r = bt.compare("m", [2e-6, 3e-6, 1e-6, 5e-6], [1e-6, 1e-6, 2e-6, 4e-6])
    assert (r["n"], r["pairs_blocked_slower"]) == (4, 3)
    assert (r["blocked_median_us"], r["missing_median_us"], r["difference_us"]) == (2.5, 1.5, 1.0)
    assert 0 < r["mann_whitney_p"] <= 1 and r["pairs_binomial_p"] == pytest.approx(0.625)
    same = bt.compare("m", [1e-6] * 50, [1e-6] * 50)
    assert same["pairs_blocked_slower"] == 0 and same["mann_whitney_p"] == 1.0
    assert "m " in bt.table([r]).splitlines()[1]


def test_a_tiny_run_of_the_words_in_process(sample_index: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "words.json"
    assert bt.main(["--database", str(sample_index), "--measure", "words", "--skip-http", "--n", "20",
                    "--words", "5", "--json", str(out)]) == 0
    got = json.loads(out.read_text())
    assert [r["measure"] for r in got["results"]] == ["engine search, one word"]
    assert got["results"][0]["n"] == 20 and len(got["words"]) == 5
    assert "engine search, one word" in capsys.readouterr().out


def test_pick_leaves_out_a_document_whose_url_no_respelling_can_miss(tmp_path: Path) -> None:
    """A URL whose last letters canonicalisation drops (a fragment) opens its own document
    however they change: that document stays blocked, its open is left out (it used to loop
    for ever: seed 2 of the sample corpus)."""
    path = tmp_path / "frag.sqlite3"
    build([{"docid": f"doc-{i:04d}", "url": f"https://example.com/p{i}" + ("#sectionabcdef" if i % 2 == 0 else ""),
            "title": f"T{i}", "text": f"word{i} common text"} for i in range(4)], path)
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(bt.pick(path, 2, 1)), daemon=True)
    worker.start()
    worker.join(60)
    assert got, "pick() did not return"
    blocked, missing = got[0]  # type: ignore[misc]
    assert len(blocked) == len(missing) == 2
    fragment = [b[1].endswith("abcdef") for b in blocked]
    assert any(fragment) and [m is None for m in missing] == fragment
    assert bt.paired(blocked, missing)[0] == [b for b, f in zip(blocked, fragment, strict=True) if not f]
