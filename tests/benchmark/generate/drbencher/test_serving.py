"""V2's served support corpus: ``drsearch serve`` through the server layer's ServeProcess."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from drsearch.benchmark.generate.drbencher.serving import drsearch_serve
from drsearch.benchmark.generate.errors import GenerateError


def test_drsearch_serve_yields_the_url_of_a_live_server(sample_index: Path) -> None:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with drsearch_serve(sample_index) as url, opener.open(url + "/health", timeout=10) as r:
        assert json.loads(r.read())["status"] == "ok"


def test_a_support_corpus_that_cannot_be_served_is_a_generate_error_naming_why(tmp_path: Path) -> None:
    bad = tmp_path / "support.sqlite3"
    bad.write_bytes(b"not a database")
    with pytest.raises(GenerateError, match=rf"drsearch serve of {bad} on http://127.0.0.1:\d+: exited 2 "
                                            r"before answering: .*not a drsearch index"), drsearch_serve(bad):
        pass
