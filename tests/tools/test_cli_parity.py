"""CLI/HTTP parity and the CLI's manners: help on every option, --json on every verb,
`open --offset/--length` exactly as `POST /open`, progress bars with totals on a terminal
and no escape codes anywhere else, bad output directories refused as bad input."""

from __future__ import annotations

import argparse
import functools
import http.server
import io
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drsearch.dev.judge import serve_judge
from drsearch.index import Engine
from drsearch.tools.cli import main, make_parser

from ..helpers import DATA
from ..server.conftest import make_client
from ..terminal import in_terminal, piped
from .test_cli_score import episode_record, write_run

DOCS = DATA / "sample/docs.jsonl"
CRAWL = DATA / "sample/crawl"
QUESTIONS = DATA / "sample/questions.jsonl"
CHUNKS = 268  # chunks of the sample corpus (184 documents: 181 pages + 3 leak artifacts)
DOCUMENTS = 184


def _exe() -> str:
    return shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))


def call(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    return main(list(args), out=buf), buf.getvalue()


def _verbs(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every verb's parser (the leaves of the subcommand tree) with its words."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for sub in subs:
        for name, child in sub.choices.items():
            yield from _verbs(child, (*path, name))


# -- help --------------------------------------------------------------------------------------


def test_every_option_of_every_verb_has_a_help_line() -> None:
    verbs = list(_verbs(make_parser()))
    assert len(verbs) >= 14  # build search open stats serve release×2 validate import corpus×3 run score
    missing = [f"drsearch {' '.join(path)} {'/'.join(a.option_strings) or a.dest}"
               for path, p in verbs for a in p._actions
               if not isinstance(a, argparse._HelpAction)
               and (not a.help or not a.help.strip() or a.help == argparse.SUPPRESS)]
    assert missing == []


# -- --json --------------------------------------------------------------------------------------

# Verbs without --json, and why: their stdout carries no result to print as JSON.
NO_JSON = {("serve",): "its output is the HTTP API itself", ("mcp",): "its output is the MCP protocol itself",
           ("kg", "serve"): "its output is the SPARQL protocol itself",
           ("dev", "model"): "its output is the chat-completions API itself",
           ("dev", "apis"): "its output is the stand-in APIs themselves (its one stdout line is already JSON)",
           ("dev", "domain-apis"): "its output is the stand-in APIs themselves (its stdout line is their URL)",
           ("dev", "wait"): "it prints nothing: its exit status is the answer",
           ("generate", "drbencher"): "its stdout is always the JSON summary (the generators' shared CLI)"}
# `generate drbencher` has verbs of its own (annotate, agreement, ...), so it is no leaf of the verb
# tree; its generator form keeps the exemption above.


def test_every_verb_has_json_or_refuses_it() -> None:
    for path, parser in _verbs(make_parser()):
        flags = {s for a in parser._actions for s in a.option_strings}
        assert ("--json" in flags) != (path in NO_JSON), path
    p = subprocess.run([_exe(), "serve", "--database", "x.sqlite3", "--json"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "unrecognized arguments: --json" in p.stderr.splitlines()[-1]


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parity") / "sample.sqlite3"
    code, out = call("build", str(DOCS), "--out", str(path), "--quiet", "--json")
    assert code == 0
    report = json.loads(out)
    assert out == json.dumps(report, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    with Engine.open(path) as engine:
        assert report["content_identity"] == engine.meta["content_identity"]
    assert report["documents"] == DOCUMENTS and report["chunks"] == CHUNKS and report["path"] == str(path)
    return path


def test_import_json_prints_the_build_report_and_provenance(db: Path, tmp_path: Path) -> None:
    code, out = call("import", "--from", str(DOCS), "--out", str(tmp_path / "i.sqlite3"), "--quiet", "--json")
    assert code == 0
    body = json.loads(out)
    assert body["documents"] == DOCUMENTS and body["chunks"] == CHUNKS
    with Engine.open(db) as engine:
        assert body["content_identity"] == engine.meta["content_identity"]
    assert body["provenance"]["source"]["name"] == DOCS.name


def test_release_manifest_json_is_the_manifest_written(release: Path) -> None:
    code, out = call("release", "manifest", str(release), "--quiet", "--json")
    assert code == 0
    assert json.loads(out) == json.loads((release / "manifest.json").read_bytes())


def test_corpus_build_json(tmp_path: Path) -> None:
    code, out = call("corpus", "build", str(DOCS), "--out", str(tmp_path / "c.sqlite3"), "--quiet", "--json")
    assert code == 0
    body = json.loads(out)
    assert set(body) == {"index", "coverage", "sources"}
    assert body["index"]["chunks"] == CHUNKS and body["coverage"]["documents"] == DOCUMENTS
    assert body["coverage"] == json.loads((tmp_path / "coverage_summary.json").read_bytes())


def test_corpus_fetch_json_is_the_fetch_summary(tmp_path: Path) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "a.html").write_text("<html><head><title>A</title></head><body><p>Some words.</p></body></html>")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *a: None  # type: ignore[assignment]
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        urls = tmp_path / "urls.txt"
        urls.write_text(f"http://127.0.0.1:{server.server_address[1]}/a.html\n")
        try:
            code, out, term = in_terminal("corpus", "fetch", "--urls", str(urls), "--out", str(tmp_path / "crawl"),
                                          "--json")
        finally:
            server.shutdown()
    assert code == 0 and "fetching: 100%" in term and "1/1" in term, term
    body = json.loads(out)
    assert body["run"]["ok"] == 1 and body["urls"] == 1
    assert body == json.loads((tmp_path / "crawl" / "fetch_summary.json").read_bytes())


# -- open --offset/--length = POST /open ------------------------------------------------------

OFFSETS = [None, "0", "10", "368", "369", "370", "100000", "-1", "1.0", "1e1", "1.5", "abc", "true", "+5"]
LENGTHS = [None, "1", "50", "1000000", "2.0", "0", "-3", "2.5", "5_0"]  # None: omitted (JSON null too)


def test_open_pages_exactly_as_http(db: Path) -> None:
    first = json.loads(DOCS.read_text().splitlines()[0])
    docid = first["docid"]
    assert len(first["text"]) == 369  # the edges above are this document's
    client = make_client(db)
    try:
        for offset in OFFSETS:
            for length in LENGTHS:
                fields = [f'"docid": {json.dumps(docid)}']
                args = ["open", "--database", str(db), "--docid", docid, "--json"]
                for name, value in (("offset", offset), ("length", length)):
                    if value is not None:  # the literal a JSON client would send, as typed
                        fields.append(f'"{name}": {value}')
                        args += [f"--{name}", value]
                response = client.post("/open", content=("{" + ", ".join(fields) + "}").encode())
                code, out = call(*args)
                case = (offset, length, response.status_code, response.text[:120])
                if response.status_code == 200:
                    assert code == 0 and out == response.text + "\n", case
                else:
                    assert response.status_code == 422 and code == 2 and out == "", case
    finally:
        client.close()


def test_open_bad_page_is_one_line_exit_2(db: Path) -> None:
    p = piped("open", "--database", str(db), "--docid", "x", "--offset", "-1")
    assert p[0] == 2 and p[2] == "drsearch: error: offset must be an integer in 0..9007199254740991, got -1\n"


def test_open_human_output_names_the_next_page(db: Path) -> None:
    docid = json.loads(DOCS.read_text().splitlines()[0])["docid"]
    code, out = call("open", "--database", str(db), "--docid", docid, "--offset", "10", "--length", "50")
    assert code == 0 and out.endswith("[characters 10-60 of 369; next page: --offset 60]\n")


# -- a missing output directory is bad input -------------------------------------------------


@pytest.mark.parametrize("verb", [["build", str(DOCS)], ["corpus", "build", str(DOCS)],
                                  ["import", "--from", str(DOCS)]])
def test_out_in_a_missing_directory_is_exit_2(verb: list[str], tmp_path: Path) -> None:
    code, out, err = piped(*verb, "--out", str(tmp_path / "nope" / "c.sqlite3"))
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert lines[-1] == f"drsearch: error: directory {tmp_path / 'nope'} does not exist (create it first)"
    # only `import --from FILE.jsonl`, the former spelling of `build`, says so first (one note)
    assert len(lines) == (2 if verb[0] == "import" else 1) and all(x.startswith("drsearch: ") for x in lines)
    assert list(tmp_path.iterdir()) == []


# -- progress: totals on a terminal, nothing raw anywhere else ----------------------------------


def _small_crawl(root: Path, n: int = 4) -> Path:
    """The first ``n`` pages of the bundled sample crawl, as a crawl directory of their own."""
    (root / "bodies").mkdir(parents=True)
    lines = (CRAWL / "fetches.jsonl").read_text().splitlines()[:n]
    for line in lines:
        body = json.loads(line)["body"]
        shutil.copyfile(CRAWL / body, root / body)
    (root / "fetches.jsonl").write_text("".join(line + "\n" for line in lines))
    return root


def _no_escapes(stderr: str) -> None:
    assert "\r" not in stderr and "\x1b" not in stderr, stderr[:300]


def test_build_shows_a_bar_with_its_total_on_a_terminal_only(tmp_path: Path) -> None:
    code, _, term = in_terminal("build", str(DOCS), "--out", str(tmp_path / "a.sqlite3"))
    assert code == 0 and "indexing: 100%" in term and f"{CHUNKS}/{CHUNKS}" in term, term
    code, _, err = piped("build", str(DOCS), "--out", str(tmp_path / "b.sqlite3"))
    assert code == 0 and err == ""
    code, _, term = in_terminal("build", str(DOCS), "--out", str(tmp_path / "c.sqlite3"), "--quiet")
    assert code == 0 and term == ""


def test_corpus_extract_and_build_show_totals(tmp_path: Path) -> None:
    crawl = _small_crawl(tmp_path / "crawl")
    code, out, term = in_terminal("corpus", "extract", str(crawl), "--out", str(tmp_path / "d.jsonl"),
                                  "--workers", "1", "--json")
    assert code == 0 and "extracting: 100%" in term and "4/4" in term, term
    assert json.loads(out)["extracted"] + json.loads(out)["extraction_empty"] + json.loads(out)["skipped"] == 4
    code, _, err = piped("corpus", "extract", str(crawl), "--out", str(tmp_path / "e.jsonl"), "--workers", "1")
    assert code == 0
    _no_escapes(err)
    code, _, term = in_terminal("corpus", "build", str(DOCS), "--out", str(tmp_path / "c.sqlite3"))
    assert code == 0 and "indexing: 100%" in term and f"{CHUNKS}/{CHUNKS}" in term, term
    (tmp_path / "pipe").mkdir()
    code, _, err = piped("corpus", "build", str(DOCS), "--out", str(tmp_path / "pipe" / "c.sqlite3"))
    assert code == 0
    _no_escapes(err)


def test_score_shows_a_grading_bar_and_json_is_scores_json(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in QUESTIONS.read_text().splitlines()]
    run = write_run(tmp_path / "run", [episode_record(r["metadata"]["qid"], r["metadata"]["benchmark"]["index"],
                                                      "answered", r["label"]) for r in rows[:3]])
    with serve_judge() as fake:
        base = ["score", str(run), "--questions", str(QUESTIONS), "--judge-model", "judge-m",
                "--base-url", fake.url, "--backoff", "0"]
        code, out, term = in_terminal(*base, "--judge-cache-mode", "off")
        assert code == 0 and "grading: 100%" in term and f"{len(rows)}/{len(rows)}" in term, term
        assert "accuracy" in out
        code, out, err = piped(*base, "--json", "--judge-cache-mode", "off")
    assert code == 0
    _no_escapes(err)
    scores: dict[str, Any] = json.loads(out)
    assert scores == json.loads((run / "scores.json").read_bytes()) and scores["n"] == len(rows)
