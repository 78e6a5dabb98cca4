"""``corpus build`` input that UTF-8 cannot encode (a lone surrogate, valid JSON): the line is
rejected and counted as ``not_unicode``, never a crash deep in the build."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drsearch.corpus import build_corpus
from drsearch.corpus.dedup import Rejected, check_document

GOOD = {"url": "https://a.test/1", "title": "One", "text": "some words here"}


@pytest.mark.parametrize(("field", "value"), [
    ("text", "words \ud800 here"), ("title", "\udfff"), ("url", "https://a.test/\udc00"),
    ("aliases", ["https://b.test/\udc80"]), ("final_url", "https://c.test/\ud801"),
    ("lang", {"k\udc00": 1}), ("k\udc00", 1),
])
def test_a_lone_surrogate_anywhere_is_rejected_as_not_unicode(field: str, value: object) -> None:
    got = check_document("docs.jsonl:3", {**GOOD, field: value})
    assert isinstance(got, Rejected) and got.reason == "not_unicode"
    assert got.message.startswith(f"docs.jsonl:3: {field!a} not valid Unicode (a lone surrogate; ")
    assert got.message.isascii()


def test_corpus_build_counts_the_rejected_line_and_builds_the_rest(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    bad = json.dumps({**GOOD, "url": "https://a.test/2", "text": "other"}).replace("other", "oth\\ud800er")
    docs.write_text("\n".join([json.dumps(GOOD), bad]) + "\n", encoding="utf-8")
    out = tmp_path / "out" / "c.sqlite3"
    out.parent.mkdir()
    result = build_corpus(docs, out)
    assert result.coverage["rejected_by_reason"] == {"not_unicode": 1}
    assert result.coverage["documents"] == 1
    assert [r.where for r in result.rejected] == [f"{docs}:2"]
