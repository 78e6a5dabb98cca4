"""``drsearch construct consolidate|urls|answers|artifacts`` on the upstream fixture, end to end:
the fixture's URLs are crawled from the loopback crawl server into a real corpus."""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from offline_recipe.driver import FETCH

from drsearch.corpus import build_from_urls, stable_docid
from drsearch.index import canonicalize_url
from drsearch.release.construct import qid_of
from drsearch.tools.cli import main

from .construct_fixture import (
    BAD_URL,
    DUMP_URL,
    INVENTED,
    crawl_server,
    multihop_qids,
    sample_rows,
    write_upstream,
)
from .construct_pages import MULTIHOP


def cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out), out.getvalue()


def jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@dataclass
class Built:
    upstream: Path
    pool: Path
    corpus: Path
    fetch: dict[str, Any]
    outputs: dict[str, dict[str, Any]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    root = tmp_path_factory.mktemp("construct")
    upstream = write_upstream(root / "upstream.jsonl")
    pool = root / "pool"
    outputs = {}
    code, text = cli("construct", "consolidate", "--upstream", str(upstream), "--out", str(pool), "--json")
    assert code == 0
    outputs["consolidate"] = json.loads(text)
    code, text = cli("construct", "urls", str(pool), "--json")
    assert code == 0
    outputs["urls"] = json.loads(text)
    corpus = root / "corpus" / "corpus.sqlite3"
    corpus.parent.mkdir()
    with crawl_server() as server:  # what `drsearch corpus build --urls` does, over the loopback server
        made = build_from_urls(pool / "urls" / "urls.txt", corpus, root / "crawl", fetch_settings=FETCH,
                               transport=server.transport())
    for stage in ("answers", "artifacts"):
        code, text = cli("construct", stage, str(pool), "--database", str(corpus), "--json")
        assert code == 0
        outputs[stage] = json.loads(text)
    return Built(upstream, pool, corpus, made.fetch, outputs)


def test_variants_merge_and_the_conflict_is_dropped(built: Built) -> None:
    facts = built.outputs["consolidate"]["facts"]
    assert facts == {"rows": 24, "groups": 19, "merged_rows": 5, "conflicts": 1, "kept": 18}
    assert built.outputs["consolidate"]["counts"]["rejected"] == {"conflicting_labels": 1}
    pool = {r["qid"]: r for r in jsonl(built.pool / "consolidate" / "pool.jsonl")}
    sample = {r.metadata.qid: r for r in sample_rows()}
    conflict = next(r.metadata.qid for r in sample_rows() if r.label == "Martin Taylor")
    # the qids are DR-256's: the sample's own qids come out of the normalised question text
    assert set(pool) == (set(sample) - {conflict}) | {qid_of(INVENTED)} | set(multihop_qids())
    first = pool[next(q for q, r in sample.items() if r.metadata.benchmark.index == 0)]
    assert first["dataset_rows"] == ["row-0", "var-case", "var-ligature"]
    assert first["question"] == sample[first["qid"]].metadata.question  # the first row's spelling
    assert first["queries"] == [" ".join(first["question"].split()[:6]), "emirates 787-9 order"]
    assert len(set(first["row_fingerprints"])) == 3 and first["teacher_correct"] == [True, True, True]
    separator = next(r for r in pool.values() if r["dataset_rows"] == ["row-6", "var-separator"])
    assert separator["answer"] == "30,154"  # "30154" is the same label once separators are ignored
    rejected = jsonl(built.pool / "consolidate" / "candidates.jsonl")
    assert [(r["key"], r["check"]) for r in rejected] == [(conflict, "conflicting_labels")]
    assert "'Martin Taylor'; 'Martin Tyler'" in rejected[0]["reason"]


def test_urls_are_canonical_sorted_and_mapped_per_question(built: Built) -> None:
    urls = (built.pool / "urls" / "urls.txt").read_text().splitlines()
    pool = jsonl(built.pool / "consolidate" / "pool.jsonl")
    given = {u for r in pool for u in r["urls"] if u != BAD_URL}
    # one visited spelling per canonical URL, in canonical order (the crawler fetches what was visited)
    assert [canonicalize_url(u) for u in urls] == sorted({canonicalize_url(u) for u in given})
    assert set(urls) <= given and DUMP_URL in urls
    assert built.outputs["urls"]["facts"]["invalid_urls"] == 1
    assert [r["check"] for r in jsonl(built.pool / "urls" / "candidates.jsonl")] == ["invalid_url"]
    url_map = {r["qid"]: r["urls"] for r in jsonl(built.pool / "urls" / "url_map.jsonl")}
    assert set(url_map) == {r["qid"] for r in pool} and all(v == sorted(v) for v in url_map.values())
    # every page crawled but the one the server's robots.txt disallows (a distractor)
    assert built.fetch["urls"] == len(urls)
    assert (built.fetch["run"]["ok"], built.fetch["run"]["by_reason"]) == (len(urls) - 1, {"robots_disallowed": 1})


def test_answer_documents_are_the_sample_answer_documents(built: Built) -> None:
    answers = {r["qid"]: r for r in jsonl(built.pool / "answers" / "answers.jsonl")}
    expected = {r.metadata.qid: sorted(r.metadata.benchmark.clean_provenance_answer_docids)
                for r in sample_rows() if r.label != "Martin Taylor"}
    # a multi-hop question's one answer document is its answer page (not the hop page it names)
    expected |= {qid: [stable_docid(q["answer_page"][0])] for qid, q in zip(multihop_qids(), MULTIHOP, strict=True)}
    assert {q: r["answer_docids"] for q, r in answers.items()} == expected
    assert built.outputs["answers"]["counts"]["rejected"] == {"no_independent_answer_doc": 1}
    removed = jsonl(built.pool / "answers" / "candidates.jsonl")
    assert [r["key"] for r in removed] == [qid_of(INVENTED)]
    dump = stable_docid(DUMP_URL)
    assert all(dump not in r["answer_docids"] for r in answers.values())
    assert any(dump in r["provenance_docids"] for r in answers.values())


def test_the_detector_flags_the_dump_page_and_nothing_else(built: Built) -> None:
    flagged = jsonl(built.pool / "artifacts" / "artifact_candidates.jsonl")
    assert [r["docid"] for r in flagged] == [stable_docid(DUMP_URL)]
    signals = flagged[0]["signals"]
    dumped = {r.metadata.qid for r in sample_rows() if r.metadata.benchmark.index < 8 and r.label != "Martin Taylor"}
    assert set(signals) == {"verbatim_questions", "qa_pairs"}
    assert set(signals["verbatim_questions"]) == dumped and set(signals["qa_pairs"]) == dumped
    facts = built.outputs["artifacts"]["facts"]
    assert facts["flagged"] == 1 and facts["documents"] > 20


def test_summary_holds_every_stage_and_a_rerun_does_nothing(built: Built) -> None:
    summary = json.loads((built.pool / "summary.json").read_text())
    assert summary["stage_order"][:4] == ["consolidate", "urls", "answers", "artifacts"]
    assert summary["stages"]["consolidate"]["facts"]["conflicts"] == 1
    assert summary["stages"]["answers"]["counts"]["rejected"] == {"no_independent_answer_doc": 1}
    before = (built.pool / "consolidate" / "pool.jsonl").stat().st_mtime_ns
    code, text = cli("construct", "consolidate", "--upstream", str(built.upstream), "--out", str(built.pool))
    assert code == 0 and "(up to date: nothing rerun)" in text and "removed: 1 conflicting_labels" in text
    assert (built.pool / "consolidate" / "pool.jsonl").stat().st_mtime_ns == before


def test_same_upstream_gives_the_same_bytes(built: Built, tmp_path: Path) -> None:
    assert cli("construct", "consolidate", "--upstream", str(built.upstream), "--out", str(tmp_path))[0] == 0
    assert cli("construct", "urls", str(tmp_path))[0] == 0
    for rel in ("consolidate/pool.jsonl", "consolidate/candidates.jsonl", "urls/urls.txt", "urls/url_map.jsonl"):
        assert (tmp_path / rel).read_bytes() == (built.pool / rel).read_bytes(), rel


def test_a_reviewed_blocklist_is_checked_against_the_answer_documents(
        built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = tmp_path / "blocked.txt"
    ok.write_text(f"# dataset viewer dump: rows 0-7 with answers\n{stable_docid(DUMP_URL)}\n")
    code, text = cli("construct", "artifacts", str(built.pool), "--database", str(built.corpus),
                     "--blocked-docids", str(ok))
    assert code == 0 and "blocks 1 of 1 candidates, no answer document" in text
    answer = jsonl(built.pool / "answers" / "answers.jsonl")[0]
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{stable_docid(DUMP_URL)}\n# wrongly blocked\n{answer['answer_docids'][0]}\n")
    code, _ = cli("construct", "artifacts", str(built.pool), "--database", str(built.corpus),
                  "--blocked-docids", str(bad))
    err = capsys.readouterr().err
    assert code == 2 and answer["answer_docids"][0] in err and answer["qid"] in err
    assert len(err.strip().splitlines()) == 1


# -- bad input ------------------------------------------------------------------------------


def _rows(*extra: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": "a", "question": "What is one?", "answer": "1", "urls": ["https://a.example/1"]}, *extra]


@pytest.mark.parametrize(("rows", "argv", "message"), [
    (_rows({"id": "b", "question": "Two?"}), [], "upstream.jsonl:2: no answer (field 'answer' missing or empty)"),
    (_rows({"id": "b", "answer": "2"}), [], "upstream.jsonl:2: no question"),
    (_rows({"id": "b", "question": "Two?", "answer": " "}), [], "upstream.jsonl:2: no answer"),
    (_rows({"id": "b", "question": "Two?", "answer": "2", "urls": "https://a.example/2"}), [],
     "upstream.jsonl:2: urls (field 'urls') is not a list of strings"),
    (_rows(), ["--map", "label=answer"], "--map label=answer: unknown field 'label'"),
    (_rows(), ["--map", "answer=gold"], "--map answer=gold: no row of"),
    (_rows(), ["--map", "answer"], "--map answer: expected FIELD=UPSTREAM_FIELD"),
    ([], [], "no upstream rows (the pool would be empty)"),
    (_rows({"id": "b", "question": "what is ONE?", "answer": "one"}), [],
     "all 1 question groups have conflicting labels: the pool would be empty"),
])
def test_bad_upstream_is_exit_2_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   rows: list[dict[str, Any]], argv: list[str],
                                                   message: str) -> None:
    upstream = write_upstream(tmp_path / "upstream.jsonl", rows) if rows else tmp_path / "upstream.jsonl"
    if not rows:
        upstream.write_text("\n")
    code, _ = cli("construct", "consolidate", "--upstream", str(upstream), "--out", str(tmp_path / "pool"), *argv)
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "pool").exists()


def test_a_remapped_upstream_is_read(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream.jsonl"
    upstream.write_text(json.dumps({"uid": 7, "q": "What is one?", "gold": "1", "visited": []}) + "\n")
    code, _ = cli("construct", "consolidate", "--upstream", str(upstream), "--out", str(tmp_path / "pool"),
                  "--map", "question=q", "--map", "answer=gold", "--map", "id=uid", "--map", "urls=visited")
    line = jsonl(tmp_path / "pool" / "consolidate" / "pool.jsonl")[0]
    assert code == 0 and (line["question"], line["answer"], line["dataset_rows"]) == ("What is one?", "1", ["7"])


def test_stages_before_their_inputs_are_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli("construct", "urls", str(tmp_path))[0] == 2
    assert "run `drsearch construct consolidate` first" in capsys.readouterr().err
    upstream = write_upstream(tmp_path / "upstream.jsonl", _rows())
    assert cli("construct", "consolidate", "--upstream", str(upstream), "--out", str(tmp_path))[0] == 0
    assert cli("construct", "answers", str(tmp_path), "--database", str(tmp_path / "none.sqlite3"))[0] == 2
    assert "run `drsearch construct urls` first" in capsys.readouterr().err
    assert cli("construct", "calibrate", str(tmp_path), "--runs", str(tmp_path))[0] == 2
    assert "run `drsearch construct audit` first" in capsys.readouterr().err


def test_bad_url_patterns_are_exit_2(built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    patterns = tmp_path / "patterns.txt"
    patterns.write_text("# hubs\n^https://hub\\.example/\n([unclosed\n")
    code, _ = cli("construct", "artifacts", str(built.pool), "--database", str(built.corpus),
                  "--url-patterns", str(patterns))
    assert code == 2 and f"{patterns}:3: not a regular expression" in capsys.readouterr().err


@pytest.mark.parametrize(("text", "answer", "found"), [
    ("Chelsea paid the £71.6million fee", "£71.6 million", True),
    ("dealers sold 30,154 vehicles", "30154", True),
    ("a share of 65 percent of the surface", "65 percent", True),
    ("it sold 300 cars", "30", False),
    ("version 30.5 shipped", "30", False),
    ("Martin Taylor said", "Martin Tyler", False),
])
def test_the_answer_match(text: str, answer: str, found: bool) -> None:
    from drsearch.release.construct.answers import answer_in_text

    assert answer_in_text(text, answer) is found


# -- audit ----------------------------------------------------------------------------------


def _audit(built: Built, blocked: Path, *extra: str) -> tuple[int, dict[str, Any], dict[str, Any]]:
    code, text = cli("construct", "audit", str(built.pool), "--database", str(built.corpus),
                     "--blocked-docids", str(blocked), "--json", *extra)
    lines = {r["qid"]: r for r in jsonl(built.pool / "audit" / "shortcuts.jsonl")} if code == 0 else {}
    return code, json.loads(text) if code == 0 else {}, lines


def test_the_audit_probes_with_the_blocklist_applied(built: Built, tmp_path: Path) -> None:
    dump = stable_docid(DUMP_URL)
    blocked = tmp_path / "blocked.txt"
    blocked.write_text(f"# dataset viewer dump: rows 0-7 with answers\n{dump}\n")
    code, report, lines = _audit(built, blocked)
    assert code == 0
    answers = {r["qid"]: r["answer_docids"] for r in jsonl(built.pool / "answers" / "answers.jsonl")}
    assert set(lines) == set(answers)
    evidence = [e for line in lines.values() for e in line["probes"].values() if e is not None]
    assert evidence and all(e["docid"] != dump for e in evidence)  # a blocked page gives nothing away
    for qid, line in lines.items():
        single = line["probes"]["single_retrieval"]
        if single is not None:
            assert single["docid"] in answers[qid] and single["rank"] <= 3
        assert line["removed"] == bool(line["flags"])
    # the 40-page fixture corpus is small enough that one search for the question text finds
    # the answer: the question whose label sits in its top snippet is removed for it
    emirates = next(r.metadata.qid for r in sample_rows() if r.metadata.benchmark.index == 0)
    assert lines[emirates]["probes"]["answer_in_snippet"]["rank"] == 1
    assert lines[emirates]["flags"][0] == "answer_in_snippet"
    removed = jsonl(built.pool / "audit" / "candidates.jsonl")
    assert {r["key"]: r["check"] for r in removed} == {q: line["flags"][0] for q, line in lines.items()
                                                        if line["removed"]}
    assert report["counts"]["rejected_total"] == len(removed)
    settings = json.loads((built.pool / "summary.json").read_text())["stages"]["audit"]["settings"]
    assert {k: settings[k] for k in ("snippet_k", "queries", "open_top", "single_rank", "open_page_chars")} == \
        {"snippet_k": 10, "queries": 2, "open_top": 3, "single_rank": 3, "open_page_chars": 8000}


def test_without_the_blocklist_the_dump_page_is_the_shortcut(built: Built, tmp_path: Path) -> None:
    nothing = tmp_path / "none.txt"
    nothing.write_text("# nothing blocked\n")
    code, _, lines = _audit(built, nothing)
    dumped = {r.metadata.qid for r in sample_rows() if r.metadata.benchmark.index < 8}
    given_away = {q for q, line in lines.items()
                  if any(e is not None and e["docid"] == stable_docid(DUMP_URL) for e in line["probes"].values())}
    assert code == 0 and given_away and given_away <= dumped


def test_the_audit_refuses_a_blocklist_naming_an_answer_document(
        built: Built, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    answer = jsonl(built.pool / "answers" / "answers.jsonl")[-1]
    bad = tmp_path / "bad.txt"
    bad.write_text(f"{answer['answer_docids'][0]}\n")
    code, _, _ = _audit(built, bad)
    err = capsys.readouterr().err
    assert code == 2 and answer["answer_docids"][0] in err and answer["qid"] in err
    with pytest.raises(SystemExit) as exit_:  # an argparse error: usage and exit 2
        cli("construct", "audit", str(built.pool), "--database", str(built.corpus), "--blocked-docids", str(bad),
            "--snippet-k", "0")
    assert exit_.value.code == 2 and "--snippet-k: must be between 1 and 100, got 0" in capsys.readouterr().err


def test_a_changed_upstream_reruns_its_stage_and_the_ones_after(built: Built, tmp_path: Path) -> None:
    pool = tmp_path / "pool"
    upstream = write_upstream(tmp_path / "upstream.jsonl")
    assert cli("construct", "consolidate", "--upstream", str(upstream), "--out", str(pool))[0] == 0
    assert cli("construct", "urls", str(pool))[0] == 0
    code, text = cli("construct", "urls", str(pool))
    assert code == 0 and "(up to date: nothing rerun)" in text
    rows = [json.loads(line) for line in upstream.read_text().splitlines()]
    rows.append({"id": "row-new", "question": "Which new question was added last?", "answer": "this one",
                 "urls": ["https://new.example/page"]})
    write_upstream(upstream, rows)
    code, text = cli("construct", "consolidate", "--upstream", str(upstream), "--out", str(pool))
    assert code == 0 and "25 rows -> 20 question groups" in text
    code, text = cli("construct", "urls", str(pool), "--json")
    assert code == 0 and json.loads(text)["ran"] is True
    assert "https://new.example/page" in (pool / "urls" / "urls.txt").read_text().splitlines()


# -- calibrate ------------------------------------------------------------------------------
# Three rollouts written as `drsearch run --preset dr256 --attempt N` + `drsearch score` write
# them (run.json, trajectories.jsonl, scores.graded.jsonl in attempt 0's directory); the
# end-to-end run → score → calibrate path over real servers is tests/tools/test_cli_calibrate.py.


def _rollouts(root: Path, kept: list[str], corpus_identity: str, blocklist_sha256: str,
              solved: dict[str, int], turns: dict[str, int]) -> list[Path]:
    """Attempt n solves question q iff n < solved[q] (default 0), in turns[q] turns (default 3)."""
    from drsearch.agents.preset import DR256
    from drsearch.benchmark import GradedQuestion, write_graded

    dirs, graded = [], []
    for n in range(3):
        run = root / f"attempt-{n}"
        run.mkdir(parents=True)
        manifest = {"blocklist_sha256": blocklist_sha256, "corpus_identity": corpus_identity, "model": "ref-m",
                    "preset": DR256.for_attempt(n).model_dump(mode="json"),
                    "prompt_sha256": {q: "0" * 64 for q in kept}, "questions_sha256": "1" * 64}
        (run / "run.json").write_text(json.dumps(manifest))
        lines = []
        for i, q in enumerate(kept):
            right = n < solved.get(q, 0)
            answer = "right" if right else f"wrong-{n}"
            lines.append({"final_answer": answer, "qid": q, "status": "answered",
                          "turns": [{"i": t} for t in range(turns.get(q, 3))]})
            graded.append(GradedQuestion(question_id=q, index=i, attempt=n, episode_status="answered",
                                         final_answer=answer, outcome="correct" if right else "incorrect",
                                         correct=right))
        (run / "trajectories.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        dirs.append(run)
    write_graded(dirs[0] / "scores.graded.jsonl", graded)
    return dirs


def _hand_audit(pool: Path, rows: list[dict[str, Any]]) -> None:
    """The audit stage's record through the toolkit, with ``rows`` as its shortcuts.jsonl."""
    from drsearch.release.construct.work import run_stage

    def write(ctx: Any) -> None:
        ctx.count_in(len(rows))
        ctx.count_out(sum(not r["removed"] for r in rows))
        ctx.write_jsonl("shortcuts.jsonl", rows)
        ctx.write_json("facts.json", {})

    run_stage(pool, "audit", write, inputs=tuple((pool / f).resolve() for f in
                                                 ("consolidate/pool.jsonl", "answers/answers.jsonl",
                                                  "blocked.txt")),
              outputs=("shortcuts.jsonl", "facts.json"),
              settings={"corpus_identity": "fixture-corpus", "database": "fixture.sqlite3"})


def _audited(built: Built, tmp_path: Path) -> tuple[Path, list[str], str, str]:
    """A copy of the pool whose audit kept every question with an answer document except the
    first; (pool, kept qids, corpus identity, blocklist SHA-256). The fixture's 40-page corpus
    gives every question away in its top snippet (even with --snippet-k 1), so a real audit
    keeps none: the audit's record is written here (the calibrate stage reads only it)."""
    import hashlib
    import shutil

    pool = tmp_path / "pool"
    for stage in ("consolidate", "answers", "artifacts"):
        shutil.copytree(built.pool / stage, pool / stage)
    blocked = pool / "blocked.txt"
    blocked.write_text(f"# dataset viewer dump\n{stable_docid(DUMP_URL)}\n")
    hops = set(multihop_qids())  # the sample questions only: the multi-hop ones are the end-to-end test's
    qids = [r["qid"] for r in jsonl(pool / "answers" / "answers.jsonl") if r["qid"] not in hops]
    _hand_audit(pool, [{"flags": ["answer_in_snippet"] if i == 0 else [], "qid": q, "removed": i == 0}
                       for i, q in enumerate(qids)])
    return pool, qids[1:], "fixture-corpus", hashlib.sha256(blocked.read_bytes()).hexdigest()


def test_calibrate_tiers_follow_the_dr256_rule(built: Built, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    pool, kept, identity, sha = _audited(built, tmp_path)
    assert len(kept) >= 5
    q0, q1, q2, q3, two_turns = kept[:5]
    solved = {q0: 0, q1: 1, q2: 2, q3: 3, two_turns: 1}
    runs = _rollouts(tmp_path / "runs", kept, identity, sha, solved, {two_turns: 2})
    code, text = cli("construct", "calibrate", str(pool), "--runs", *map(str, reversed(runs)), "--json")
    assert code == 0, capsys.readouterr().err
    report = json.loads(text)
    tiers = {r["qid"]: r for r in jsonl(pool / "calibrate" / "tiers.jsonl")}
    assert list(tiers) == kept
    assert [tiers[q]["tier"] for q in (q0, q1, q2, q3, two_turns)] == \
        ["challenge", "frontier", "frontier", "excluded", "excluded"]
    assert (tiers[q3]["code"], tiers[q3]["reason"]) == ("solved_every_rollout", "solved 3/3")
    assert (tiers[two_turns]["code"], tiers[two_turns]["reason"]) == ("too_few_turns", "mean turns 2 < 3")
    assert tiers[q1]["stats"]["outcomes"] == ["correct", "incorrect", "incorrect"]
    assert tiers[q0]["reason"] is None and tiers[q0]["code"] is None
    rest = len(kept) - 5  # never solved, 3 turns: challenge
    assert report["facts"] == {"questions": len(kept), "frontier": 2, "challenge": 1 + rest, "excluded": 2,
                               "excluded_by_code": {"answer_docid_supplied": 0, "answer_from_artifact": 0,
                                                    "empty_answer": 0, "incomplete_rollout": 0,
                                                    "solved_every_rollout": 1, "too_few_turns": 1,
                                                    "ungraded_rollout": 0},
                               "rollouts_leak_audited": 3 * len(kept)}
    removed = {r["key"]: r["check"] for r in jsonl(pool / "calibrate" / "candidates.jsonl")}
    assert removed == {q3: "solved_every_rollout", two_turns: "too_few_turns"}
    summary = json.loads((pool / "summary.json").read_text())
    assert summary["stage_order"][-2:] == ["audit", "calibrate"]
    assert summary["stages"]["calibrate"]["counts"]["in"] == len(kept)
    assert summary["stages"]["calibrate"]["settings"]["runs"] == [str(r.resolve()) for r in runs]
    code, text = cli("construct", "calibrate", str(pool), "--runs", *map(str, runs))
    assert code == 0 and text == ("construct calibrate (up to date: nothing rerun): 10 questions -> 2 frontier, "
                                  "6 challenge, 2 excluded (DR-256 rule over 3 rollouts); removed: "
                                  "1 solved_every_rollout, 1 too_few_turns\n")
    written = (pool / "calibrate" / "tiers.jsonl").read_bytes()

    # every refusal: exit 2, one line naming the run, nothing rewritten
    def refused(dirs: list[Path], *needles: str) -> None:
        assert cli("construct", "calibrate", str(pool), "--runs", *map(str, dirs))[0] == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and all(n in err for n in needles), err
        assert (pool / "calibrate" / "tiers.jsonl").read_bytes() == written

    refused(runs[:2], "attempt 2 is missing", "--attempt 2")
    refused([runs[0], runs[1], runs[1]], "the same run given twice")
    refused([*runs[:2], tmp_path / "nowhere"], "nowhere: no such run directory")

    def variant(name: str, n: int, change: dict[str, Any]) -> list[Path]:
        copies = _rollouts(tmp_path / name, kept, identity, sha, solved, {two_turns: 2})
        manifest = json.loads((copies[n] / "run.json").read_text())
        (copies[n] / "run.json").write_text(json.dumps({**manifest, **change}))
        return copies

    other_preset = variant("preset", 1, {})
    preset = json.loads((other_preset[1] / "run.json").read_text())
    preset["preset"]["max_turns"] = preset["preset"]["max_turns"] + 1
    (other_preset[1] / "run.json").write_text(json.dumps(preset))
    refused(other_preset, str(other_preset[1]), "not dr256")
    twice = variant("twice", 2, {"preset": json.loads((runs[1] / "run.json").read_text())["preset"]})
    refused(twice, "attempt 1 given twice")
    extra = variant("extra", 0, {"prompt_sha256": {q: "0" * 64 for q in [*kept, "not-a-pool-qid"]}})
    refused(extra, str(extra[0]), "answered not-a-pool-qid")
    fewer = variant("fewer", 2, {"prompt_sha256": {q: "0" * 64 for q in kept[:-1]}})
    (fewer[2] / "trajectories.jsonl").write_text(
        "".join(line + "\n" for line in (fewer[2] / "trajectories.jsonl").read_text().splitlines()[:-1]))
    refused(fewer, str(fewer[2]), f"did not answer {kept[-1]}")
    refused(variant("corpus", 1, {"corpus_identity": "another-corpus"}), "another-corpus", "audited corpus")
    refused(variant("blocklist", 2, {"blocklist_sha256": "f" * 64}), "ffffffffffff", "not the audit's")
    ungraded = variant("ungraded", 0, {})
    graded = (ungraded[0] / "scores.graded.jsonl").read_text().splitlines()
    (ungraded[0] / "scores.graded.jsonl").write_text("".join(
        line + "\n" for line in graded if json.loads(line)["attempt"] != 2))
    refused(ungraded, "no grades of attempt 2")
    refused(variant("model", 2, {"model": "other-m"}), "model 'other-m' differs")
    regraded = variant("regraded", 0, {})
    trajectories = (regraded[1] / "trajectories.jsonl").read_text()
    (regraded[1] / "trajectories.jsonl").write_text(trajectories.replace('"wrong-1"', '"changed"', 1))
    refused(regraded, "(attempt 1) are of another answer")


def test_the_shipped_upstream_pool_is_the_one_derived_from_the_sample() -> None:
    """data/construct/upstream.jsonl is what derived_upstream_rows makes of data/sample (and of
    data/construct/multihop.json): the fixture's provenance, checked."""
    from .construct_fixture import derived_upstream_rows, upstream_rows

    assert upstream_rows() == derived_upstream_rows()
    assert len(upstream_rows()) == 24
