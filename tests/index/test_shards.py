"""drsearch.index.shards: every shard's hits carry the whole index's scores and snippets
(the corpus' df weighs a snippet's terms, whichever terms the shard holds)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from drsearch.contract import InvalidInputError
from drsearch.index import BlockList, BuildSettings, Engine, build
from drsearch.index.shards import split_index


def _docs() -> list[dict[str, object]]:
    rng = random.Random(11)
    # skewed: each tenth of the documents leans on its own words, so a shard's df differs
    # from the corpus' (and some words are missing from some shards)
    docs = []
    for i in range(60):
        own = [f"t{i // 15}x{j}" for j in range(12)]
        words = [rng.choice(own) if rng.random() < 0.3 else f"c{int(rng.paretovariate(1.2)) % 90}"
                 for _ in range(rng.randint(50, 700))]
        docs.append({"docid": f"d{i:03d}", "url": f"https://x.org/{i}", "title": "", "text": " ".join(words)})
    return docs


@pytest.mark.parametrize("native", [None, False])  # the C kernel where built, and numpy
def test_shard_hits_equal_the_whole_index_hits(tmp_path: Path, native: bool | None) -> None:
    whole = tmp_path / "whole.sqlite3"
    build(_docs(), whole, BuildSettings(chunk_words=300, chunk_stride=250))
    bl = BlockList.from_bytes(b"d003\nd031\n")
    (tmp_path / "s").mkdir()
    paths = [r.path for r in split_index(whole, tmp_path / "s", 4, blocklist=bl)]
    rng = random.Random(5)
    vocab = [f"c{i}" for i in range(40)] + [f"t{g}x{j}" for g in range(4) for j in range(12)]
    with Engine.open(whole, bl, native=native) as w:
        shards = [Engine.open(p, bl, native=native) for p in paths]
        try:
            for _ in range(150):
                q = " ".join(rng.sample(vocab, rng.randint(1, 4)))
                want = {h.docid: h for h in w.search(q, 100).hits}
                got = {h.docid: h for s in shards for h in s.search(q, 100).hits}
                for docid, h in want.items():
                    assert got[docid]._replace(rank=0) == h._replace(rank=0), q
        finally:
            for s in shards:
                s.close()


def test_split_refuses_what_it_cannot_split_exactly(tmp_path: Path) -> None:
    whole = tmp_path / "whole.sqlite3"
    build(_docs()[:3], whole)
    with pytest.raises(InvalidInputError, match="no document"):
        split_index(whole, tmp_path, 4)
    shard = split_index(whole, tmp_path, 2)[0].path
    with pytest.raises(InvalidInputError, match="already a shard"):
        split_index(shard, tmp_path, 2, overwrite=True)


def test_shard_verb_writes_files_and_refuses_bad_input_in_one_line(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from drsearch.tools.cli import main

    whole = tmp_path / "whole.sqlite3"
    build(_docs()[:8], whole)
    (tmp_path / "out").mkdir()
    assert main(["shard", "--database", str(whole), "--shards", "2", "--out", str(tmp_path / "out"), "--json"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["index"] for r in lines] == [0, 1] and sum(r["documents"] for r in lines) == 8
    # an existing output is a BuildError (exit 1), as for drsearch build; bad input exits 2
    for argv, needle, code in (
            (["--out", str(tmp_path / "nope")], "does not exist", 2),
            (["--out", str(tmp_path / "out")], "already exists", 1),
            (["--out", str(tmp_path / "out"), "--force", "--blocked-docids", str(tmp_path / "x")], "x", 2),
            (["--out", str(tmp_path / "out"), "--force", "--shards", "9"], "no document", 2)):
        shards = [] if "--shards" in argv else ["--shards", "2"]
        assert main(["shard", "--database", str(whole), *shards, *argv]) == code
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("drsearch: error: ") and needle in err[0], err
