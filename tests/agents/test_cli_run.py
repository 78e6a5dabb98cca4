"""`drsearch run` usage errors: one line on stderr, exit 2, never a traceback."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from drsearch.tools.cli import main

from .conftest import QUESTIONS

LIVE = ["--database", "{index}", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]


def write_bad_inputs(tmp: Path) -> None:
    presets = {"bad": {"base": "dr256", "max_turns": 0}, "page": {"base": "dr256", "open_page_chars": 20000},
               "base": {"base": "dr1"}, "list": [1], "browse": {"base": "dr256", "tools": ["search", "browse"]},
               "twotools": {"base": "closed-book", "tools": ["open", "open"]}}
    for name, body in presets.items():
        (tmp / f"{name}.json").write_text(json.dumps(body))
    (tmp / "text.json").write_text("max_turns = 3\n")
    first = QUESTIONS.read_bytes().splitlines(keepends=True)[0]
    (tmp / "latin1.jsonl").write_bytes(first + "\u00e9t\u00e9\n".encode("latin-1"))
    row = json.loads(first)
    row["metadata"]["qid"], row["metadata"]["benchmark"]["index"] = 5, "first"
    (tmp / "typed.jsonl").write_text(json.dumps(row) + "\n")
    (tmp / "twice.jsonl").write_bytes(first + first)
    (tmp / "a-file").write_text("")


@pytest.mark.parametrize("args,message", [
    ([], "give --search URL or --database CORPUS"),
    (["--database", "x.sqlite3"], "give --model and --base-url"),
    (["--database", "x.sqlite3", "--model", "m", "--base-url", "http://h/v1", "--preset", "nope"], "unknown preset"),
    (["--database", "x.sqlite3", "--model", "m", "--base-url", "http://h/v1", "--concurrency", "0"],
     "--concurrency: Input should be greater than or equal to 1"),
    (["--replay", "{tmp}/nothing"], "--replay: cannot read"),
    ([*LIVE, "--limit", "0"], "--limit: Input should be greater than or equal to 1"),
    ([*LIVE, "--max-attempts", "0"], "--max-attempts: Input should be greater than or equal to 1"),
    ([*LIVE, "--backoff", "-1"], "--backoff: Input should be greater than or equal to 0"),
    (["--database", "x", "--model", "m", "--base-url", "localhost:8000/v1"], "--base-url: 'localhost:8000/v1' is "
     "not an http:// or https:// URL"),
    (["--search", "ftp://h", "--model", "m", "--base-url", "http://h/v1"], "--search: 'ftp://h' is not an http"),
    (["--search", "http://h", "--blocked-docids", "b.txt", "--model", "m", "--base-url", "http://h/v1"],
     "--blocked-docids goes with --database"),
    ([*LIVE, "--ids", "q-nope"], "--ids: no such question(s): q-nope"),
    ([*LIVE, "--cache-mode", "replay", "--cache", "{tmp}/none.sqlite3"], "none.sqlite3: no replay cache there"),
    ([*LIVE, "--preset", "{tmp}/missing.json"], "unknown preset"),
    ([*LIVE, "--preset", "{tmp}/bad.json"], "bad.json: max_turns: Input should be greater than or equal to 1"),
    ([*LIVE, "--preset", "{tmp}/page.json"], "open_page_chars must not exceed max_tool_response_chars"),
    ([*LIVE, "--preset", "{tmp}/base.json"], "unknown base 'dr1'"),
    ([*LIVE, "--preset", "{tmp}/browse.json"], "browse.json: tools: unknown tool 'browse' (tools: search, open, python, pubmed"),
    ([*LIVE, "--preset", "{tmp}/twotools.json"], "twotools.json: tools: a tool is listed twice"),
    ([*LIVE, "--preset", "{tmp}/list.json"], "expected a JSON object"),
    ([*LIVE, "--preset", "{tmp}/text.json"], "text.json: not readable JSON"),
    ([*LIVE, "--api-key-env", "DRSEARCH_TEST_UNSET_VARIABLE"], "DRSEARCH_TEST_UNSET_VARIABLE is not set"),
    ([*LIVE, "--questions", "{tmp}/latin1.jsonl"], "latin1.jsonl:2: not UTF-8"),
    ([*LIVE, "--questions", "{tmp}/typed.jsonl"], "typed.jsonl:1: not a DR-256 question row (qid: Input should be "
     "a valid string; index: Input should be a valid integer"),
    ([*LIVE, "--questions", "{tmp}/twice.jsonl"], "duplicate question qid"),
    ([*LIVE, "--out", "{tmp}/a-file"], "cannot make the run directory"),
])
def test_usage_errors(args: list[str], message: str, tmp_path: Path, sample_index: Path) -> None:
    write_bad_inputs(tmp_path)
    args = [str(sample_index) if a == "{index}" else a for a in args]
    err = io.StringIO()
    argv = ["run", "--questions", str(QUESTIONS), "--out", str(tmp_path / "out"), "--quiet",
            *(a.format(tmp=tmp_path) for a in args)]
    with contextlib.redirect_stderr(err):
        rc = main(argv, out=io.StringIO())
    assert rc == 2, err.getvalue()
    assert message in err.getvalue() and "Traceback" not in err.getvalue()
    assert len(err.getvalue().strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_an_unreachable_search_server_leaves_no_run_directory(tmp_path: Path) -> None:
    err = io.StringIO()
    argv = ["run", "--questions", str(QUESTIONS), "--out", str(tmp_path / "out"), "--quiet",
            "--search", "http://127.0.0.1:9", "--model", "m", "--base-url", "http://127.0.0.1:9/v1"]
    with contextlib.redirect_stderr(err):
        rc = main(argv, out=io.StringIO())
    assert rc == 1, err.getvalue()
    assert "GET /health failed after 4 attempts" in err.getvalue() and "Traceback" not in err.getvalue()
    assert len(err.getvalue().strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
