"""Releases as the DR-256 card ships them: README.md and TERMS.md from templates
the user completes (no assembly while placeholders remain, unless allowed), LICENSE-CODE
where code ships, baselines/ kept by `construct select`, and `validate` knowing each file's
role."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from drsearch.release import validate_release
from drsearch.release.manifest import role_of, write_release_manifest
from drsearch.tools.cli import main

from ..helpers import DATA


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(list(args), out=out)
    return rc, out.getvalue(), err.getvalue()


def assemble(out: Path, *extra: str) -> tuple[int, str, str]:
    return cli("release", "assemble", "--docs", str(DATA / "sample/docs.jsonl"), "--questions",
               str(DATA / "sample/questions.jsonl"), "--blocked-docids", str(DATA / "sample/blocked_docids.txt"),
               "--out", str(out), "--name", "docs-test", "--revision", "0.1.0", "--quiet", *extra)


def checks(root: Path) -> dict[str, tuple[str, str]]:
    return {c.name: (c.status, c.message) for c in validate_release(root).checks}


def completed(tmp: Path) -> tuple[Path, Path]:
    """The bundled templates, written by `release templates` and completed as a user would."""
    rc, out, err = cli("release", "templates", "--out", str(tmp / "docs"))
    assert rc == 0, err
    assert "complete every {{FILL: …}}" in out
    paths = (tmp / "docs" / "README.md", tmp / "docs" / "TERMS.md")
    for path in paths:
        path.write_text(re.sub(r"\{\{FILL:.*?\}\}", "Written by the release's author.", path.read_text(),
                               flags=re.S))
    return paths


def roles(root: Path) -> dict[str, str]:
    return {f["path"]: f["role"] for f in json.loads((root / "manifest.json").read_text())["files"]}


def test_completed_templates_become_the_release_s_readme_and_terms(tmp_path: Path) -> None:
    readme, terms = completed(tmp_path)
    rc, _, err = assemble(tmp_path / "rel", "--readme", str(readme), "--terms", str(terms))
    assert rc == 0 and "warning" not in err, err
    text = (tmp_path / "rel" / "README.md").read_text()
    questions_sha = hashlib.sha256((DATA / "sample/questions.jsonl").read_bytes()).hexdigest()
    summary = json.loads((tmp_path / "rel/benchmark/summary.json").read_text())
    assert text.startswith("# docs-test 0.1.0\n")
    assert "| questions | 12 (6 challenge, 6 frontier) |" in text and questions_sha in text
    assert summary["corpus"]["content_identity"] in text and "{{" not in text
    assert (tmp_path / "rel" / "TERMS.md").read_text().startswith("# Terms of use: docs-test 0.1.0\n")
    assert roles(tmp_path / "rel")["README.md"] == "readme" and roles(tmp_path / "rel")["TERMS.md"] == "terms"
    report = validate_release(tmp_path / "rel")
    assert report.ok(strict=True), [c for c in report.checks if c.status != "PASS"]
    assert report.by_name("documents").status == "PASS" and report.by_name("roles").status == "PASS"


def test_placeholders_left_refuse_the_assembly_and_nothing_is_written(tmp_path: Path) -> None:
    cli("release", "templates", "--out", str(tmp_path / "docs"))
    rc, _, err = assemble(tmp_path / "rel", "--readme", str(tmp_path / "docs/README.md"),
                          "--terms", str(tmp_path / "docs/TERMS.md"))
    assert rc == 2 and err.count("\n") == 1 and "placeholder(s) to complete" in err and "README.md" in err
    assert "--allow-placeholders" in err
    assert not (tmp_path / "rel").exists()


def test_allow_placeholders_assembles_and_validate_warns(tmp_path: Path) -> None:
    rc, _, err = assemble(tmp_path / "rel", "--allow-placeholders")  # the bundled templates, as they are
    assert rc == 0, err
    report = validate_release(tmp_path / "rel")
    doc = report.by_name("documents")
    assert doc.status == "WARN" and "placeholders left to complete" in doc.message
    assert report.ok() and not report.ok(strict=True)
    rc, _, _ = cli("validate", "--release-dir", str(tmp_path / "rel"), "--strict")
    assert rc == 1


def test_without_documents_the_release_says_so_and_validate_warns(tmp_path: Path) -> None:
    rc, _, err = assemble(tmp_path / "rel")
    assert rc == 0 and "no --readme/--terms" in err
    assert not (tmp_path / "rel/README.md").exists()
    status, message = checks(tmp_path / "rel")["documents"]
    assert status == "WARN" and "no README.md or TERMS.md" in message


@pytest.mark.parametrize("body, why", [
    ("# {{nmae}}\n", "unknown field {{nmae}}"),
])
def test_an_unknown_field_is_exit_2(tmp_path: Path, body: str, why: str) -> None:
    _, terms = completed(tmp_path)
    (tmp_path / "README.md").write_text(body)
    rc, _, err = assemble(tmp_path / "rel", "--readme", str(tmp_path / "README.md"), "--terms", str(terms))
    assert rc == 2 and why in err and not (tmp_path / "rel").exists()


def test_readme_goes_with_terms(tmp_path: Path) -> None:
    readme, _ = completed(tmp_path)
    rc, _, err = assemble(tmp_path / "rel", "--readme", str(readme))
    assert rc == 2 and "--readme goes with --terms" in err and not (tmp_path / "rel").exists()


def test_templates_json_names_the_two_files(tmp_path: Path) -> None:
    rc, out, err = cli("release", "templates", "--out", str(tmp_path / "docs"), "--json")
    assert rc == 0, err
    assert json.loads(out) == {"readme": str(tmp_path / "docs/README.md"), "terms": str(tmp_path / "docs/TERMS.md")}


def test_templates_are_not_overwritten(tmp_path: Path) -> None:
    completed(tmp_path)
    rc, _, err = cli("release", "templates", "--out", str(tmp_path / "docs"))
    assert rc == 2 and "not replaced" in err
    assert "Written by the release's author." in (tmp_path / "docs/README.md").read_text()


def test_code_ships_with_license_code_and_validate_requires_it(tmp_path: Path) -> None:
    readme, terms = completed(tmp_path)
    tools = tmp_path / "tools-src"
    tools.mkdir()
    (tools / "rebuild.py").write_text("print('rebuild')\n")
    rc, _, err = assemble(tmp_path / "rel", "--readme", str(readme), "--terms", str(terms), "--tools", str(tools))
    assert rc == 0, err
    rel = tmp_path / "rel"
    assert (rel / "tools/rebuild.py").read_text() == "print('rebuild')\n"
    assert "Apache License" in (rel / "LICENSE-CODE").read_text()
    assert roles(rel)["tools/rebuild.py"] == "code" and roles(rel)["LICENSE-CODE"] == "license_code"
    assert checks(rel)["license_code"][0] == "PASS"
    (rel / "LICENSE-CODE").unlink()
    write_release_manifest(rel)
    status, message = checks(rel)["license_code"]
    assert status == "FAIL" and "without LICENSE-CODE" in message


def test_code_license_goes_with_tools(tmp_path: Path) -> None:
    readme, terms = completed(tmp_path)
    rc, _, err = assemble(tmp_path / "rel", "--readme", str(readme), "--terms", str(terms),
                          "--code-license", str(readme))
    assert rc == 2 and "--code-license goes with --tools" in err


def test_a_file_under_another_role_fails_validation(release: Path) -> None:
    manifest = json.loads((release / "manifest.json").read_text())
    for f in manifest["files"]:
        if f["path"] == "README.md":
            f["role"] = "extra"
    (release / "manifest.json").write_text(json.dumps(manifest))
    status, message = checks(release)["roles"]
    assert status == "FAIL" and "README.md: role 'extra', expected 'readme'" in message


def test_roles_follow_paths() -> None:
    assert [role_of(p) for p in ("README.md", "TERMS.md", "LICENSE-CODE", "baselines/attempt-0/run.json",
                                 "tools/x.py", "selection/tiers.jsonl", "audit/robots.jsonl", "notes.txt",
                                 "search/corpus.sqlite3")] == \
        ["readme", "terms", "license_code", "baseline", "code", "selection", "audit", "extra", "corpus_database"]


# -- the sample release (construct select) ------------------------------------------------


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_select_keeps_the_calibration_rollouts_as_baselines(pristine_release: Any, sample_recipe: Any) -> None:
    base = pristine_release / "baselines"
    assert sorted(p.name for p in base.iterdir()) == ["attempt-0", "attempt-1", "attempt-2", "scores.graded.jsonl"]
    for n, run in enumerate(sample_recipe.runs):
        kept = json.loads((base / f"attempt-{n}" / "run.json").read_text())
        recorded = json.loads((run / "run.json").read_text())
        expected = {k: v for k, v in recorded.items() if k not in ("started_at", "base_url", "search")}
        # the questions file is named relative to the construction's work directory, not where it lay
        assert expected["questions"] == str(sample_recipe.root / "pool" / "questions" / "kept.jsonl")
        assert kept == {**expected, "questions": "pool/questions/kept.jsonl"}
        assert (base / f"attempt-{n}" / "trajectories.jsonl").read_bytes() == \
            (run / "trajectories.jsonl").read_bytes()
    graded = [json.loads(line) for line in (sample_recipe.runs[0] / "scores.graded.jsonl").read_text().splitlines()]
    assert _jsonl(base / "scores.graded.jsonl") == [{**g, "wall_s": None} for g in graded]  # a clock fact: null
    assert len(graded) == 18 and {g["attempt"] for g in graded} == {0, 1, 2}
    assert {r for p, r in roles(pristine_release).items() if p.startswith("baselines/")} == {"baseline"}
    report = validate_release(pristine_release)
    assert report.by_name("baselines").status == "PASS" and "3 reference run(s)" in report.by_name("baselines").message
    assert report.by_name("documents").status == "PASS"  # the recipe's completed README and TERMS
    assert "drsearch-sample" in (pristine_release / "README.md").read_text()


def test_a_baseline_over_another_corpus_is_a_warning(release: Path) -> None:
    run_json = release / "baselines" / "attempt-1" / "run.json"
    recorded = json.loads(run_json.read_text())
    recorded["corpus_identity"] = "0" * 32
    run_json.write_text(json.dumps(recorded))
    write_release_manifest(release)
    status, message = checks(release)["baselines"]
    assert status == "WARN" and "baselines/attempt-1: ran over corpus 000" in message
    assert "not comparable" in message


def test_select_refuses_placeholders_before_writing(sample_recipe: Any, tmp_path: Path) -> None:
    cli("release", "templates", "--out", str(tmp_path / "docs"))
    before = (sample_recipe.pool / "select" / "manifest.json").read_bytes()
    rc, _, err = cli("construct", "select", str(sample_recipe.pool), "--per-tier", "2", "--seed", "7",
                     "--out", str(tmp_path / "rel"), "--readme", str(tmp_path / "docs/README.md"),
                     "--terms", str(tmp_path / "docs/TERMS.md"))
    assert rc == 2 and "placeholder(s) to complete" in err and err.count("\n") == 1
    assert not (tmp_path / "rel").exists()
    assert (sample_recipe.pool / "select" / "manifest.json").read_bytes() == before
