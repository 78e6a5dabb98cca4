"""A cache that was edited is not replayed: row digests, corrupt_cache, `drsearch cache verify|upgrade`."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from drsearch.dev.chat import serve_fake
from drsearch.tools.cli import main

from .conftest import BLOCKED, QUESTIONS


def run(out: Path, *extra: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    rc = main(["run", "--questions", str(QUESTIONS), "--out", str(out), "--quiet", "--json",
               "--max-attempts", "2", "--backoff", "0.01", *extra])
    got = capsys.readouterr()
    return rc, got.out, got.err


@pytest.fixture(scope="module")
def recorded(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of the 12 sample questions, every one answered ``answer-N`` (cache recorded)."""
    import contextlib
    import io

    from drsearch.tools.cli import main as cli

    out = tmp_path_factory.mktemp("cache") / "recorded"
    with serve_fake({}) as fake, contextlib.redirect_stdout(io.StringIO()):
        rc = cli(["run", "--questions", str(QUESTIONS), "--database", str(sample_index), "--blocked-docids",
                  str(BLOCKED), "--model", "fake-model", "--base-url", fake.url, "--out", str(out), "--quiet"])
    assert rc == 0
    return out


def answers(out: Path) -> list[Any]:
    return [json.loads(line)["final_answer"] for line in (out / "trajectories.jsonl").read_text().splitlines()]


def forge(cache: Path) -> list[str]:
    """Edit the 12 responses that carry a final answer, as a careless hand would; their keys."""
    with sqlite3.connect(cache) as db:
        rows = db.execute("SELECT key, body FROM responses WHERE kind = 'llm' AND "
                          "instr(body, CAST('answer-' AS BLOB)) > 0").fetchall()
        for key, body in rows:
            db.execute("UPDATE responses SET body = ? WHERE key = ?",
                       (bytes(body).replace(b"answer-", b"forged-"), key))
    return sorted(key for key, _ in rows)


@pytest.fixture
def forged(recorded: Path, tmp_path: Path) -> tuple[Path, list[str]]:
    src = tmp_path / "forged"
    shutil.copytree(recorded, src)
    keys = forge(src / "cache.sqlite3")
    assert len(keys) == 12
    return src, keys


