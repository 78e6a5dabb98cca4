"""SOURCES.jsonl: the fixture reads; malformed lines name file:line; unknown tracks and
identifier prefixes are all listed; the CLI exits 2 with one line and writes nothing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from drsearch.benchmark.generate.openbiorq import read_sources
from drsearch.benchmark.generate.openbiorq.sources import id_kind
from drsearch.contract import InvalidInputError

from .conftest import SOURCES, generate, jsonl


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_the_fixture_reads_with_every_identifier_kind() -> None:
    sources = read_sources(SOURCES)
    assert len(sources) == 10
    assert [s.id_kind for s in sources].count("pmid") == 4
    assert {s.id_kind for s in sources} == {"pmid", "nct", "arxiv", "other"}
    assert {s.track for s in sources} == {"retrieval_verified", "expert_consensus"}  # the paper's tracks


@pytest.mark.parametrize(("bad", "message"), [
    ("{not json", r":2: not valid JSON"),
    ('["a list"]', r":2: a line must be a JSON object"),
    ({"source_id": "PMID:5", "track": "clinical", "title": "t"}, r":2: text: Field required"),
    ({"source_id": "PMID:5", "track": "clinical", "title": "t", "text": ""}, r":2: text: String should have"),
    ({"source_id": "PMID 5", "track": "clinical", "title": "t", "text": "x"}, r":2: source_id: String should match"),
    ({"source_id": "PMID:5", "track": "clinical", "title": "t", "text": "x", "year": "2020"}, r":2: year"),
])
def test_a_malformed_line_names_file_and_line(tmp_path: Path, bad: Any, message: str) -> None:
    path = write(tmp_path / "s.jsonl", [jsonl(SOURCES)[0], bad])
    with pytest.raises(InvalidInputError, match=f"^{path}{message}"):
        read_sources(path)


def test_unknown_tracks_and_prefixes_are_all_listed(tmp_path: Path) -> None:
    rows = jsonl(SOURCES)[:4]
    rows[1]["track"] = "oncology"
    rows[2]["source_id"] = "PMC123"
    rows[3]["source_id"] = "NCT123"  # a known prefix, not the shape of a registration number
    path = write(tmp_path / "s.jsonl", rows)
    with pytest.raises(InvalidInputError) as e:
        read_sources(path)
    assert e.value.message == (
        f"{path}: unknown track(s) 'oncology' (line 2); known: retrieval_verified, expert_consensus, "
        "priority_setting, expand; unknown "
        "identifier prefix or shape 'PMC123' (line 3), 'NCT123' (line 4); known: PMID:<digits>, NCT<8 digits>, "
        "arXiv:<id>, doi:<doi>, DOC:<name>")
    rows[0]["track"] = rows[1]["track"] = "clinical"
    assert read_sources(write(tmp_path / "t.jsonl", rows[:2]), ("clinical",))[1].track == "clinical"


def test_duplicate_source_ids_and_empty_files(tmp_path: Path) -> None:
    row = jsonl(SOURCES)[0]
    with pytest.raises(InvalidInputError, match=r"duplicate source ids \['PMID:31000001'\]"):
        read_sources(write(tmp_path / "d.jsonl", [row, row]))
    with pytest.raises(InvalidInputError, match="no sources"):
        read_sources(write(tmp_path / "e.jsonl", []))


@pytest.mark.parametrize("stage", ["extract", "all"])
def test_cli_bad_sources_exit_2_with_one_line_and_nothing_written(tmp_path: Path, stage: str) -> None:
    evidence = ("--evidence-corpus", "http://127.0.0.1:9")
    rows = jsonl(SOURCES)[:2]
    rows[1]["track"] = "oncology"
    bad = write(tmp_path / "s.jsonl", rows)
    out = tmp_path / "obrq"
    rc, _, err = generate(stage, out, *evidence, sources=bad)
    assert rc == 2 and err.count("\n") == 1 and "unknown track(s) 'oncology' (line 2)" in err
    malformed = write(tmp_path / "m.jsonl", [rows[0], "{oops"])
    rc, _, err = generate(stage, out, *evidence, sources=malformed)
    assert rc == 2 and err == f"drsearch: error: {malformed}:2: not valid JSON " \
                              f"(Expecting property name enclosed in double quotes: line 1 column 2 (char 1))\n"
    rc, _, err = generate(stage, out, *evidence, sources=tmp_path / "none.jsonl")
    assert rc == 2 and "none.jsonl: no such file" in err
    assert not out.exists()


def test_cli_bad_options_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "obrq"
    bad = tmp_path / "tax.json"
    bad.write_text('{"not": "a list"}')
    rc, _, err = generate("extract", out, "--taxonomy", str(bad))
    assert rc == 2 and err == f"drsearch: error: --taxonomy {bad}: needs a JSON list of class names\n"
    rc, _, err = generate("extract", out, base_url="ftp://x")
    assert rc == 2 and err.startswith("drsearch: error: --base-url: ") and err.count("\n") == 1
    rc, _, err = generate("extract", out, "--cache-mode", "replay")
    assert rc == 2 and "no replay cache there" in err
    rc, _, err = generate("openness", out)
    assert rc == 2 and err.startswith("drsearch: error: the openness stage needs evidence: --evidence-corpus URL")
    rc, _, err = generate("all", out, "--evidence-corpus", "http://127.0.0.1:9", "--inject-controls",
                          str(tmp_path / "nope.jsonl"))
    assert rc == 2 and err == f"drsearch: error: --inject-controls {tmp_path / 'nope.jsonl'}: no such file\n"
    assert not out.exists()


def test_the_summary_without_json_is_a_short_table(tmp_path: Path) -> None:
    import contextlib
    import io

    from drsearch.dev.chat import serve_rules
    from drsearch.tools.cli import main

    from .rules import RULES

    buf, again = io.StringIO(), io.StringIO()
    with serve_rules(RULES) as r, contextlib.redirect_stdout(buf):
        rc = main(["generate", "openbiorq", "refine", str(tmp_path / "o"), "--sources", str(SOURCES),
                   "--base-url", r.url], out=buf)
        rerun = main(["generate", "openbiorq", "refine", str(tmp_path / "o"), "--sources", str(SOURCES),
                      "--base-url", r.url], out=again)  # nothing run now: no calls to report
    assert rc == 0
    # each stage run now with its model calls (10 sources, 14 questions: one call each), tokens and time
    assert re.fullmatch(r"ran extract, refine; skipped nothing\n"
                        r"   extract: 10 in, 9 out \(rejected: 1 unparseable\); 10 calls \(0 cached\), \d+ tokens, "
                        r"\d+\.\d s\n"
                        r"    refine: 14 in, 13 out \(rejected: 1 unparseable\); 14 calls \(0 cached\), \d+ tokens, "
                        r"\d+\.\d s\n", buf.getvalue()), buf.getvalue()
    assert rerun == 0 and again.getvalue() == ("ran nothing; skipped extract, refine\n"
                                           "   extract: 10 in, 9 out (rejected: 1 unparseable)\n"
                                           "    refine: 14 in, 13 out (rejected: 1 unparseable)\n")


@pytest.mark.parametrize(("source_id", "kind"), [
    ("arXiv:2301.00005", "arxiv"), ("arXiv:2301.00005v2", "arxiv"), ("arXiv:0704.0001", "arxiv"),
    ("arXiv:hep-th/9901001", "arxiv"), ("arXiv:hep-th/9901001v3", "arxiv"),
    ("arXiv:math.GT/0309136", "arxiv"), ("arXiv:cs.AI/0101001v1", "arxiv"),  # old ids with a subject class
    ("arXiv:2301.5", None), ("arXiv:hep-th/99", None), ("arXiv:HEP-TH/9901001", None),
])
def test_arxiv_source_ids(source_id: str, kind: str | None) -> None:
    """Every arXiv id form the citation audit recognises can be a source (its wrong-paper rate)."""
    assert id_kind(source_id) == kind
