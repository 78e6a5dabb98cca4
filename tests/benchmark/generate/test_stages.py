"""Stages end to end: the example generator over the sample questions against the rule-based
responder on 127.0.0.1 — manifest, candidates, skip/rerun, --until, kill -9, record/replay."""

from __future__ import annotations

import contextlib
import filecmp
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from drsearch.agents import DR256, EngineSearcher, Question, read_questions
from drsearch.agents.canonical import sha256_json
from drsearch.agents.questions import PromptMessage
from drsearch.benchmark.generate import (
    GenerateError,
    GenerateSettings,
    Keep,
    ModelEndpoint,
    Pipeline,
    PipelineInputError,
    Stage,
    run_pipeline,
)
from drsearch.dev.chat import Rule, serve_rules
from drsearch.index import BlockList, Engine
from drsearch.tools.generate_cli import generate_main

from ...helpers import DATA, REPO
from . import example_pipeline as ex

VOLATILE = {"timings.json"}  # clock and cache facts: the one file allowed to differ between runs


def generate(out: Path, *args: str, base_url: str) -> tuple[int, dict[str, Any] | None, str]:
    """The example generator's command line, in process: (exit code, summary, stderr)."""
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        rc = ex.main(["--out", str(out), "--base-url", base_url, *args])
    return rc, (json.loads(buf.getvalue()) if rc == 0 else None), err.getvalue()


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_same_tree(a: Path, b: Path, ignore: set[str] = VOLATILE) -> None:
    """Every file of the two trees, byte for byte, as diff -r compares them."""
    ta, tb = tree(a), tree(b)
    assert sorted(set(ta) - ignore) == sorted(set(tb) - ignore)
    cmp = filecmp.dircmp(a, b, ignore=sorted(ignore))
    assert not cmp.left_only and not cmp.right_only
    for name in set(ta) - ignore:
        assert ta[name] == tb[name], f"{name} differs"


@pytest.fixture()
def responder() -> Any:
    with serve_rules(ex.RULES) as r:
        yield r