def test_an_edited_cache_is_not_replayed(forged: tuple[Path, list[str]], tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    src, keys = forged
    out = tmp_path / "replayed"
    rc, _, err = run(out, "--replay", str(src), capsys=capsys)
    assert rc == 2 and err.count("\n") == 1, err
    assert "does not match its digest" in err
    assert str(src / "cache.sqlite3") in err and any(k in err for k in keys)
    done = (out / "trajectories.jsonl")
    assert not done.exists() or not any(str(a).startswith("forged-") for a in answers(out))


def test_an_edited_row_is_not_refetched_either(forged: tuple[Path, list[str]], sample_index: Path,
                                               tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src, _ = forged
    with serve_fake({}) as fake:
        rc, _, err = run(tmp_path / "again", "--database", str(sample_index), "--blocked-docids", str(BLOCKED),
                         "--model", "fake-model", "--base-url", fake.url, "--cache-mode", "replay-then-live",
                         "--cache", str(src / "cache.sqlite3"), capsys=capsys)
        chats = [b for b in fake.requests if b.get("messages")]
    assert rc == 2 and "does not match its digest" in err
    assert len(chats) <= 1  # the probe at most: the edited answer was neither replayed nor asked again


def test_cache_verify(recorded: Path, forged: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "verify", str(recorded)]) == 0  # a run directory: its cache.sqlite3
    got = capsys.readouterr().out
    assert "every row matches its digest" in got and "llm " in got and "tool " in got
    src, keys = forged
    assert main(["cache", "verify", str(src / "cache.sqlite3")]) == 2
    got2 = capsys.readouterr()
    assert [k for k in keys if k in got2.out] == keys
    assert "12 bad row(s)" in got2.err and got2.err.count("\n") == 1
    assert main(["cache", "verify", "--json", str(src / "cache.sqlite3")]) == 2
    (report,) = json.loads(capsys.readouterr().out)["caches"]
    assert sorted(b["key"] for b in report["bad"]) == keys
    assert main(["cache", "verify", str(src / "nothing-here")]) == 2
    assert "no such cache file" in capsys.readouterr().err


def _unsign(cache: Path) -> None:
    """Rewrite ``cache`` as a cache from before row digests."""
    with sqlite3.connect(cache) as db:
        db.execute("CREATE TABLE old (key TEXT PRIMARY KEY, kind TEXT NOT NULL, call TEXT NOT NULL, "
                   "ok INTEGER NOT NULL, body BLOB NOT NULL)")
        db.execute("INSERT INTO old SELECT key, kind, call, ok, body FROM responses")
        db.execute("DROP TABLE responses")
        db.execute("ALTER TABLE old RENAME TO responses")


def test_an_old_cache_is_refused_until_upgraded(recorded: Path, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "old"
    shutil.copytree(recorded, src)
    _unsign(src / "cache.sqlite3")
    rc, _, err = run(tmp_path / "r1", "--replay", str(src), capsys=capsys)
    assert rc == 2 and f"drsearch cache upgrade {src / 'cache.sqlite3'}" in err
    assert main(["cache", "verify", str(src)]) == 2
    assert "from before row digests" in capsys.readouterr().err
    assert main(["cache", "upgrade", str(src / "cache.sqlite3")]) == 0
    assert "signed" in capsys.readouterr().out
    assert main(["cache", "verify", str(src)]) == 0
    capsys.readouterr()
    rc, _, err = run(tmp_path / "r2", "--replay", str(src), capsys=capsys)
    assert rc == 0, err
    assert answers(tmp_path / "r2") == answers(recorded)


def test_the_library_refuses_edits_in_every_reading_mode(tmp_path: Path) -> None:
    from drsearch.agents import CorruptCacheError, ReplayCache, UnsignedCacheError, verify_cache

    path = tmp_path / "c.sqlite3"
    cache = ReplayCache(path, "record")
    cache.fetch("llm", ["k"], "call k", lambda: (True, b"recorded"))
    cache.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE responses SET body = ?", (b"edited",))
    asked: list[str] = []

    def live() -> tuple[bool, bytes]:
        asked.append("live")
        return True, b"live"

    for mode in ("replay", "replay-then-live"):
        c = ReplayCache(path, mode)  # type: ignore[arg-type]
        with pytest.raises(CorruptCacheError, match=rf"{path}: cache row [0-9a-f]{{64}} \(call k\)"):
            c.fetch("llm", ["k"], "call k", live)
        c.close()
    assert asked == []  # never silently refetched
    check = verify_cache(path)
    assert check.rows == {"llm": 1} and len(check.bad) == 1
    with sqlite3.connect(path) as db:  # a row moved to another key is caught too
        db.execute("UPDATE responses SET body = ?, key = ?", (b"recorded", "0" * 64))
    assert len(verify_cache(path).bad) == 1
    _unsign(path)
    with pytest.raises(UnsignedCacheError):
        ReplayCache(path, "replay")
    with pytest.raises(UnsignedCacheError):
        ReplayCache(path, "record")  # a new signed row beside unsigned ones would hide them


def test_the_judge_cache_is_checked_too(tmp_path: Path) -> None:
    from drsearch.agents import CorruptCacheError
    from drsearch.benchmark.judge_cache import JudgeCache

    path = tmp_path / "judge_cache.sqlite3"
    with JudgeCache(path, "record") as jc:
        jc.fetch("judge-model", "p" * 64, {"answer": "42"}, "q1", lambda: (True, b'{"correct": "no"}'))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE responses SET body = ?", (b'{"correct": "yes"}',))
    with JudgeCache(path, "replay-then-live") as jc, pytest.raises(CorruptCacheError):
        jc.fetch("judge-model", "p" * 64, {"answer": "42"}, "q1", lambda: (True, b"live"))
    assert main(["cache", "verify", str(tmp_path)]) == 2  # a directory: its judge_cache.sqlite3
