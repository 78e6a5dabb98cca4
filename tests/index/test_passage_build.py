"""A passage file's build: each passage staged once, in input order; with two threads the
worker tokenizes passages while later ones are still being read, and compresses their texts
itself (the writing side's zlib thread was its bottleneck); the same bytes whatever the thread
count, and the same rows as the builds that staged a document and a chunk per passage."""

from __future__ import annotations

import importlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsearch.contract import InvalidDocumentError
from drsearch.index import BlockList, BuildSettings, build, read_jsonl
from drsearch.index.version4 import write_version4

from .test_build_streaming import SAMPLE, content_digests

build_module = importlib.import_module("drsearch.index.build")  # the module, not build()


def passage_rows() -> list[dict[str, Any]]:
    """The sample documents as 120-word passages (title line first), with the shapes a passage
    may take: metadata, aliases, an id with '#', text that NFC changes, an empty passage."""
    rows: list[dict[str, Any]] = []
    for d in read_jsonl(SAMPLE):
        words = d["text"].split()
        for i in range(0, max(len(words), 1), 120):
            rows.append({"id": f"{d['docid']}-{i // 120}",
                         "contents": f'"{d["title"]}"\n' + " ".join(words[i:i + 120])})
    rows[3]["source"] = "wiki-18"
    rows[4]["aliases"] = ["https://example.org/a-passage"]
    rows[5]["id"] = "frag#ment"
    rows[6]["contents"] = '"Cafe\u0301"\nCafe\u0301 au lait'
    rows.append({"id": "empty", "contents": ""})
    return rows


def write_passages(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# content_digests of these builds by the code that staged each passage as a document row and
# a chunk row, sorted them back by their first chunk and compressed texts on the writing side
# (commit 10864bf, schema version 4): the same rows in every table.
BEFORE = {
    "plain": {
        "arrays": "081d6f19934c67b5", "chunks": "99e143789078f451", "chunks_fts_config": "a8b2b0af8b6c9a95",
        "chunks_fts_data": "d7f371169f2b39ab", "chunks_fts_docsize": "315a799858757498", "chunks_fts_idx": "5033d60dc9c42f37",
        "dense_tfs": "3b904134cdc814cd", "doc_texts": "4289c3068d2d6eb9", "documents": "f572a1968ddd8ab8",
        "meta": "b0225ba869f0bdc2", "postings": "1f5fdf4499e1c395", "terms": "c78798d6b22dbb1d",
        "urls": "b757fe3d7e1120d2",
    },
    "excluded": {
        "arrays": "fe5c26fb29deaaa2", "chunks": "7bac8a3e6c6864d3", "chunks_fts_config": "a8b2b0af8b6c9a95",
        "chunks_fts_data": "7cafe5cc58f45089", "chunks_fts_docsize": "ef77694e80e57e5a", "chunks_fts_idx": "7432e2b34c388a37",
        "dense_tfs": "998e113be1f62a84", "doc_texts": "1fbf62b953fa95e7", "documents": "8bf302570dd4858d",
        "meta": "3549fa7e65fcbea2", "postings": "0cacb5f1cbe831a3", "terms": "1c8a022a129dca05",
        "urls": "b6213c94715fba3b",
    },
}


def build_passages(tmp_path: Path, name: str, out: Path, **settings: Any) -> Path:
    src = write_passages(tmp_path / "passages.jsonl", passage_rows())
    exclude = None
    if name == "excluded":
        rows = passage_rows()
        blocked = [rows[0]["id"], rows[10]["id"], "frag#ment"]
        (tmp_path / "blocked.txt").write_text("".join(f"{b}\n" for b in blocked), encoding="utf-8")
        exclude = BlockList.from_file(tmp_path / "blocked.txt")
    build(read_jsonl(src), out, BuildSettings(**settings), exclude=exclude)
    return out


@pytest.mark.parametrize("name", sorted(BEFORE))
def test_same_bytes_for_any_thread_count_and_the_same_rows_as_before(tmp_path: Path, name: str) -> None:
    one = build_passages(tmp_path, name, tmp_path / "one.sqlite3", threads=1)
    two = build_passages(tmp_path, name, tmp_path / "two.sqlite3", threads=2)
    assert one.read_bytes() == two.read_bytes()
    # (schema version 5 codes the lists' impacts: decoded, a version-4 file, the rows as before)
    assert content_digests(write_version4(one, tmp_path / "v4.sqlite3")) == BEFORE[name]


def _slow(rows: list[dict[str, Any]], written: list[int], seen: dict[str, bool]) -> Iterator[object]:
    """Passages as a slow reader gives them (20 ms apart until the build has written
    something); ``seen["written_before_last"]``: whether it had, by the last one."""
    for i, row in enumerate(rows):
        if i == len(rows) - 1:
            seen["written_before_last"] = bool(written)
        yield row
        if not written:
            time.sleep(0.02)


def test_two_threads_tokenize_and_write_passages_while_the_file_is_still_being_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker starts at once and the file is written while passages are still coming (no
    staging phase first); the same bytes as one thread's build; progress only after
    ``on_start`` has the total; every document's text arrives compressed by the worker."""
    one = build_passages(tmp_path, "plain", tmp_path / "one.sqlite3", threads=1)
    monkeypatch.setattr(build_module, "_STAGE_COMMIT_PASSAGES", 4, raising=False)
    written: list[int] = []
    packed: list[bool] = []
    write = build_module._Writing.write

    def recording(self: Any, item: Any) -> None:
        written.append(len(item.chunks))
        if item.doc is not None:
            packed.append(isinstance(item.packed, tuple) and item.text == "")
        write(self, item)

    monkeypatch.setattr(build_module._Writing, "write", recording)
    seen: dict[str, bool] = {}
    events: list[tuple[str, int]] = []
    report = build(_slow(passage_rows(), written, seen), tmp_path / "two.sqlite3", BuildSettings(threads=2),
                   on_start=lambda n: events.append(("start", n)),
                   progress=lambda n: events.append(("progress", n)))
    assert seen["written_before_last"]
    assert (tmp_path / "two.sqlite3").read_bytes() == one.read_bytes()
    assert events[0] == ("start", report.chunks) and len(events) > 1
    assert sum(n for kind, n in events[1:] if kind == "progress") == report.chunks == sum(written)
    assert packed and all(packed) and len(packed) == report.documents


@pytest.mark.parametrize("threads", [1, 2])
def test_a_duplicate_id_late_in_a_passage_file_fails_the_build_naming_its_line(
        tmp_path: Path, threads: int) -> None:
    rows = passage_rows()
    rows.append(dict(rows[2]))
    (tmp_path / "in").mkdir()
    src = write_passages(tmp_path / "in" / "p.jsonl", rows)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(InvalidDocumentError, match=rf"p\.jsonl:{len(rows)}: duplicate docid '{rows[2]['id']}'"):
        build(read_jsonl(src), out / "x.sqlite3", BuildSettings(threads=threads))
    assert not list(out.iterdir())
