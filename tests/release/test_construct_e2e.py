"""The whole DR-256 construction recipe on the fixture of data/construct, with real components
only, as ``make sample-release`` runs it (scripts/offline_recipe/driver.py, once per session:
tests/conftest.py): the fixture's URLs crawled from the loopback crawl server, the
corpus served by a real `drsearch serve` with the reviewed blocklist, three `drsearch run --preset dr256 --attempt
0|1|2` rollouts driven by the scripted chat server (drsearch.dev.chat), `drsearch
score` with the oracle judge, `construct calibrate` (with the rollouts' leak audit) and
`construct select --per-tier 2` into a release that `validate --deep` passes.

The six multi-hop questions (data/construct/multihop.json) are the ones the shortcut
audit keeps; the scripted reference agent searches the question, opens the hop page, opens
the answer page and answers: right in 0, 0, 1, 2 or 3 of its three rollouts, and one
question in two turns (too few)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from offline_recipe.driver import (
    MODEL,
    NAME,
    PLAN,
    RELEASE_README,
    RELEASE_TERMS,
    REVISION,
    Recipe,
    cli,
    jsonl,
)

from drsearch.corpus import stable_docid
from drsearch.index import BlockList, Engine
from drsearch.release.construct.answers import answer_in_text
from drsearch.release.dr256 import load_questions

from ..helpers import REPO
from .construct_fixture import DUMP_URL, multihop_qids
from .construct_pages import MULTIHOP

CONSTRUCT_MD = REPO / "docs" / "CONSTRUCT.md"


@pytest.fixture(scope="module")
def recipe(sample_recipe: Recipe) -> Recipe:
    """The run of ``make sample-release`` (tests/conftest.py): its release is the sample release."""
    return sample_recipe


def test_the_audit_keeps_exactly_the_multi_hop_questions(recipe: Recipe) -> None:
    shortcuts = {r["qid"]: r for r in jsonl(recipe.pool / "audit" / "shortcuts.jsonl")}
    assert {q for q, r in shortcuts.items() if not r["removed"]} == set(multihop_qids())
    kept = load_questions(recipe.kept, uncalibrated=True)
    assert not kept.problems and [r.metadata.qid for r in kept.rows] == \
        [q for q, r in shortcuts.items() if not r["removed"]]
    assert {r.metadata.benchmark.calibration_tier for r in kept.rows} == {None}
    assert load_questions(recipe.kept).problems  # uncalibrated rows are never a release's


def test_tiers_follow_the_rollouts(recipe: Recipe) -> None:
    tiers = {r["qid"]: r for r in jsonl(recipe.pool / "calibrate" / "tiers.jsonl")}
    want = {0: "challenge", 1: "frontier", 2: "frontier", 3: "excluded", "two turns": "excluded"}
    assert {q: tiers[q]["tier"] for q in recipe.plan} == {q: want[p] for q, p in recipe.plan.items()}
    by_plan = {p: tiers[q] for q, p in recipe.plan.items()}
    assert (by_plan[3]["code"], by_plan["two turns"]["code"]) == ("solved_every_rollout", "too_few_turns")
    assert by_plan[1]["stats"]["outcomes"] == ["correct", "incorrect", "incorrect"]
    assert by_plan[0]["stats"]["mean_turns"] == 5.0


def test_no_byte_sent_to_the_model_names_an_answer_docid_or_a_blocked_page(recipe: Recipe) -> None:
    answer_docids = {d for r in jsonl(recipe.pool / "answers" / "answers.jsonl") for d in r["answer_docids"]}
    blocked = BlockList.from_file(recipe.blocked).docids
    first = [r for r in recipe.requests if not any(m["role"] in ("tool", "assistant") for m in r["messages"])]
    assert len(first) == 3 * len(recipe.plan)  # every episode's first request: prompt and tools
    supplied = json.dumps(first)
    assert not [d for d in answer_docids | set(blocked) if d in supplied]
    received = json.dumps(recipe.requests)
    assert not [d for d in blocked if d in received]
    # the answer pages are found by searching, as an agent should find them (all but the two-turn question's)
    researched = [q for q, plan in zip(MULTIHOP, PLAN, strict=True) if plan != "two turns"]
    assert all(stable_docid(q["answer_page"][0]) in received for q in researched)
    leaks = jsonl(recipe.pool / "calibrate" / "leak_audit.jsonl")
    assert {r["qid"] for r in leaks} == set(recipe.plan)
    assert all(r["code"] is None and len(r["rollouts"]) == 3 for r in leaks)
    rollouts = [x for r in leaks for x in r["rollouts"]]
    assert all(x["supplied_answer_docids"] == [] and x["answer_from_artifact"] is None for x in rollouts)
    # the answer first reached the agent in its second search (for the page the hop page names),
    # never in the first one (the question's): research, not a shortcut
    solved = [x for r in leaks for x in r["rollouts"] if recipe.plan[r["qid"]] != "two turns"]
    assert {(x["first_leak"]["tool"], x["first_leak"]["turn"]) for x in solved} == {("search", 2)}


def test_select_makes_a_release_that_validates_deep(recipe: Recipe) -> None:
    code, text = cli("validate", "--release-dir", str(recipe.release), "--deep", "--json")
    report = json.loads(text)
    assert code == 0 and report["ok"] and report["failed"] == 0 and report["warnings"] == 0, text
    qs = load_questions(recipe.release / "benchmark" / "questions.jsonl")
    assert not qs.problems and qs.tiers == {"challenge": 2, "frontier": 2}
    assert sorted(r.metadata.benchmark.index for r in qs.rows) == [0, 1, 2, 3]
    tiers = {r["qid"]: r["tier"] for r in jsonl(recipe.pool / "calibrate" / "tiers.jsonl")}
    kept = {r["metadata"]["qid"]: r for r in jsonl(recipe.kept)}
    for row in qs.rows:
        b = row.metadata.benchmark
        assert b.calibration_tier == tiers[row.metadata.qid]
        assert b.selection_bucket == f"{b.calibration_tier}:seed=7:drawn=2/2"
        assert isinstance(b.base_pilot, dict) and b.base_pilot["model"] == MODEL == "drsearch-offline-scripted-reference-agent" and b.base_pilot["attempts"] == 3
        assert [m.model_dump() for m in row.prompt] == kept[row.metadata.qid]["prompt"]  # what the rollouts answered
    # every question is answerable from an unblocked document of the release's own corpus
    release_blocklist = BlockList.from_file(recipe.release / "benchmark" / "blocked_docids.txt")
    with Engine.open(recipe.release / "search" / "corpus.sqlite3", release_blocklist) as engine, \
            Engine.open(recipe.corpus) as audited:
        assert engine.meta["content_identity"] == audited.meta["content_identity"]
        for row in qs.rows:
            docs = [engine.open_document(docid=d) for d in row.metadata.benchmark.clean_provenance_answer_docids]
            assert docs and all(answer_in_text(d.text, row.label) for d in docs)
    assert (recipe.release / "benchmark" / "blocked_docids.txt").read_bytes() == recipe.blocked.read_bytes()


def test_the_release_carries_the_construction_evidence(recipe: Recipe) -> None:
    rel = recipe.release
    summary = json.loads((rel / "selection" / "summary.json").read_text())
    assert summary["stage_order"] == ["consolidate", "urls", "answers", "artifacts", "audit", "questions",
                                      "calibrate", "select"]
    assert summary["stages"]["select"]["facts"]["tiers"] == {"challenge": {"drawn": 2, "retained": 2},
                                                             "frontier": {"drawn": 2, "retained": 2}}
    selection = jsonl(rel / "selection" / "selection.jsonl")
    assert sum(r["selected"] for r in selection) == 4 and len(selection) == len(recipe.plan)
    removals = jsonl(rel / "selection" / "removals.jsonl")
    assert {r["stage"] for r in removals} == {"consolidate", "urls", "answers", "audit", "calibrate"}
    assert jsonl(rel / "audit" / "shortcuts.jsonl") == jsonl(recipe.pool / "audit" / "shortcuts.jsonl")
    assert jsonl(rel / "audit" / "leak_audit.jsonl") == jsonl(recipe.pool / "calibrate" / "leak_audit.jsonl")
    robots = jsonl(rel / "audit" / "robots.jsonl")
    assert [r["robots"] for r in robots].count("disallowed") == 1
    coverage = json.loads((rel / "audit" / "crawl_coverage.json").read_text())
    assert coverage["corpus_coverage"] is not None and coverage["fetch_summary"]["run"]["disallowed"] == 1
    manifest = json.loads((rel / "manifest.json").read_text())
    roles = {f["path"]: f["role"] for f in manifest["files"]}
    assert {roles[p] for p in roles if p.startswith("selection/")} == {"selection"}
    assert {roles[p] for p in roles if p.startswith("audit/")} == {"audit"}
    assert {roles[p] for p in roles if p.startswith("baselines/")} == {"baseline"}
    assert roles["README.md"] == "readme" and roles["TERMS.md"] == "terms" and "extra" not in roles.values()


def test_the_walk_through_shows_this_run(recipe: Recipe) -> None:
    """docs/CONSTRUCT.md quotes every stage's line of this run (as docs/GENERATE.md's table is pinned)."""
    doc = CONSTRUCT_MD.read_text(encoding="utf-8")
    for name, line in recipe.lines.items():
        shown = re.sub(re.escape(str(recipe.release)), "release", line)
        assert shown in doc, (name, shown)


def test_the_same_inputs_select_the_same_release(recipe: Recipe, tmp_path: Path) -> None:
    again = tmp_path / "again"
    code, text = cli("construct", "select", str(recipe.pool), "--per-tier", "2", "--seed", "7", "--out", str(again),
                     "--name", NAME, "--revision", REVISION, "--readme", str(RELEASE_README),
                     "--terms", str(RELEASE_TERMS))
    assert code == 0 and "(up to date" not in text, text
    for rel in ("manifest.json", "checksums.sha256", "benchmark/questions.jsonl", "selection/selection.jsonl",
                "README.md", "baselines/attempt-0/run.json"):
        assert (again / rel).read_bytes() == (recipe.release / rel).read_bytes(), rel


# -- bad input: one line, nothing written -----------------------------------------------------


def _refused(capsys: pytest.CaptureFixture[str], code_wanted: int, *argv: str) -> str:
    capsys.readouterr()
    code, _ = cli(*argv)
    err = capsys.readouterr().err
    assert code == code_wanted and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_a_short_tier_is_exit_1_unless_allowed(recipe: Recipe, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "short"
    before = (recipe.pool / "select" / "manifest.json").read_bytes()
    err = _refused(capsys, 1, "construct", "select", str(recipe.pool), "--per-tier", "3", "--seed", "7",
                   "--out", str(out))
    assert "tier frontier has only 2" in err and "frontier 2, challenge 2" in err, err
    assert not out.exists() and (recipe.pool / "select" / "manifest.json").read_bytes() == before
    code, text = cli("construct", "select", str(recipe.pool), "--per-tier", "3", "--seed", "7", "--out", str(out),
                     "--allow-short", "--json")
    assert code == 0, text
    assert json.loads(text)["facts"]["tiers"]["frontier"] == {"drawn": 2, "retained": 2}
    assert load_questions(out / "benchmark" / "questions.jsonl").tiers == {"challenge": 2, "frontier": 2}
    # the pool's select stage is the last one run; restore the fixture's
    assert cli("construct", "select", str(recipe.pool), "--per-tier", "2", "--seed", "7",
               "--out", str(tmp_path / "restored"))[0] == 0


def test_unknown_placeholders_and_another_prompt_are_exit_2(recipe: Recipe, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "drsearch-prompt-template", "format_version": 1,
                               "messages": [{"role": "user", "content": "Q: {question} (answer: {answer})"}]}))
    kept = recipe.kept.read_bytes()
    err = _refused(capsys, 2, "construct", "questions", str(recipe.pool), "--prompt-template", str(bad))
    assert "unknown placeholder {answer}" in err and str(bad) in err
    assert recipe.kept.read_bytes() == kept
    out = tmp_path / "rel"
    err = _refused(capsys, 2, "construct", "select", str(recipe.pool), "--per-tier", "2", "--seed", "7",
                   "--out", str(out), "--prompt-template", str(bad))
    assert "unknown placeholder {answer}" in err and not out.exists()
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"format": "drsearch-prompt-template", "format_version": 1,
                                 "messages": [{"role": "user", "content": "Question: {question}\nAnswer briefly:"}]}))
    err = _refused(capsys, 2, "construct", "select", str(recipe.pool), "--per-tier", "2", "--seed", "7",
                   "--out", str(out), "--prompt-template", str(other))
    assert "not the one its calibration rollout" in err and not out.exists()


def test_a_calibration_older_than_the_audit_is_exit_2(recipe: Recipe, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    shortcuts = recipe.pool / "audit" / "shortcuts.jsonl"
    saved = shortcuts.read_bytes()
    out = tmp_path / "rel"
    try:
        shortcuts.write_bytes(saved + b"\n")  # the audit changed after the calibration read it
        err = _refused(capsys, 2, "construct", "select", str(recipe.pool), "--per-tier", "2", "--seed", "7",
                       "--out", str(out))
        assert "stale" in err and "shortcuts.jsonl" in err and "construct calibrate" in err and not out.exists()
    finally:
        shortcuts.write_bytes(saved)


def test_a_rollout_shown_a_blocked_page_is_exit_2(recipe: Recipe, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    runs = [tmp_path / r.name for r in recipe.runs]
    for src, dst in zip(recipe.runs, runs, strict=True):
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.sqlite3"))
    dump = stable_docid(DUMP_URL)
    path = runs[1] / "trajectories.jsonl"
    text = path.read_text()
    first_hit = re.search(r"docid: (d-[0-9a-f]{16})", text)
    assert first_hit is not None
    path.write_text(text.replace(first_hit.group(1), dump))  # as a server without the blocklist would show it
    tiers = (recipe.pool / "calibrate" / "tiers.jsonl").read_bytes()
    err = _refused(capsys, 2, "construct", "calibrate", str(recipe.pool), "--runs", *map(str, runs),
                   "--grades", str(recipe.runs[0] / "scores.graded.jsonl"))
    assert dump in err and str(runs[1]) in err and "blocklist" in err
    assert (recipe.pool / "calibrate" / "tiers.jsonl").read_bytes() == tiers


def test_a_rollout_sent_an_answer_docid_excludes_its_question(recipe: Recipe, tmp_path: Path) -> None:
    """The harness handing a rollout an answer docid (here: written into its system message)
    excludes the question as answer_docid_supplied, whatever its tier would have been."""
    qid = next(q for q, p in recipe.plan.items() if p == 1)  # a frontier question
    answer_doc = stable_docid(MULTIHOP[PLAN.index(1)]["answer_page"][0])
    runs = [tmp_path / r.name for r in recipe.runs]
    for src, dst in zip(recipe.runs, runs, strict=True):
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("*.sqlite3"))
    path = runs[2] / "trajectories.jsonl"
    episodes = jsonl(path)
    for e in episodes:
        if e["qid"] == qid:
            e["messages"][0]["content"] += f" The answer is in document {answer_doc}."
    path.write_text("".join(json.dumps(e) + "\n" for e in episodes))
    grades = str(recipe.runs[0] / "scores.graded.jsonl")
    try:
        code, text = cli("construct", "calibrate", str(recipe.pool), "--runs", *map(str, runs), "--grades", grades)
        assert code == 0, text
        assert "2 frontier" not in text and "removed: 1 answer_docid_supplied" in text
        tiers = {r["qid"]: r for r in jsonl(recipe.pool / "calibrate" / "tiers.jsonl")}
        assert (tiers[qid]["tier"], tiers[qid]["code"]) == ("excluded", "answer_docid_supplied")
        assert answer_doc in tiers[qid]["reason"] and "rollout 2" in tiers[qid]["reason"]
        leak = {r["qid"]: r for r in jsonl(recipe.pool / "calibrate" / "leak_audit.jsonl")}[qid]
        assert [r["supplied_answer_docids"] for r in leak["rollouts"]] == [[], [], [answer_doc]]
    finally:  # the fixture's calibration again
        assert cli("construct", "calibrate", str(recipe.pool), "--runs", *map(str, recipe.runs))[0] == 0
    assert recipe.lines["calibrate"].split(": ", 1)[1] in cli("construct", "calibrate", str(recipe.pool),
                                                               "--runs", *map(str, recipe.runs))[1]


def test_an_answer_read_in_an_unblocked_artifact_excludes_its_question(recipe: Recipe) -> None:
    """leak_audit over the real rollouts, with the answer page of one question taken for an
    artifact candidate the reviewer did not block: that question is answer_from_artifact."""
    from drsearch.benchmark import read_run
    from drsearch.release.construct import leak_audit

    runs = [read_run(r) for r in recipe.runs]
    golds = {r["metadata"]["qid"]: r["label"] for r in jsonl(recipe.kept)}
    answer_docids = {d for r in jsonl(recipe.pool / "answers" / "answers.jsonl") for d in r["answer_docids"]}
    qid = next(q for q, p in recipe.plan.items() if p == 2)
    page = stable_docid(MULTIHOP[PLAN.index(2)]["answer_page"][0])
    lines = {r["qid"]: r for r in leak_audit(list(recipe.plan), runs, golds, answer_docids, set(), {page})}
    assert lines[qid]["code"] == "answer_from_artifact" and page in lines[qid]["reason"]
    assert {q for q, r in lines.items() if r["code"] is not None} == {qid}
    clean = leak_audit(list(recipe.plan), runs, golds, answer_docids, set(), set())
    assert all(r["code"] is None for r in clean)


def test_another_crawl_or_a_used_directory_is_exit_2(recipe: Recipe, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    used = tmp_path / "used"
    used.mkdir()
    (used / "keep.txt").write_text("mine\n")
    err = _refused(capsys, 2, "construct", "select", str(recipe.pool), "--per-tier", "2", "--seed", "7",
                   "--out", str(used))
    assert "not an empty directory" in err and (used / "keep.txt").read_text() == "mine\n"
    crawl = tmp_path / "crawl"
    shutil.copytree(Path(str(recipe.corpus) + ".crawl"), crawl)
    docs = (crawl / "docs.jsonl").read_text().splitlines()
    (crawl / "docs.jsonl").write_text("".join(line + "\n" for line in docs[:-1]))  # one page fewer
    out = tmp_path / "rel"
    err = _refused(capsys, 2, "construct", "select", str(recipe.pool), "--per-tier", "2", "--seed", "7",
                   "--out", str(out), "--crawl-dir", str(crawl))
    assert "not the audited corpus" in err and not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["crawl", "used"]  # no half release left behind


def test_a_pool_question_without_a_dr256_difficulty_is_exit_2(recipe: Recipe, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    pool = tmp_path / "pool"
    for stage in ("consolidate", "answers", "audit"):
        shutil.copytree(recipe.pool / stage, pool / stage)
    qid = next(iter(recipe.plan))
    lines = jsonl(pool / "consolidate" / "pool.jsonl")
    for line in lines:
        if line["qid"] == qid:
            line["difficulty"] = [None]
    (pool / "consolidate" / "pool.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    err = _refused(capsys, 2, "construct", "questions", str(pool))
    assert qid in err and "difficulty None is not 1, 2 or 3" in err
    assert not (pool / "questions").exists()


@pytest.mark.slow
def test_the_recipe_script_is_deterministic(recipe: Recipe, tmp_path: Path) -> None:
    """`scripts/make_sample_release.py` (the recipe, fetch times frozen) gives, in another
    directory, the release the session's recipe run made, byte for byte (no path of the
    machine in it), and it validates --deep; an existing release is kept without --force."""
    import subprocess
    import sys

    out = tmp_path / "elsewhere" / "sample-release"
    out.mkdir(parents=True)
    (out / "keep.txt").write_text("a file already there\n")

    def script(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(REPO / "scripts" / "make_sample_release.py"),
                               "--out", str(out), *extra], capture_output=True, text=True, timeout=600, cwd=REPO)

    refused = script()
    assert refused.returncode == 2 and "--force" in refused.stderr  # an existing release is kept
    assert (out / "keep.txt").is_file()
    made = script("--force")
    assert made.returncode == 0, made.stdout + made.stderr
    assert "construct select: 4 questions" in made.stdout and "validate --deep: PASS" in made.stdout

    def files(root: Path) -> dict[str, bytes]:
        return {f.relative_to(root).as_posix(): f.read_bytes() for f in sorted(root.rglob("*")) if f.is_file()}

    first, second = files(recipe.release), files(out)
    assert str(tmp_path) != str(recipe.release.parent)
    assert sorted(first) == sorted(second)
    assert [n for n in first if first[n] != second[n]] == []
    assert {"manifest.json", "checksums.sha256", "benchmark/questions.jsonl", "search/corpus.sqlite3",
            "selection/summary.json", "audit/leak_audit.jsonl"} <= set(first)
    assert not any(str(p).encode() in b for b in second.values() for p in (tmp_path, recipe.release.parent))
    code, text = cli("validate", "--release-dir", str(out), "--deep")
    assert code == 0, text
    _release_md_shows_this_release_renamed(out)


def _release_md_shows_this_release_renamed(release: Path) -> None:
    """docs/RELEASE.md's "pinned identity" example is this sample release renamed DR-256
    v1.1.0: its sizes and hashes are generated by the code, not typed (they went stale once)."""
    from drsearch.release import validate_release
    from drsearch.release.manifest import write_release_manifest

    write_release_manifest(release, "DR-256", "v1.1.0")
    message = validate_release(release).by_name("pinned identity").message
    shown = re.sub(r"\b([0-9a-f]{8})[0-9a-f]{56}\b", r"\1…", message)  # the docs abridge SHA-256s
    doc = (REPO / "docs/RELEASE.md").read_text(encoding="utf-8")
    block = re.search(r"^FAIL  pinned identity  (.*?)^```", doc, re.S | re.M)
    assert block is not None
    assert " ".join(block.group(1).split()) == shown
