"""The drsearch CLI: exact verb spellings, --json bodies, exit codes, no tracebacks."""

from __future__ import annotations

import io
import json
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from drsearch.contract import canonical_json as dumps
from drsearch.index import Engine
from drsearch.tools.cli import main

from ..helpers import DATA, REPO


def run(*args: str) -> tuple[int, str, str]:
    """Run the installed console script (a real process, as a user would)."""
    exe = shutil.which("drsearch") or str(Path(sys.executable).with_name("drsearch"))
    p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "sample.sqlite3"
    code, out, err = run("build", str(DATA / "sample/docs.jsonl"), "--out", str(path), "--quiet")
    assert code == 0, err
    assert "184 documents" in out
    return path


def test_build_with_two_threads_writes_the_same_bytes(db: Path, tmp_path: Path) -> None:
    two = tmp_path / "two.sqlite3"
    code, out, err = run("build", str(DATA / "sample/docs.jsonl"), "--out", str(two), "--threads", "2", "--quiet")
    assert code == 0, err
    assert "184 documents" in out and two.read_bytes() == db.read_bytes()


def call(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    return main(list(args), out=buf), buf.getvalue()


def test_search_json_is_the_engine_body(db: Path) -> None:
    code, out = call("search", "--database", str(db), "--k", "7", "--json", "video game streaming")
    assert code == 0
    body = json.loads(out)
    assert set(body) == {"query", "k", "results"} and body["k"] == 7 and len(body["results"]) == 7
    assert set(body["results"][0]) == {"rank", "docid", "url", "title", "score", "chunk", "snippet"}
    with Engine.open(db) as e:
        assert out.rstrip("\n") == dumps(e.search("video game streaming", 7).to_dict())


def test_human_output(db: Path) -> None:
    code, out = call("search", "--database", str(db), "video game streaming")
    assert code == 0 and out.lstrip().startswith("1.")
    code, out = call("search", "--database", str(db), "*")
    assert code == 0 and "no results" in out


def test_open_and_stats(db: Path) -> None:
    first = json.loads((DATA / "sample/docs.jsonl").read_text().splitlines()[0])
    code, out = call("open", "--database", str(db), "--docid", first["docid"], "--json")
    body = json.loads(out)
    assert code == 0 and body["text"] == first["text"] and body["total_length"] == len(first["text"])
    scheme, rest = first["url"].split("://", 1)
    host, _, path = rest.partition("/")
    variant = f"{scheme.upper()}://{host.upper()}:443/{path}#x"
    code, out = call("open", "--database", str(db), "--url", variant)
    assert code == 0 and first["title"] in out
    code, out = call("stats", "--database", str(db), "--json")
    assert code == 0 and json.loads(out)["documents"] == 184


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["search", "--database", "{db}", "--k", "0", "flow"], 2, "k must be an integer in 1..100, got"),
        (["search", "--database", "{db}", "--k", "101", "flow"], 2, "k must be an integer in 1..100, got"),
        (["search", "--database", "{db}", "--k", "ten", "flow"], 2, "k must be an integer in 1..100, got \"ten\""),
        (["search", "--database", "{db}", "   "], 2, "query is empty"),
        (["search", "--database", "{tmp}/missing.sqlite3", "flow"], 2, "no such file"),
        (["search", "--database", "{tmp}/junk.sqlite3", "flow"], 2, "not a drsearch index"),
        (["search", "--database", "{db}", "--blocked-docids", "{tmp}/bad.txt", "flow"], 2, ":2: malformed"),
        (["open", "--database", "{db}", "--docid", "nope"], 1, "no document with docid 'nope'"),
        (["open", "--database", "{db}"], 2, "give exactly one of docid or url"),
            (["open", "--database", "{db}", "--docid", "a", "--url", "b"], 2, "give exactly one of docid or url"),
        (["build", "{tmp}/missing.jsonl", "--out", "{tmp}/x.sqlite3"], 2, "cannot read"),
        (["build", "{tmp}/bad.jsonl", "--out", "{tmp}/x.sqlite3", "--quiet"], 2, ":1: not valid JSON"),
        (["build", "{sample}", "--out", "{db}", "--quiet"], 1, "already exists"),
        (["build", "{sample}", "--out", "{tmp}/x.sqlite3", "--threads", "3"], 2, "must be 1 or 2"),
        (["frobnicate"], 2, "invalid choice"),
    ],
)
def test_errors_are_one_line_with_exit_codes(db: Path, tmp_path: Path, args: list[str], code: int,
                                             message: str) -> None:
    (tmp_path / "junk.sqlite3").write_bytes(b"junk" * 1000)
    (tmp_path / "bad.txt").write_text("ok\nnot ok\n")
    (tmp_path / "bad.jsonl").write_text("{oops\n")
    fmt = {"db": str(db), "tmp": str(tmp_path), "sample": str(DATA / "sample/docs.jsonl")}
    rc, _, err = run(*(a.format(**fmt) for a in args))
    assert rc == code, err
    assert message in err
    assert "Traceback" not in err
    if rc != 2 or "usage" not in err:
        assert len(err.strip().splitlines()) == 1, err


def test_readme_names_the_commands_ci_runs() -> None:
    readme = (REPO / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    assert (REPO / ".ci/run").read_text().strip().endswith("make test")


@pytest.mark.slow
def test_make_demo_runs_the_main_job() -> None:
    """README's first command, as CI's checkout has it (skipped where make or the venv is absent)."""
    if shutil.which("make") is None or not (REPO / ".venv/.installed-dev").exists():
        pytest.skip("needs make and the project's .venv (created by `make test`)")
    p = subprocess.run(["make", "-s", "demo"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "documents: 184" in p.stdout
    assert "  1. " in p.stdout and "stadia" in p.stdout.lower()
    # the whole main job: served, run by the scripted agent over HTTP, graded, and where to look
    assert "total                          12" in p.stdout and "accuracy   " in p.stdout, p.stdout
    assert "demo-out/run/trajectories.jsonl" in p.stdout and "docs/QUICKSTART.md" in p.stdout
    # it ends with the report: where it is, and the next commands
    assert "wrote demo-out/report/index.html (12 episode(s)" in p.stdout
    assert "demo-out/report/index.html        open it in a browser" in p.stdout.split("Next:")[0]
    assert "drsearch report RUN_A RUN_B" in p.stdout.split("Next:")[1]
    assert (REPO / "demo-out/report/index.html").is_file() and (REPO / "demo-out/report/episodes.csv").is_file()
    urls = p.stdout.split("search server ", 1)[1].split("\n", 1)[0]
    ports = [int(u.split(":")[2].split("/")[0]) for u in urls.replace(",", " ").split() if u.startswith("http")]
    assert len(ports) == 3
    for port in ports:  # every server the demo started is stopped
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0, port
