"""The fast serialiser writes exactly the bytes of the canonical encoder (``drsearch.index.canonical_bytes``)."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from drsearch.contract import Document, Hit, SearchResult
from drsearch.contract import canonical_json as dumps
from drsearch.index import Engine
from drsearch.server.encoding import canonical_bytes, document_json, search_json

JSON_SCALARS = (st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
                | st.floats(allow_nan=False, allow_infinity=False) | st.text())
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(JSON_VALUES)
def test_canonical_bytes_equals_the_reference(value: object) -> None:
    assert canonical_bytes(value) == dumps(value).encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=5), st.text(max_size=20))
def test_search_json_equals_dumps_for_any_scores(scores: list[float], text: str) -> None:
    hits = [Hit(i + 1, f"d{i}", f"https://x.example/{i}", text, s, i, text, text) for i, s in enumerate(scores)]
    result = SearchResult(text, 10, hits)
    assert search_json(result) == dumps(result.to_dict()).encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(JSON_VALUES.filter(lambda v: isinstance(v, dict)) | st.just({"x": 1e-7, "y": 2**65}),
       st.integers(0, 30), st.none() | st.integers(1, 30))
def test_document_json_equals_dumps(metadata: dict[str, object], offset: int, length: int | None) -> None:
    doc = Document("d", "https://x.example/", "https://x.example/", "T", "some text é🚀 " * 3, metadata)
    assert document_json(doc, offset, length) == dumps(doc.to_dict(offset, length)).encode("utf-8")


def test_real_bodies_and_clamped_idf_scores(sample_index: Path) -> None:
    with Engine.open(sample_index) as e:
        for q in ("the", "the and of", "video game streaming", "zzzz"):
            r = e.search(q, 100)
            assert search_json(r) == dumps(r.to_dict()).encode()
        tiny = [h.score for h in e.search("the", 100).hits]
        # clamped IDF: scores below 1e-4, spelled the way json spells them (the fallback path)
        assert tiny and all(0 < s < 1e-4 for s in tiny)
        assert b"e-06," in search_json(e.search("the", 3))


def test_error_bodies_have_one_definition() -> None:
    from drsearch.contract import error_body as index_error_body
    from drsearch.server.errors import error_body as server_error_body

    long = "x" * 2000
    body = server_error_body("not_found", long)
    assert body == index_error_body("not_found", long)
    message = json.loads(body)["error"]["message"]
    assert len(message) == 500 and message.endswith("…")
