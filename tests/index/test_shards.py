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


def _write_jsonl(path: Path, docs: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def test_build_shards_writes_the_split_of_the_built_index_byte_for_byte(tmp_path: Path) -> None:
    from drsearch.index.shards import build_shards

    docs = _docs()
    bl = BlockList.from_bytes(b"d003\nd031\n")
    build(docs, tmp_path / "whole.sqlite3", BuildSettings(chunk_words=300, chunk_stride=250))
    for d in ("split", "built"):
        (tmp_path / d).mkdir()
    want = split_index(tmp_path / "whole.sqlite3", tmp_path / "split", 4, blocklist=bl)
    got = build_shards(docs, tmp_path / "built", 4, BuildSettings(chunk_words=300, chunk_stride=250), blocklist=bl)
    assert [r.path.name for r in got] == [r.path.name for r in want]
    assert [r.path.read_bytes() for r in got] == [r.path.read_bytes() for r in want]
    assert [(r.index, r.documents, r.chunks, r.identity) for r in got] == \
        [(r.index, r.documents, r.chunks, r.identity) for r in want]
    assert sorted(p.name for p in (tmp_path / "built").iterdir()) == [r.path.name for r in got]  # no whole index left


def test_build_verb_with_shards_and_its_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from drsearch.tools.cli import main

    docs = _write_jsonl(tmp_path / "docs.jsonl", _docs()[:8])
    out = tmp_path / "out"
    out.mkdir()
    assert main(["build", str(docs), "--shards", "2", "--out", str(out), "--json", "--quiet"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["index"] for r in lines] == [0, 1] and sum(r["documents"] for r in lines) == 8
    (tmp_path / "whole").mkdir()
    build(_docs()[:8], tmp_path / "whole" / "w.sqlite3")
    assert main(["shard", "--database", str(tmp_path / "whole" / "w.sqlite3"), "--shards", "2",
                 "--out", str(tmp_path / "whole"), "--json"]) == 0
    split = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [r["identity"] for r in split] == [r["identity"] for r in lines]
    assert [Path(r["path"]).read_bytes() for r in split] == [Path(r["path"]).read_bytes() for r in lines]
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    (out / "shard-0-of-9.sqlite3").write_bytes(b"keep")  # what a failed --force run must leave
    before["shard-0-of-9.sqlite3"] = b"keep"
    dup = _write_jsonl(tmp_path / "dup.jsonl", [*_docs()[:3], _docs()[0]])
    with pytest.raises(SystemExit) as exit_:  # an argparse error: usage and exit 2, as for `shard`
        main(["build", str(docs), "--shards", "0", "--out", str(out)])
    assert exit_.value.code == 2 and capsys.readouterr().err.strip().splitlines()[-1] == \
        "drsearch build: error: argument --shards: must be between 1 and 4096, got 0"
    for argv, needle, code in (
            (["--shards", "9", "--force"], "no document", 2),  # 8 documents
            (["--shards", "2"], "already exists", 1),  # a BuildError, as for build and shard
            (["--shards", "2", "--out", str(tmp_path / "nope")], "does not exist", 2),
            (["--shards", "2", "--force", "--blocked-docids", str(tmp_path / "x")], "x", 2),
            (["--shards", "2", "--force", "--docs", str(dup)], "d000", 2),
            (["--blocked-docids", "none", "--out", str(tmp_path / "one.sqlite3")], "only with --shards", 2)):
        src = str(dup) if "--docs" in argv else str(docs)
        argv = [a for a in argv if a not in ("--docs", str(dup))]
        target = [] if "--out" in argv else ["--out", str(out)]
        assert main(["build", src, *argv, *target, "--quiet"]) == code, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("drsearch: error: ") and needle in err[0], (argv, err)
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before, argv  # nothing lost, nothing left
    assert not (tmp_path / "one.sqlite3").exists()
