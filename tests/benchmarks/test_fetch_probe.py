"""benchmarks/fetch_probe.py on the sample's index: every probe prints its rows (the readers,
the copy against a flat copy, the one-term classes present, the thread runs with their
ratios, the texts and snippets stages); bad arguments exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import fetch_probe
import pytest


# This module reads chunk texts from the file's pages (the kernel's text readers): it runs on
# files that store them (schema version 2; conftest's *_stored fixtures).
@pytest.fixture(scope="session")
def sample_index(sample_index_stored: Path) -> Path:
    return sample_index_stored

QUERIES = ["video game streaming", "Stadia launch price", "cloud gaming subscription", "the of a"]


def test_every_probe_runs_and_prints_its_rows(sample_index: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("drsearch.index._kernels")
    queries = tmp_path / "q.json"
    queries.write_text(json.dumps({"normal": QUERIES[:2], "more": QUERIES[2:]}))
    rc = fetch_probe.main(["--index", str(sample_index), "--queries", str(queries), "--seconds", "0.2"])
    out = capsys.readouterr().out
    assert rc == 0, out
    assert f"{len(QUERIES)} queries" in out and "scorer c-auto" in out
    assert "all pages" in out and "page reader" in out and "blob API" in out and "us per query" in out
    assert "term rows alone: find_rows p50" in out
    for stage in ("postings, all pages", "postings, page reader", "postings, blob API",
                  "kernel (prefetched lists)", "ranked search", "complete search",
                  "complete search, 2 calls"):
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(stage))
        assert float(line.rsplit("ratio", 1)[1].strip().rstrip("x")) > 0, line
    assert "one-term:" in out
    copy = [ln for ln in out.splitlines() if ln.strip().startswith(("pages ", "flat ")) and "GB/s" in ln]
    assert len(copy) == 2 and all(float(ln.split("us per query")[0].split()[-1]) > 0 for ln in copy), out
    assert "pages / flat" in out
    paged = [ln for ln in out.splitlines() if ln.strip().startswith(("paged ", "copied ")) and "both p50" in ln]
    assert len(paged) == 2 and all(float(ln.split("both p50")[1].split("us")[0]) > 0 for ln in paged), out
    assert "paged / copied (fetch + rank)" in out and "paged lists per query" in out
    snips = [ln for ln in out.splitlines() if "us per query" in ln
             and ln.strip().startswith(("read_texts ", "snippets ", "texts_snippets "))]
    assert len(snips) == 3 and all(float(ln.split("us per query")[0].split()[-1]) > 0 for ln in snips), out
    assert "characters of hit text per query" in out and "texts_snippets / (read_texts + snippets)" in out


@pytest.mark.parametrize("args", [["--probe", "nope"], ["--seconds", "0"], ["--limit", "0"]])
def test_bad_arguments_exit_2(sample_index: Path, tmp_path: Path, args: list[str],
                              capsys: pytest.CaptureFixture[str]) -> None:
    queries = tmp_path / "q.json"
    queries.write_text("[]" if args == ["--limit", "0"] else json.dumps(QUERIES))
    assert fetch_probe.main(["--index", str(sample_index), "--queries", str(queries), *args]) == 2
    assert capsys.readouterr().err.startswith("fetch_probe: ")
    assert fetch_probe.main(["--index", str(tmp_path / "none"), "--queries", str(queries)]) == 2
