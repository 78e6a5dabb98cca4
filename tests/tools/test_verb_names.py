"""One verb per job: `compare` and `agreement` are verbs of their own, `build`
is the one name for indexing a JSONL file, and the former spellings (`score --compare`,
`score --agreement`, `import --from FILE.jsonl`) still work, with one line on stderr naming
the new verb, the same output and the same exit code. README's table names real verbs."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sqlite3
from pathlib import Path

import pytest

from drsearch.tools.cli import main

from ..helpers import DATA, REPO
from .test_cli_score import QIDS, QUESTIONS, episode_record, write_run

NOTE = re.compile(r"^drsearch: note: `drsearch (.+?)` is now `drsearch (\w+)")


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = main(list(argv), out=out)
    return rc, out.getvalue(), err.getvalue()


def notes(stderr: str) -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for line in stderr.splitlines() if (m := NOTE.match(line))]


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Two hand-written runs of 4 questions graded by the numeric judge, and a second grading of A."""
    root = tmp_path_factory.mktemp("verbs")
    a = write_run(root / "a", [episode_record(q, i, "answered", ans) for i, (q, ans)
                               in enumerate(zip(QIDS[:4], ["30", "28", "7", "1"], strict=True))])
    b = write_run(root / "b", [episode_record(q, i, "answered", ans) for i, (q, ans)
                               in enumerate(zip(QIDS[:4], ["31", "28", "7", "1"], strict=True))])
    for run in (a, b):
        rc, _, err = cli("score", str(run), "--questions", str(QUESTIONS), "--judge", "numeric", "--quiet")
        assert rc == 0, err
    rc, _, err = cli("score", str(a), "--questions", str(QUESTIONS), "--judge", "numeric", "--tolerance", "0.5",
                     "--out", str(a / "scores-loose.json"), "--quiet")
    assert rc == 0, err
    return {"a": a, "b": b, "a2": a / "scores-loose.json"}


@pytest.mark.parametrize("json_flag", [[], ["--json"]])
def test_compare_is_a_verb_and_score_compare_its_alias(graded: dict[str, Path], json_flag: list[str]) -> None:
    new = cli("compare", str(graded["a"]), str(graded["b"]), *json_flag)
    old = cli("score", "--compare", str(graded["a"]), str(graded["b"]), *json_flag)
    assert new[0] == old[0] == 0 and new[1] == old[1]
    assert notes(new[2]) == [] and new[2] == ""
    assert notes(old[2]) == [("score --compare", "compare")] and old[2].count("\n") == 1
    if json_flag:  # every question of the file pairs (the unanswered ones as missing episodes)
        assert json.loads(new[1])["n_paired"] == 12
    else:
        assert "McNemar" in new[1]


def test_agreement_is_a_verb_and_score_agreement_its_alias(graded: dict[str, Path]) -> None:
    new = cli("agreement", str(graded["a"] / "scores.json"), str(graded["a2"]), "--json")
    old = cli("score", "--agreement", str(graded["a"] / "scores.json"), str(graded["a2"]), "--json")
    assert new[0] == old[0] == 0 and new[1] == old[1] and json.loads(new[1])["n"] == 2
    assert new[2] == "" and notes(old[2]) == [("score --agreement", "agreement")]


@pytest.mark.parametrize("new_argv, old_argv", [
    (["compare", "nowhere-a", "nowhere-b"], ["score", "--compare", "nowhere-a", "nowhere-b"]),
    (["agreement", "nowhere-a", "nowhere-b"], ["score", "--agreement", "nowhere-a", "nowhere-b"]),
])
def test_old_and_new_spellings_fail_alike(new_argv: list[str], old_argv: list[str]) -> None:
    new, old = cli(*new_argv), cli(*old_argv)
    assert new[0] == old[0] == 2
    assert new[2].splitlines()[-1] == old[2].splitlines()[-1]  # the same one-line error


