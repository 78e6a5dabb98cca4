"""``drsearch search --topics`` and ``drsearch eval``: Cranfield as an ordinary user runs it."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from drsearch.compat import evaluate, read_qrels, read_run
from drsearch.tools.cli import main

from .test_cli_parity import in_terminal, piped


def call(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    return main(list(args), out=buf), buf.getvalue()


@pytest.fixture(scope="module")
def small_topics(tmp_path_factory: pytest.TempPathFactory, cran_topics: Path) -> Path:
    path = tmp_path_factory.mktemp("small") / "topics.tsv"
    path.write_text("".join(cran_topics.read_text().splitlines(keepends=True)[:30]))
    return path


def test_run_file_is_the_same_bytes_for_any_thread_count(cran_index: Path, cran_topics: Path,
                                                         cran_qrels: Path, tmp_path: Path) -> None:
    runs = []
    for threads in ("1", "3"):
        out = tmp_path / f"run{threads}.trec"
        code, text = call("search", "--database", str(cran_index), "--topics", str(cran_topics),
                          "--output", str(out), "--threads", threads, "--run-tag", "bm25", "--json")
        assert code == 0
        summary = json.loads(text)
        assert summary["queries"] == 225 and summary["k"] == 1000 and summary["queries_without_results"] == 0
        runs.append(out.read_bytes())
        assert summary["lines"] == len(runs[-1].splitlines())
    assert runs[0] == runs[1]
    first = runs[0].decode().splitlines()[0].split()
    assert first[:2] == ["1", "Q0"] and first[3] == "1" and first[5] == "bm25"
    code, text = call("eval", "--qrels", str(cran_qrels), "--run", str(tmp_path / "run1.trec"), "--json")
    assert code == 0
    body = json.loads(text)
    expected = evaluate(read_qrels(cran_qrels), read_run(tmp_path / "run1.trec"))
    assert body == {"ignored": 0, "means": expected.means, "missing": 0, "queries": 225}
    code, text = call("eval", "--qrels", str(cran_qrels), "--run", str(tmp_path / "run1.trec"))
    assert code == 0 and f"ndcg@10      {expected.means['ndcg@10']:.4f}" in text and "225 (0 missing" in text


def test_k_and_existing_output(cran_index: Path, small_topics: Path, tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run.trec"
    args = ["search", "--database", str(cran_index), "--topics", str(small_topics), "--output", str(out)]
    assert call(*args, "--k", "5")[0] == 0
    assert len(out.read_text().splitlines()) == 30 * 5
    before = out.read_bytes()
    assert call(*args)[0] == 2  # already there: nothing written is lost
    assert "exists (pass --force" in capsys.readouterr().err
    assert out.read_bytes() == before
    assert call(*args, "--force", "--k", "2")[0] == 0 and len(out.read_text().splitlines()) == 60


@pytest.mark.parametrize(("extra", "message"), [
    (["QUERY"], "either QUERY or --topics"),
    (["--k", "0"], "k must be an integer in 1..10000, got 0"),
    (["--k", "10001"], "k must be an integer in 1..10000, got 10001"),
    (["--run-tag", "two words"], "run tag 'two words'"),
    (["--topics", "MISSING"], "MISSING: no such file"),
    (["--topics", "BAD"], ":2: expected 'qid<TAB>query'"),
    (["--output", "NODIR"], "does not exist (create it first)"),
    (["--blocked-docids", "MISSING"], "MISSING"),
])
def test_bad_batch_input_is_one_line_exit_2(cran_index: Path, small_topics: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str], extra: list[str],
                                            message: str) -> None:
    (tmp_path / "bad.tsv").write_text("1\tok\nno tab\n")
    subst = {"MISSING": str(tmp_path / "missing.tsv"), "BAD": str(tmp_path / "bad.tsv"),
             "NODIR": str(tmp_path / "no" / "run.trec")}
    extra = [subst.get(a, a) for a in extra]
    args = ["search", "--database", str(cran_index), "--topics", str(small_topics),
            "--output", str(tmp_path / "run.trec")]
    for flag in ("--topics", "--output"):
        if flag in extra:
            i = args.index(flag)
            del args[i: i + 2]
    code, _ = call(*args, *extra)
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and message.replace("MISSING", "") in err, err
    assert not (tmp_path / "run.trec").exists()


@pytest.mark.parametrize(("args", "message"), [
    (["search", "--database", "DB", "--output", "x.trec", "q"], "--output: only with --topics"),
    (["search", "--database", "DB", "--threads", "2", "q"], "--threads: only with --topics"),
    (["search", "--database", "DB"], "give a QUERY, or --topics"),
    (["search", "--database", "DB", "--topics", "T"], "--topics needs --output"),
    (["eval", "--qrels", "BADQ", "--run", "BADQ"], ":1: relevance 'x' is not an integer"),
])
def test_mode_errors_are_one_line_exit_2(cran_index: Path, small_topics: Path, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str], args: list[str],
                                         message: str) -> None:
    (tmp_path / "bad.qrels").write_text("1 0 d x\n")
    subst = {"DB": str(cran_index), "T": str(small_topics), "BADQ": str(tmp_path / "bad.qrels")}
    code, _ = call(*[subst.get(a, a) for a in args])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and message in err, err


def test_single_query_search_is_unchanged(cran_index: Path) -> None:
    code, text = call("search", "--database", str(cran_index), "--json", "boundary layer")
    assert code == 0 and json.loads(text)["k"] == 10


def test_progress_bar_on_a_terminal_only(cran_index: Path, small_topics: Path, tmp_path: Path) -> None:
    args = ["search", "--database", str(cran_index), "--topics", str(small_topics), "--k", "10"]
    code, _, term = in_terminal(*args, "--output", str(tmp_path / "a.trec"))
    assert code == 0 and "searching: 100%" in term and "30/30" in term, term
    code, _, err = piped(*args, "--output", str(tmp_path / "b.trec"))
    assert code == 0 and err == ""
    code, _, term = in_terminal(*args, "--output", str(tmp_path / "c.trec"), "--quiet")
    assert code == 0 and term == ""


def test_eval_ranks_topics_itself_as_search_topics_would(cran_index: Path, small_topics: Path, cran_qrels: Path,
                                                        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "run.trec"
    assert call("search", "--database", str(cran_index), "--topics", str(small_topics), "--output", str(run))[0] == 0
    code, text = call("eval", "--qrels", str(cran_qrels), "--database", str(cran_index), "--topics",
                      str(small_topics), "--json", "--threads", "2", "--quiet")
    assert code == 0
    body = json.loads(text)
    assert body["retriever"] == "bm25"
    assert body["means"] == evaluate(read_qrels(cran_qrels), read_run(run)).means
    for bad in (["--run", str(run), "--database", str(cran_index)], ["--database", str(cran_index)],
                ["--run", str(run), "--retriever", "dense"],
                ["--database", str(cran_index), "--topics", str(small_topics), "--retriever", "bm27"]):
        assert call("eval", "--qrels", str(cran_qrels), *bad)[0] == 2, bad
        assert capsys.readouterr().err.count("\n") == 1, bad
