"""benchmarks/passage_bench.py end to end on a tiny passage corpus (the 2M run is the bench
command's): builds of ours and tantivy, ranked top-3 latency, a fresh serve's first /retrieve
answer, the ratios and load averages; and the peers' feed of a passage file."""

from __future__ import annotations

import json
from pathlib import Path

import passage_bench
import pytest
import search_bench as sb


@pytest.mark.slow
def test_passage_bench_reports_every_figure(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    rc = passage_bench.main(["--passages", "150", "--queries", "6", "--warmup", "1", "--rounds", "1",
                             "--serve-runs", "1", "--cache", str(tmp_path), "--json", str(out)])
    text = capsys.readouterr().out
    res = json.loads(out.read_text())
    assert rc == 0
    for name in ("ours", "tantivy"):
        b = res["builds"][name]
        assert b["chunks"] == 150 and b["wall_s"] > 0 and b["cpu_s"] > 0 and b["peak_rss_bytes"] > 0
    assert res["builds"]["ours"]["worker_peak_rss_bytes"] > 0  # the 2-thread build's worker counted
    lat = res["latency_ms"]
    assert {"ours", "tantivy"} <= set(lat) and all(0 < r["p50"] <= r["p99"] for r in lat.values())
    if "pisa" in res["skipped"]:
        assert "pisa" not in lat
    else:
        assert {"pisa", "pisa_bmw"} <= set(lat) and res["pisa_build"]["sizes_equal_fts5"] == 150
    assert 0 < res["serve"]["median_s"] == res["serve"]["runs_s"][0] < 60
    assert {"start", "latency", "serve", "end"} <= set(res["load"])
    labels = {c["label"]: c for c in res["checks"]}
    assert labels["build wall ours/tantivy"]["goal"] == "<= 1.5"
    assert labels["build peak RSS ours GB"]["met"] is True
    assert "serve first answer s (median)" in labels and "ranked k=3 p50 ours/tantivy" in labels
    for label in labels:
        assert label in text
    assert "load average" in text
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("passage-bench-")]  # indexes removed


@pytest.mark.parametrize("args", [["--passages", "0"], ["--threads", "3"], ["--engines", "ours"]])
def test_passage_bench_bad_arguments(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        passage_bench.main(args)
    assert e.value.code == 2 and "passage_bench" not in capsys.readouterr().out


def test_peers_feed_passages_as_ours_numbers_them(tmp_path: Path) -> None:
    """tantivy's and PISA's feed (``iter_chunks``) of a passage file: each passage one chunk,
    ``contents`` whole, with ours' chunk rowid (file order, ids unsorted), docid and title."""
    import apsw

    from drsearch.index import build, read_jsonl

    corpus = tmp_path / "p.jsonl"
    lines = [{"id": pid, "contents": f'"T{pid}"\nword{pid} alpha beta'} for pid in ("2", "10", "1")]
    corpus.write_text("".join(json.dumps(d) + "\n" for d in lines))
    build(read_jsonl(corpus), tmp_path / "p.sqlite3")
    chunks = list(sb.iter_chunks(corpus))
    db = apsw.Connection(str(tmp_path / "p.sqlite3"), flags=apsw.SQLITE_OPEN_READONLY)
    ours = list(db.execute("SELECT c.id, d.docid, d.title, d.url FROM chunks c JOIN documents d "
                           "ON d.id = c.doc ORDER BY c.id"))
    db.close()
    assert [(c.rowid, c.docid, c.title, c.url) for c in chunks] == ours
    assert [c.text for c in chunks] == [d["contents"] for d in lines]
