"""Passage corpora as Search-R1 and Pyserini ship them (``{"id", "contents"}``, the title on
the first line): built directly, one passage one chunk, served by ``/retrieve`` in Search-R1's
shape; a file mixing passages and documents is refused naming the line."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from drsearch.contract import InvalidDocumentError
from drsearch.index import Engine, build, read_jsonl
from drsearch.server import create_app

from ..server.conftest import Client

DRSEARCH = shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))
LONG = " ".join(f"w{i % 97} filler" for i in range(600))  # 1,200 words: past the 800-word window
PASSAGES = [
    {"id": "7", "contents": '"Aaron Alexis"\nAaron Alexis was the shooter at the Navy Yard.'},
    {"id": "3", "contents": '"Zebra"\nZebras are African equines with stripes.\nA second line.'},
    {"id": "12", "contents": f'"Long passage"\n{LONG} zebra'},
    {"id": "5", "contents": '"Café"\nCafe\u0301 spelled with a combining accent.'},
]


def nfc(s: str) -> str:
    return unicodedata.normalize("NFC", s)


def write_lines(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def passage_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("passages")
    out = tmp / "wiki.sqlite3"
    build(read_jsonl(write_lines(tmp / "wiki.jsonl", PASSAGES)), out)
    return out


def test_each_passage_is_one_chunk_holding_its_contents_exactly(passage_index: Path) -> None:
    with Engine.open(passage_index) as engine:
        assert engine.passages
        assert engine.stats()["chunks"] == len(PASSAGES) == engine.stats()["documents"]
        for p in PASSAGES:
            doc = engine.open_document(docid=p["id"])
            title, _, text = p["contents"].partition("\n")
            # the document's fields are NFC-normalised as any document's; the chunk is not
            assert (doc.title, doc.text, doc.url, doc.n_chunks) == (
                nfc(title), nfc(text), f"passage:{p['id']}", 1)
        assert engine.open_document(url="passage:12").docid == "12"  # the synthetic URL resolves
        hit = engine.search("zebra", 10).hits
        assert {h.docid for h in hit} == {"3", "12"}
        long_hit = next(h for h in hit if h.docid == "12")
        assert long_hit.chunk_text == PASSAGES[2]["contents"]  # not re-chunked, title line kept
        accent = engine.search("accent", 1).hits[0]
        assert accent.chunk_text == PASSAGES[3]["contents"]  # byte for byte (not NFC-normalised)


def test_retrieve_answers_in_search_r1s_shape(passage_index: Path) -> None:
    client = Client(create_app(Engine.open(passage_index)))
    try:
        r = client.post("/retrieve", {"queries": ["zebra stripes", "navy yard"], "topk": 2,
                                      "return_scores": True})
        assert r.status_code == 200, r.text
        by_id = {p["id"]: p for p in PASSAGES}
        result = r.json()["result"]
        assert [[item["document"]["id"] for item in items] for items in result] == [["3", "12"], ["7"]]
        for items in result:
            for item in items:
                assert set(item) == {"document", "score"} and isinstance(item["score"], float)
                assert item["document"] == by_id[item["document"]["id"]]  # exactly the corpus row
        bare = client.post("/retrieve", {"queries": ["navy yard"], "topk": 1}).json()
        assert bare == {"result": [[by_id["7"]]]}
    finally:
        client.close()


@pytest.mark.parametrize("first", ["passage", "document"])
def test_a_mixed_file_is_refused_naming_the_line(tmp_path: Path, first: str) -> None:
    doc = {"docid": "d1", "url": "https://example.org/d1", "title": "t", "text": "hello"}
    rows: list[dict[str, object]] = [PASSAGES[0], PASSAGES[1], doc] if first == "passage" \
        else [doc, dict(doc, docid="d2"), PASSAGES[0]]
    src = write_lines(tmp_path / "mixed.jsonl", rows)
    with pytest.raises(InvalidDocumentError, match=rf"^{src}:3: a .* line in an input of"):
        build(read_jsonl(src), tmp_path / "lib.sqlite3")
    p = subprocess.run([DRSEARCH, "build", str(src), "--out", str(tmp_path / "x.sqlite3")],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1, p.stderr
    assert p.stderr.startswith(f"drsearch: error: {src}:3: ") and "not both" in p.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["mixed.jsonl"]


def test_cli_build_takes_a_passage_file(tmp_path: Path, passage_index: Path) -> None:
    src = write_lines(tmp_path / "wiki.jsonl", PASSAGES)
    for threads in ("1", "2"):
        out = tmp_path / f"cli{threads}.sqlite3"
        p = subprocess.run([DRSEARCH, "build", str(src), "--out", str(out), "--threads", threads, "--json"],
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        report = json.loads(p.stdout)
        assert (report["documents"], report["chunks"]) == (4, 4)
        assert out.read_bytes() == passage_index.read_bytes()  # deterministic, same as the library


def test_a_passage_without_a_string_id_is_refused(tmp_path: Path) -> None:
    src = write_lines(tmp_path / "bad.jsonl", [PASSAGES[0], {"id": 4, "contents": "t\nx"}])
    with pytest.raises(InvalidDocumentError, match=rf"^{src}:2: a passage's 'id' must be a non-empty string"):
        build(read_jsonl(src), tmp_path / "x.sqlite3")


def test_a_real_drsearch_serve_of_a_passage_index(passage_index: Path, tmp_path: Path) -> None:
    import httpx

    from drsearch.server import ServeProcess

    with ServeProcess(passage_index, log=tmp_path / "serve.log") as server:
        r = httpx.post(f"{server.url}/retrieve", json={"queries": ["zebra stripes"], "topk": 1,
                                                       "return_scores": True}, timeout=30)
    assert r.status_code == 200, r.text
    [[item]] = r.json()["result"]
    assert item["document"] == PASSAGES[1] and item["score"] > 0