def test_a_pipeline_records_every_stage_in_the_manifest(responder: Any, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    rc, summary, err = generate(out, base_url=responder.url)
    assert rc == 0, err
    assert summary is not None and summary["ran"] == ["seed", "rewrite", "closed_book"] and summary["skipped"] == []
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["generator"] == "example" and manifest["stage_order"] == ["seed", "rewrite", "closed_book"]
    seed, rewrite, closed = (manifest["stages"][n] for n in manifest["stage_order"])
    assert seed["inputs"] == {str(ex.QUESTIONS): __import__("hashlib").sha256(ex.QUESTIONS.read_bytes()).hexdigest()}
    assert seed["counts"] == {"in": 12, "out": 8, "rejected": {"numeric_answer": 4}, "rejected_total": 4}
    assert rewrite["counts"] == {"in": 8, "out": 7, "rejected": {"rewrite_format": 1}, "rejected_total": 1}
    assert closed["counts"] == {"in": 7, "out": 5, "rejected": {"closed_book_solved": 2}, "rejected_total": 2}
    assert rewrite["models"] == [{"base_url": responder.url, "model": "rewriter"}] and seed["models"] == []
    assert rewrite["settings_sha256"] == sha256_json(rewrite["settings"]) and rewrite["settings"]["style"] == "concise"
    assert set(rewrite["code_version"]) == {"drsearch", "generate_sha256", "stage_sha256"}
    for name, digest in closed["outputs"].items():
        assert __import__("hashlib").sha256((out / name).read_bytes()).hexdigest() == digest
    assert rewrite["inputs"] == {"seeds.jsonl": seed["outputs"]["seeds.jsonl"]}  # chained by hash
    timings = json.loads((out / "timings.json").read_text())
    assert timings["stages"]["rewrite"]["cache"]["llm"] == {"hits": 0, "misses": 0, "stored": 8}
    assert timings["stages"]["closed_book"]["wall_s"] >= 0 and timings["last_invocation"]["ran"] == summary["ran"]
    assert not list((out / "stages").glob("*.journal.jsonl"))  # finished stages leave no journal

    # nothing dropped without a reason: every candidate is kept or in candidates.jsonl
    candidates = [json.loads(line) for line in (out / "candidates.jsonl").read_text().splitlines()]
    assert [(c["stage"], c["check"]) for c in candidates] == [("seed", "numeric_answer")] * 4 + \
        [("rewrite", "rewrite_format")] + [("closed_book", "closed_book_solved")] * 2
    assert all(c["reason"] and c["candidate"] and c["key"] for c in candidates)
    assert candidates[-1]["reason"] == "the solver answered '30,154' without tools"
    questions, _ = read_questions(out / "questions.jsonl")  # the DR-256 shape drsearch run reads
    assert [q.index for q in questions] == list(range(5))
    assert len(questions) + len(candidates) == 12
    row = json.loads((out / "questions.jsonl").read_text().splitlines()[0])
    assert row["metadata"]["example"]["source_qid"] == questions[0].qid.removeprefix("example-")


def test_a_rerun_skips_unchanged_stages_and_reruns_from_the_first_change(responder: Any, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    assert generate(out, base_url=responder.url)[0] == 0
    first = tree(out)
    asked = len(responder.requests)
    rc, summary, _ = generate(out, base_url=responder.url)
    assert rc == 0 and summary is not None
    assert summary["ran"] == [] and summary["skipped"] == ["seed", "rewrite", "closed_book"]
    assert len(responder.requests) == asked  # nothing asked again
    assert {k: v for k, v in tree(out).items() if k not in VOLATILE} == \
        {k: v for k, v in first.items() if k not in VOLATILE}

    # another setting of the second stage: the first is skipped, the second and third rerun
    rc, summary, _ = generate(out, "--style", "plain", base_url=responder.url)
    assert summary is not None and summary["skipped"] == ["seed"] and summary["ran"] == ["rewrite", "closed_book"]
    assert json.loads((out / "questions.jsonl").read_text().splitlines()[0])["prompt"][1]["content"].startswith(
        "Question: [plain] ")

    # an output edited by hand is not trusted: its stage and every later one rerun
    (out / "rewritten.jsonl").write_text("")
    rc, summary, _ = generate(out, "--style", "plain", base_url=responder.url)
    assert summary is not None and summary["ran"] == ["rewrite", "closed_book"]

    # another input file: everything reruns
    changed = tmp_path / "questions.jsonl"
    changed.write_bytes(ex.QUESTIONS.read_bytes().splitlines(keepends=True)[0])
    rc, summary, _ = generate(out, "--style", "plain", "--questions", str(changed), base_url=responder.url)
    assert summary is not None and summary["ran"] == ["seed", "rewrite", "closed_book"]
    assert summary["counts"]["closed_book"]["rejected"] == {"closed_book_solved": 1}


def test_until_stops_after_a_stage_and_the_next_run_goes_on(responder: Any, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    rc, summary, _ = generate(out, "--until", "rewrite", base_url=responder.url)
    assert rc == 0 and summary is not None and summary["ran"] == ["seed", "rewrite"]
    assert summary["stopped_after"] == "rewrite"
    assert not (out / "questions.jsonl").exists()
    assert json.loads((out / "manifest.json").read_text())["stage_order"] == ["seed", "rewrite"]
    assert [json.loads(line)["stage"] for line in (out / "candidates.jsonl").read_text().splitlines()] == \
        ["seed"] * 4 + ["rewrite"]
    rc, summary, _ = generate(out, base_url=responder.url)
    assert summary is not None and summary["skipped"] == ["seed", "rewrite"] and summary["ran"] == ["closed_book"]

    # a change before a finished stage forgets the later ones and their (now stale) outputs
    rc, summary, _ = generate(out, "--style", "plain", "--until", "rewrite", base_url=responder.url)
    assert summary is not None and summary["ran"] == ["rewrite"] and not (out / "questions.jsonl").exists()
    assert "closed_book" not in json.loads((out / "manifest.json").read_text())["stages"]


@pytest.mark.parametrize("args,message", [
    (["--until", "nope"], "--until nope: no such stage (stages: seed, rewrite, closed_book)"),
    (["--questions", "/nonexistent/q.jsonl"], "stage seed: input /nonexistent/q.jsonl: no such file"),
    (["--cache-mode", "replay", "--cache", "/nonexistent/c.sqlite3"], "c.sqlite3: no replay cache there"),
    (["--max-attempts", "0"], "--max-attempts: Input should be greater than or equal to 1"),
    (["--api-key-env", "DRSEARCH_TEST_UNSET_VARIABLE"], "DRSEARCH_TEST_UNSET_VARIABLE is not set"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(args: list[str], message: str, tmp_path: Path) -> None:
    out = tmp_path / "gen"
    rc, _, err = generate(out, *args, base_url="http://127.0.0.1:9/v1")
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_an_output_directory_of_another_generator_is_refused_untouched(tmp_path: Path) -> None:
    out = tmp_path / "gen"
    out.mkdir()
    (out / "manifest.json").write_text('{"generator": "other", "stages": {}}\n')
    rc, _, err = generate(out, base_url="http://127.0.0.1:9/v1")
    assert rc == 2 and "holds generator 'other', not 'example'; use another --out" in err
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json"]
    (tmp_path / "file").write_text("")
    rc, _, err = generate(tmp_path / "file", base_url="http://127.0.0.1:9/v1")
    assert rc == 2 and "--out" in err and "not a directory" in err


def test_a_rerun_that_fails_on_bad_input_keeps_every_earlier_output(responder: Any, tmp_path: Path) -> None:
    """The first stage reruns (another questions file) and stops on its malformed line 2: every
    output of the earlier run, the manifest and the candidates stay byte for byte, and no
    staging directory is left behind."""
    out = tmp_path / "gen"
    assert generate(out, base_url=responder.url)[0] == 0
    before = tree(out)
    bad = tmp_path / "questions.jsonl"
    lines = ex.QUESTIONS.read_bytes().splitlines(keepends=True)
    bad.write_bytes(lines[0] + b"{not json\n" + b"".join(lines[1:]))
    rc, _, err = generate(out, "--questions", str(bad), base_url=responder.url)
    assert rc == 2 and f"{bad}:2: not valid JSON" in err and len(err.strip().splitlines()) == 1
    assert tree(out) == before  # timings.json included: nothing finished, no journal, no staging directory
    rc, summary, _ = generate(out, base_url=responder.url)  # the old input again: nothing to redo
    assert rc == 0 and summary is not None and summary["skipped"] == ["seed", "rewrite", "closed_book"]


def test_a_stage_failing_after_writing_an_output_leaves_the_old_one(tmp_path: Path) -> None:
    """A stage that writes its first output and then fails on bad input: the earlier run's
    outputs (its own and a later stage's) and manifest are unchanged; once the input is fixed,
    the new outputs replace them and the later stage reruns."""
    data = tmp_path / "rows.jsonl"
    data.write_text('{"n": 1}\n{"n": 2}\n')

    def one(ctx: Any) -> None:
        rows = ctx.read_jsonl(str(data))
        ctx.write_jsonl("a.jsonl", rows)
        if any(not isinstance(r.get("n"), int) for r in rows):
            raise PipelineInputError(f"{data}: n must be an integer")
        ctx.write_jsonl("b.jsonl", [{"total": sum(r["n"] for r in rows)}])

    def two(ctx: Any) -> None:
        ctx.write_jsonl("c.jsonl", [{"seen": len(ctx.read_jsonl("a.jsonl"))}])

    pipeline = Pipeline("tiny", [Stage("one", one, inputs=(str(data),), outputs=("a.jsonl", "b.jsonl")),
                                 Stage("two", two, inputs=("a.jsonl",), outputs=("c.jsonl",))])
    settings = GenerateSettings(out=tmp_path / "o", cache_mode="off")
    assert run_pipeline(pipeline, settings)["ran"] == ["one", "two"]
    before = tree(tmp_path / "o")
    data.write_text('{"n": 1}\n{"n": "two"}\n{"n": 3}\n')
    with pytest.raises(PipelineInputError, match="n must be an integer"):
        run_pipeline(pipeline, settings)
    assert tree(tmp_path / "o") == before
    data.write_text('{"n": 1}\n{"n": 5}\n{"n": 3}\n')
    assert run_pipeline(pipeline, settings)["ran"] == ["one", "two"]
    assert (tmp_path / "o" / "b.jsonl").read_text() == '{"total":9}\n'
    assert (tmp_path / "o" / "c.jsonl").read_text() == '{"seen":3}\n'
    assert sorted(p.name for p in (tmp_path / "o" / "stages").iterdir()) == ["one.rejected.jsonl",
                                                                            "two.rejected.jsonl"]


def test_a_failed_model_call_is_exit_1_naming_the_call(tmp_path: Path) -> None:
    with serve_rules(ex.RULES[:1]) as responder:  # the solver has no rules: HTTP 400 no_rule
        rc, _, err = generate(tmp_path / "gen", "--max-attempts", "1", base_url=responder.url)
    assert rc == 1 and len(err.strip().splitlines()) == 1
    assert "error: stage closed_book: closed-book episode q-b1d4331f8b21052e: model_error: llm_error: " \
        "HTTP 400" in err and "no_rule" in err
    manifest = json.loads((tmp_path / "gen" / "manifest.json").read_text())
    assert manifest["stage_order"] == ["seed", "rewrite"]  # the finished stages stay


def test_record_delete_replay_regenerates_every_file_byte_for_byte(tmp_path: Path) -> None:
    out, cache = tmp_path / "gen", tmp_path / "cache.sqlite3"
    with serve_rules(ex.RULES) as responder:
        url = responder.url
        rc, _, err = generate(out, "--cache", str(cache), "--concurrency", "3", base_url=url)
        assert rc == 0, err
    saved = tmp_path / "saved"
    shutil.copytree(out, saved)
    shutil.rmtree(out)
    # the responder is gone: every model answer must come from the cache
    rc, summary, err = generate(out, "--cache", str(cache), "--concurrency", "3", "--cache-mode", "replay",
                                base_url=url)
    assert rc == 0, err
    assert summary is not None and summary["ran"] == ["seed", "rewrite", "closed_book"]
    assert_same_tree(saved, out)
    assert json.loads((saved / "timings.json").read_text()) != json.loads((out / "timings.json").read_text())
    replayed = json.loads((out / "timings.json").read_text())["stages"]["closed_book"]["cache"]["llm"]
    assert replayed == {"hits": 7, "misses": 0, "stored": 0}

    # a replay that meets an unrecorded call fails loudly, naming it
    rc, _, err = generate(tmp_path / "other", "--cache", str(cache), "--cache-mode", "replay", "--style", "new",
                          base_url=url)
    assert rc == 1 and "replay cache has no response for rewrite: rewrite q-b1d4331f8b21052e" in err


def test_kill_9_mid_stage_loses_only_unfinished_items(tmp_path: Path) -> None:
    reference, out = tmp_path / "reference", tmp_path / "gen"
    with serve_rules(ex.RULES, delay_s=0.15) as responder:
        assert generate(reference, base_url=responder.url)[0] == 0
        responder.requests.clear()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
        proc = subprocess.Popen([sys.executable, "-m", "tests.benchmark.generate.example_pipeline",
                                 "--out", str(out), "--base-url", responder.url], cwd=REPO, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        journal = out / "stages" / "rewrite.journal.jsonl"
        deadline = time.monotonic() + 60
        while not (journal.exists() and journal.read_bytes().count(b"\n") >= 4):  # header + 3 items
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "the generator did not get going"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        finished = journal.read_bytes().count(b"\n") - 1
        assert 3 <= finished < 8
        manifest = json.loads((out / "manifest.json").read_text())
        assert manifest["stage_order"] == ["seed"]  # the finished stage is kept, whole
        assert (out / "seeds.jsonl").read_bytes() == (reference / "seeds.jsonl").read_bytes()
        assert not (out / "rewritten.jsonl").exists()
        responder.requests.clear()
        rc, summary, err = generate(out, base_url=responder.url)
        assert rc == 0, err
    assert summary is not None and summary["skipped"] == ["seed"]
    rewrites = [b for b in responder.requests if b["model"] == "rewriter"]
    assert len(rewrites) <= 8 - finished + 1  # finished items are not asked again (one may be in flight)
    assert json.loads((out / "timings.json").read_text())["stages"]["rewrite"]["resumed_items"] >= finished
    assert_same_tree(reference, out, VOLATILE | {"cache.sqlite3", "cache.sqlite3-wal", "cache.sqlite3-shm"})


def test_settings_compare_as_recorded_and_a_stage_bug_is_one_error(tmp_path: Path) -> None:

    def write(ctx: Any) -> None:
        ctx.write_jsonl("a.jsonl", [{"pair": list(ctx.settings["pair"])}])

    settings = GenerateSettings(out=tmp_path / "o", cache_mode="off")
    tiny = Pipeline("tiny", [Stage("one", write, outputs=("a.jsonl",), settings={"pair": (1, 2)})])
    assert run_pipeline(tiny, settings)["ran"] == ["one"]
    assert run_pipeline(tiny, settings)["skipped"] == ["one"]  # a tuple setting reads back as a list

    def broken(ctx: Any) -> None:
        raise KeyError("nope")

    with pytest.raises(GenerateError, match="stage one failed: KeyError: 'nope'"):
        run_pipeline(Pipeline("tiny", [Stage("one", broken, outputs=("a.jsonl",))]), settings)


@pytest.mark.parametrize("stages,message", [
    ([("a", (), ("x.jsonl",)), ("b", ("y.jsonl",), ())], "input y.jsonl is neither an absolute path nor an output"),
    ([("a", (), ("x.jsonl",)), ("b", (), ("x.jsonl",))], "output x.jsonl is written by stage a already"),
    ([("a", (), ("manifest.json",))], "output manifest.json must be a relative path"),
    ([("a", (), ("stages/x",))], "output stages/x must be a relative path"),
    ([("a", (), ()), ("a", (), ())], "stage a is defined twice"),
    ([("Bad Name", (), ())], "stage name 'Bad Name'"),
    ([], "no stages"),
])
def test_stages_that_do_not_fit_together_are_refused(stages: list[tuple[str, tuple[str, ...], tuple[str, ...]]],
                                                      message: str) -> None:

    with pytest.raises(PipelineInputError, match=message.replace("(", r"\(").replace(".", r"\.")):
        Pipeline("p", [Stage(name, ex.seed, inputs=i, outputs=o) for name, i, o in stages])


def test_ctrl_c_mid_stage_is_exit_130_and_the_rerun_resumes(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:

    out = tmp_path / "o"
    calls: list[int] = []

    def build(interrupt_at: int) -> Pipeline:
        def stage(ctx: Any) -> None:
            def process(item: int) -> Any:
                calls.append(item)
                if item == interrupt_at:
                    raise KeyboardInterrupt
                return Keep({"n": item})

            ctx.write_jsonl("n.jsonl", ctx.map(list(range(6)), str, process))

        return Pipeline("tiny", [Stage("count", stage, outputs=("n.jsonl",), settings={"n": 6})])

    assert generate_main(lambda a: build(3), ["--out", str(out), "--cache-mode", "off"], prog="tiny") == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "rerun the same command to resume" in err and "Traceback" not in err
    journal = out / "stages" / "count.journal.jsonl"
    assert journal.read_bytes().count(b"\n") == 1 + 3  # header + the three finished items
    assert not (out / "n.jsonl").exists()
    calls.clear()
    assert generate_main(lambda a: build(-1), ["--out", str(out), "--cache-mode", "off"], prog="tiny") == 0
    assert calls == [3, 4, 5]  # only the unfinished items ran again
    assert [json.loads(line)["n"] for line in (out / "n.jsonl").read_text().splitlines()] == list(range(6))
    assert not journal.exists()


def _search_agent(body: dict[str, Any]) -> Any:
    """A tool-using solver: searches the question, then answers with the first hit's docid."""
    tool_replies = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not tool_replies:
        question = body["messages"][-1]["content"].removeprefix("Question: ")
        return {"content": None, "role": "assistant", "tool_calls": [
            {"function": {"arguments": json.dumps({"k": 2, "query": question}), "name": "search"},
             "id": "c0", "type": "function"}]}
    return tool_replies[0].split("docid: ", 1)[1].split("\n", 1)[0]


def test_a_tool_augmented_episode_stage_replays_its_searches_offline(sample_index: Path, tmp_path: Path) -> None:
    """StageContext.episode with a search preset: searches go through the replay cache, so the
    replay needs neither the model nor live search answers (the corpus is only asked its identity)."""

    rows = [json.loads(line) for line in ex.QUESTIONS.read_text().splitlines()][:3]

    def build(url: str, engine: Engine) -> Pipeline:
        agent = ModelEndpoint(model="search-agent", base_url=url)

        def solve(ctx: Any) -> None:
            preset = DR256.model_copy(update={"max_turns": 3})

            def process(i: int) -> Any:
                q = Question(qid=rows[i]["metadata"]["qid"], index=i,
                             prompt=(PromptMessage(role="user", content=f"Question: {rows[i]['metadata']['question']}"),))
                record = ctx.episode(q, preset, agent, EngineSearcher(engine))
                return Keep({"answer": record["final_answer"], "qid": q.qid, "tools": record["accounting"]["tool_calls"]})

            ctx.write_jsonl("answers.jsonl", ctx.map(list(range(len(rows))), str, process))

        return Pipeline("search-filter", [Stage("solve", solve, outputs=("answers.jsonl",), models=(agent,))])

    out, cache = tmp_path / "gen", tmp_path / "cache.sqlite3"
    # The sample's leak artifacts are blocked, as in every deployment of the sample benchmark.
    blocked = BlockList.from_file(DATA / "sample/blocked_docids.txt")
    with Engine.open(sample_index, blocked) as engine:
        with serve_rules([Rule("search-agent", "Question:", _search_agent)]) as responder:
            url = responder.url
            summary = run_pipeline(build(url, engine), GenerateSettings(out=out, cache=cache))
        assert summary["ran"] == ["solve"]
        answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
        assert answers[0] == {"answer": "d-52f3fe3674432ddf", "qid": rows[0]["metadata"]["qid"],
                              "tools": {"open": 0, "search": 1}}
        saved = tmp_path / "saved"
        shutil.copytree(out, saved)
        shutil.rmtree(out)
        run_pipeline(build(url, engine), GenerateSettings(out=out, cache=cache, cache_mode="replay"))
    assert_same_tree(saved, out)
    used = json.loads((out / "timings.json").read_text())["stages"]["solve"]["cache"]
    assert used["tool"] == {"hits": 3, "misses": 0, "stored": 0} and used["llm"]["hits"] == 6


def test_the_concurrency_is_no_stage_setting_and_changes_no_output(responder: Any, tmp_path: Path) -> None:
    """``--concurrency`` is a property of the run: 1 then 3 on one directory reruns nothing,
    and a fresh directory at 3 is the one at 1, byte for byte (timings.json apart)."""
    one, three = tmp_path / "one", tmp_path / "three"
    rc, first, err = generate(one, "--concurrency", "1", base_url=responder.url)
    assert rc == 0 and first is not None, err
    rc, again, err = generate(one, "--concurrency", "3", base_url=responder.url)
    assert rc == 0 and again is not None, err
    assert again["ran"] == [] and again["skipped"] == ["seed", "rewrite", "closed_book"]
    rc, _, err = generate(three, "--concurrency", "3", base_url=responder.url)
    assert rc == 0, err
    assert_same_tree(one, three, ignore={"timings.json", "cache.sqlite3"})
    timings = json.loads((three / "timings.json").read_text())
    assert timings["last_invocation"]["concurrency"] == 3 and timings["stages"]["rewrite"]["concurrency"] == 3
    assert timings["stages"]["rewrite"]["model"]["calls"] == first["timings"]["rewrite"]["model"]["calls"] > 0
