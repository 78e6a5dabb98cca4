"""`drsearch build --exclude-docids FILE`: blocked documents physically absent from the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from drsearch.contract import DocumentNotFoundError
from drsearch.contract import canonical_json as dumps
from drsearch.index import BlockList, Engine, build
from drsearch.tools.cli import main

from ..helpers import DATA, sample_docs

QUERY = "video game streaming subscription"


def test_excluded_documents_are_absent_and_recorded(tmp_path: Path) -> None:
    full = tmp_path / "full.sqlite3"
    build(sample_docs(), full)
    with Engine.open(full) as e:
        hidden = e.search(QUERY, 1).hits[0].docid
    listing = tmp_path / "blocked.txt"
    listing.write_text(f"# hidden for the release\n{hidden}\nweb-not-in-this-corpus\n")
    out = tmp_path / "excluded.sqlite3"
    assert main(["build", str(DATA / "sample/docs.jsonl"), "--out", str(out), "--quiet",
                 "--exclude-docids", str(listing)]) == 0

    blocklist = BlockList.from_file(listing)
    with Engine.open(out) as e:  # no blocklist needed: the document is not in the file
        assert e.meta["documents"] == len(sample_docs()) - 1
        assert e.meta["excluded_docids"] == {"sha256": blocklist.sha256, "listed": 2, "excluded": 1,
                                             "source": "blocked.txt"}
        with pytest.raises(DocumentNotFoundError):
            e.open_document(docid=hidden)
        excluded_hits = e.search(QUERY, 20)
        assert hidden not in {h.docid for h in excluded_hits.hits}

    # exactly the index of the other documents (statistics without the hidden one) ...
    rest = tmp_path / "rest.sqlite3"
    build([d for d in sample_docs() if d["docid"] != hidden], rest)
    with Engine.open(rest) as e:
        assert dumps(e.search(QUERY, 20).to_dict()) == dumps(excluded_hits.to_dict())
        assert e.meta["content_identity"] == Engine.open(out).meta["content_identity"]
        assert "excluded_docids" not in e.meta  # without the option, no such key
    # ... whereas a blocklist over the full file hides it but keeps it in the BM25 statistics
    with Engine.open(full, blocklist) as e:
        blocked_hits = e.search(QUERY, 20)
    top = excluded_hits.hits[0]
    assert blocked_hits.hits[0].docid == top.docid and blocked_hits.hits[0].score != top.score


def test_a_bad_exclude_file_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.txt"
    bad.write_text("has space\n")
    code = main(["build", str(DATA / "sample/docs.jsonl"), "--out", str(tmp_path / "x.sqlite3"), "--quiet",
                 "--exclude-docids", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("drsearch: error: ")
    assert not (tmp_path / "x.sqlite3").exists()