def test_compare_majority_keeps_its_checks(graded: dict[str, Path]) -> None:
    new = cli("compare", str(graded["a"]), str(graded["b"]), "--majority")
    old = cli("score", "--compare", str(graded["a"]), str(graded["b"]), "--majority")
    assert new[0] == old[0] == 2 and new[2].splitlines()[-1] == old[2].splitlines()[-1]


def test_compare_takes_exactly_two_runs() -> None:
    with pytest.raises(SystemExit) as e, contextlib.redirect_stderr(io.StringIO()):
        main(["compare", "only-one"])
    assert e.value.code == 2


def test_import_of_a_jsonl_file_is_build_s_alias(tmp_path: Path) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join((DATA / "sample/docs.jsonl").read_text().splitlines(keepends=True)[:5]))
    rc, out, err = cli("build", str(docs), "--out", str(tmp_path / "built.sqlite3"), "--quiet", "--json")
    assert rc == 0 and err == "", err
    built = json.loads(out)
    rc, out, err = cli("import", "--from", str(docs), "--out", str(tmp_path / "imported.sqlite3"), "--quiet",
                       "--json")
    assert rc == 0, err
    assert notes(err) == [("import --from FILE.jsonl", "build")] and err.count("\n") == 1
    assert json.loads(out)["content_identity"] == built["content_identity"]
    # a bad input exits as it did (2), note or not
    rc, _, err = cli("import", "--from", str(docs), "--out", str(tmp_path / "nowhere/x.sqlite3"))
    assert rc == 2 and "does not exist" in err


def test_import_of_a_sqlite_table_prints_no_note(tmp_path: Path) -> None:
    src = tmp_path / "other.sqlite3"
    with sqlite3.connect(src) as db:
        db.execute("CREATE TABLE pages (id TEXT, url TEXT, body TEXT)")
        db.execute("INSERT INTO pages VALUES ('d1', 'https://example.org/1', 'some words here')")
    rc, _, err = cli("import", "--from", str(src), "--table", "pages", "--docid-col", "id", "--url-col", "url",
                     "--text-col", "body", "--out", str(tmp_path / "x.sqlite3"), "--quiet")
    assert rc == 0, err
    assert notes(err) == []


def _table_rows() -> list[list[str]]:
    text = (REPO / "README.md").read_text()
    section = text.split("### Which verb does what", 1)[1].split("\n\n", 2)[2]
    rows = [line for line in section.splitlines() if line.startswith("|")][2:]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows]


def _command(cell: str) -> str:
    """The command words of a table cell (`compare RUN_A RUN_B` -> compare)."""
    words = []
    for word in cell.strip("`").split():
        if not re.fullmatch(r"[a-z]+", word):
            break
        words.append(word)
    return " ".join(words)


def test_readme_table_names_verbs_that_exist_and_aliases_that_note() -> None:
    rows = _table_rows()
    commands = {_command(r[1]) for r in rows}
    assert {"build", "corpus build", "import", "score", "compare", "agreement", "leaderboard", "report",
            "calibrate", "construct calibrate", "generate openbiorq", "release templates", "validate"} == commands
    for command in commands:
        with pytest.raises(SystemExit) as e, contextlib.redirect_stdout(io.StringIO()):
            main([*command.split(), "--help"])
        assert e.value.code == 0, command
    aliases = {" ".join(r[2].strip("`").split()[:2]) for r in rows if r[2] != "—"}
    assert aliases == {"import --from", "score --compare", "score --agreement", "score --leaderboard"}


def test_top_level_help_lists_each_job_s_verb_and_points_at_the_table() -> None:
    buf = io.StringIO()
    with pytest.raises(SystemExit) as e, contextlib.redirect_stdout(buf):
        main(["--help"])
    assert e.value.code == 0
    text = buf.getvalue()
    for verb in ("build", "corpus", "import", "score", "compare", "agreement", "calibrate"):
        assert re.search(rf"^\s+{verb}\b", text, re.M), verb
    assert "Which verb does what" in text
    assert max(len(line) for line in text.splitlines()) <= 100
