"""Extraction: content types, fallback, decoding, the process pool, and the quality floor."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest

from drsearch.contract import InvalidInputError
from drsearch.corpus import ExtractSettings, FetchRecord, extract_crawl, extract_page
from drsearch.corpus.extract import decode_body

from .conftest import Crawled

REPO = Path(__file__).resolve().parents[2]
SAMPLE_CRAWL = REPO / "data" / "sample" / "crawl"


def _rec(ctype: str | None) -> FetchRecord:
    return FetchRecord("https://a.test/p", "https://a.test/p", "https://a.test/p", 200, ctype, 10, None,
                       "allowed", None, "bodies/x.gz")


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("drsearch_bench_extract", REPO / "benchmarks" / "extract_quality.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_content_types_are_extracted_passed_through_or_skipped() -> None:
    s = ExtractSettings(workers=1)
    html = b"<html lang='en-GB'><head><title> A  title </title></head><body><nav>menu</nav><p>x</p></body></html>"
    page = extract_page(_rec("text/html"), html, s)
    assert page.status == "extracted" and page.title == "A title" and page.lang == "en"
    assert extract_page(_rec("text/plain; charset=utf-8"), b"just text", s).text == "just text"
    pdf = extract_page(_rec("application/pdf"), b"%PDF", s)
    assert pdf.status == "skipped" and pdf.reason == "unsupported_content_type:application/pdf"
    assert extract_page(_rec(None), html, s).status == "extracted"  # sniffed
    assert extract_page(_rec("text/html"), b"<html><body></body></html>", s).status == "empty"


def test_selectolax_fallback_when_trafilatura_finds_nothing() -> None:
    page = extract_page(_rec("text/html"), b"<html><body><div>Short visible words</div>"
                        b"<script>var x = 1;</script></body></html>", ExtractSettings(workers=1))
    assert page.status == "extracted" and "Short visible words" in page.text and "var x" not in page.text
    assert page.extractor in ("trafilatura", "selectolax")


@pytest.mark.parametrize("failure", [None, ValueError("pathological markup")])
def test_selectolax_takes_over_when_trafilatura_returns_nothing_or_fails(
        monkeypatch: pytest.MonkeyPatch, failure: Exception | None) -> None:
    import trafilatura

    def extract(*args: object, **kwargs: object) -> str | None:
        if failure is not None:
            raise failure
        return None

    monkeypatch.setattr(trafilatura, "extract", extract)
    page = extract_page(_rec("text/html"), b"<html><head><title>T</title></head><body><p>Visible words</p>"
                        b"<style>p {}</style></body></html>", ExtractSettings(workers=1))
    assert (page.status, page.extractor, page.text, page.title) == ("extracted", "selectolax", "Visible words", "T")


def test_decoding_uses_header_then_utf8_then_meta_charset() -> None:
    assert decode_body("café".encode("latin-1"), "text/html; charset=iso-8859-1") == "café"
    assert decode_body("café".encode(), None) == "café"
    assert decode_body(b'<meta charset="windows-1252"> caf\xe9', None).endswith("café")


def test_parallel_and_serial_extraction_write_identical_output(tmp_path: Path) -> None:
    one = extract_crawl(SAMPLE_CRAWL, tmp_path / "a.jsonl", ExtractSettings(workers=1, batch_size=64))
    two = extract_crawl(SAMPLE_CRAWL, tmp_path / "b.jsonl", ExtractSettings(workers=2, batch_size=8))
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert one["extracted"] == two["extracted"] == 184
    bench = _bench()
    truth = bench.ground_truth()
    docs = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert len(truth) == 181  # the benchmark pages; the 3 leak artifacts are not ground truth
    scores = bench.corpus_scores((truth[d["url"]], d["text"]) for d in docs if d["url"] in truth)
    assert scores["f1"] >= 0.958  # trafilatura 2.0.0's published figure (docs/EXTRACTION.md)


def test_shingle_metric_matches_hand_computed_values() -> None:
    bench = _bench()
    assert bench.page_scores("", "") == (1.0, 1.0)
    assert bench.page_scores("a b c d e", "") == (0.0, 0.0)
    p, r = bench.page_scores("a b c d e", "a b c d")  # want {abcd, bcde}, got {abcd}
    assert (p, r) == (1.0, 0.5)
    p, r = bench.page_scores("a b c d", "a b c d a b c d")  # multiset: 1 of 5 shingles true
    assert p == pytest.approx(1 / 5) and r == 1.0


def test_extract_reports_skips_and_counts(crawled: Crawled) -> None:
    rep = crawled.extract
    assert rep["skipped_by_reason"] == {"unsupported_content_type:application/pdf": 1}
    assert rep["extractors"].get("plain") == 1
    assert rep["fetched_ok"] == rep["extracted"] + rep["extraction_empty"] + rep["skipped"]
    assert rep["malformed_url_lines"] == 5


def test_bad_crawl_dirs_and_bad_record_lines(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="not a crawl directory"):
        extract_crawl(tmp_path / "missing", tmp_path / "d.jsonl")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InvalidInputError, match=r"no fetches\.jsonl"):
        extract_crawl(tmp_path / "empty", tmp_path / "d.jsonl")
    crawl = tmp_path / "c"
    (crawl / "bodies").mkdir(parents=True)
    lines = (SAMPLE_CRAWL / "fetches.jsonl").read_text().splitlines()[:3]
    for line in lines:
        name = json.loads(line)["body"]
        (crawl / name).write_bytes((SAMPLE_CRAWL / name).read_bytes())
    (crawl / "fetches.jsonl").write_text("\n".join([lines[0], "[1, 2]", "{oops", lines[1], '{"url": 1}', lines[2]]) + "\n")
    (tmp_path / "d.jsonl").write_text("keep me\n")
    with pytest.raises(InvalidInputError, match="already exists"):
        extract_crawl(crawl, tmp_path / "d.jsonl")
    assert (tmp_path / "d.jsonl").read_text() == "keep me\n"  # nothing already written lost
    rep = extract_crawl(crawl, tmp_path / "d.jsonl", ExtractSettings(workers=1), overwrite=True)
    assert rep["extracted"] == 3 and rep["invalid_records"] == 3
    assert ["JSON object" in rep["problems"][0], "not valid JSON" in rep["problems"][1],
            "invalid fetch record" in rep["problems"][2]] == [True, True, True]
    assert [int(p.split(":")[1]) for p in rep["problems"]] == [2, 3, 5]


def test_an_interrupted_extract_keeps_the_earlier_output(tmp_path: Path) -> None:
    out = tmp_path / "d.jsonl"
    out.write_text("an earlier extract\n")

    class Stop(Exception):
        pass

    def stop(page: object) -> None:
        raise Stop

    with pytest.raises(Stop):
        extract_crawl(SAMPLE_CRAWL, out, ExtractSettings(workers=1), overwrite=True, progress=stop)
    assert out.read_text() == "an earlier extract\n"
    assert [p.name for p in tmp_path.iterdir()] == ["d.jsonl"]  # no temporary file left behind


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0,
                    reason="root reads anything")
def test_unreadable_crawl_dir(tmp_path: Path) -> None:
    crawl = tmp_path / "c"
    crawl.mkdir()
    (crawl / "fetches.jsonl").write_text("")
    crawl.chmod(0)
    try:
        with pytest.raises(InvalidInputError, match="not readable"):
            extract_crawl(crawl, tmp_path / "d.jsonl")
    finally:
        crawl.chmod(0o755)
