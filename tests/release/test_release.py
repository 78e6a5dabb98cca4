"""Release validation: tamper tests, manifests, and pinned identities."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
from pathlib import Path

import apsw
import pytest

from drsearch.index import sha256_file
from drsearch.release import checks as release_checks
from drsearch.release.dr256 import DR256_V1_1_0, PinnedRelease
from drsearch.release.manifest import DATABASE, checksum_lines, parse_checksums, write_release_manifest
from drsearch.release.report import ValidationReport
from drsearch.release.validate import validate_release
from drsearch.tools.cli import main

from ..helpers import DATA
from .conftest import snapshot


def validate(root: Path, deep: bool = False) -> ValidationReport:
    return validate_release(root, deep=deep)


def status(report: ValidationReport, name: str) -> str:
    return report.by_name(name).status


def failed(report: ValidationReport) -> dict[str, str]:
    return {c.name: c.message for c in report.checks if c.status == "FAIL"}


def cli(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    return main(list(args), out=buf), buf.getvalue()


def leaf_page(db: Path, table: str) -> int:
    conn = apsw.Connection(f"file:{db}?mode=ro", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    try:
        # the sixth leaf, or the last of fewer (a version-4 chunks table holds no text: few pages)
        pages = [r[0] for r in conn.execute("SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' "
                                            "ORDER BY pageno", (table,))]
        return int(pages[min(5, len(pages) - 1)])
    finally:
        conn.close()


# -- a sound release --------------------------------------------------------------------


def test_sound_release_passes_fast_and_deep_and_is_never_modified(release: Path) -> None:
    before = snapshot(release)
    for deep in (False, True):
        report = validate(release, deep)
        assert report.ok(strict=True), failed(report)
    assert snapshot(release) == before
    assert status(report, "corpus sha256") == "PASS" and report.by_name("corpus sha256").details["mb_per_s"] > 0


def test_a_read_only_release_validates_deep(release: Path) -> None:
    files = [p for p in release.rglob("*") if p.is_file()]
    for p in [*files, *[d for d in release.rglob("*") if d.is_dir()], release]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    try:
        before = snapshot(release)
        assert validate(release, deep=True).ok(strict=True)
        assert snapshot(release) == before
    finally:
        for p in [release, *release.rglob("*")]:
            p.chmod(p.stat().st_mode | stat.S_IWUSR)


# -- tamper tests ----------------------------------------------------------------------


def test_flipped_byte_in_the_database_passes_fast_on_size_and_fails_deep_on_hash(release: Path) -> None:
    db = release / DATABASE
    data = bytearray(db.read_bytes())
    at = data.find(b"demonstrators inside the Polytechnic University")
    data[at] ^= 0x20  # 'd' -> 'D': same size, still valid text
    db.write_bytes(bytes(data))
    fast = validate(release)
    assert fast.ok() and status(fast, f"file {DATABASE}") == "PASS"
    deep = validate(release, deep=True)
    assert not deep.ok() and "corpus sha256" in failed(deep)
    assert f"{DATABASE} SHA-256 {sha256_file(db)}, manifest says " in failed(deep)["corpus sha256"]


def test_damaged_btree_page_fails_deep_through_quick_check_even_with_a_fresh_manifest(release: Path) -> None:
    db = release / DATABASE
    page = leaf_page(db, "chunks")
    with open(db, "r+b") as fh:
        fh.seek((page - 1) * 4096)
        fh.write(b"\x0d\xff\xff\xff\xff\x00\x00\x00")  # leaf type, then nonsense freeblock/cells/content
    write_release_manifest(release)  # hashes now describe the damaged file
    assert validate(release).ok()
    deep = validate(release, deep=True)
    assert status(deep, "corpus sha256") == "PASS"
    assert status(deep, "corpus quick_check") == "FAIL" and not deep.ok()
    assert failed(deep)["corpus quick_check"].startswith(f"{DATABASE}: ")


def test_a_damaged_chunk_span_fails_deep_through_fts5s_check_even_with_a_fresh_manifest(release: Path) -> None:
    """A version-4 chunk is a byte span of its document's text: a span moved cuts another text
    than FTS5 indexed, which FTS5's integrity-check (through drsearch's chunk_texts view) finds."""
    db = release / DATABASE
    conn = apsw.Connection(str(db))
    conn.execute("UPDATE chunks SET end_byte = end_byte - 40 WHERE id = 5")
    conn.close()
    write_release_manifest(release)
    deep = validate(release, deep=True)
    assert status(deep, "corpus quick_check") == "PASS"
    assert not deep.ok() and "integrity-check" in " ".join(failed(deep).values())


@pytest.mark.parametrize("keep", [0.5, -4096, -1])
def test_truncated_database_fails_fast_and_deep(release: Path, keep: float) -> None:
    db = release / DATABASE
    size = db.stat().st_size
    new = int(size * keep) if keep > 0 else size + int(keep)
    with open(db, "r+b") as fh:
        fh.truncate(new)
    for deep in (False, True):
        report = validate(release, deep)
        bad = failed(report)
        assert not report.ok() and f"file {DATABASE}" in bad and "corpus header" in bad
        assert f"{new:,} bytes, manifest says {size:,}" in bad[f"file {DATABASE}"]


def test_edited_question_fails_naming_the_file(release: Path) -> None:
    q = release / "benchmark/questions.jsonl"
    lines = q.read_text(encoding="utf-8").splitlines(keepends=True)
    row = json.loads(lines[3])
    row["label"] = "Martin Tailor"
    lines[3] = json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n"
    q.write_text("".join(lines), encoding="utf-8")
    bad = failed(validate(release))
    assert list(bad) == ["file benchmark/questions.jsonl"]
    code, out = cli("validate", "--release-dir", str(release))
    assert code == 1 and "FAIL  file benchmark/questions.jsonl" in out and out.rstrip().endswith(str(release))


def test_questions_written_as_the_card_describes_them_validate(release: Path) -> None:
    """``dataset_rows`` as integer or string identifiers, fingerprints in another scheme,
    ``base_pilot`` as a string or an object: the card fixes none of these types, so such a
    release is sound; a wrong index, tier or label type still fails naming file and line."""
    q = release / "benchmark/questions.jsonl"
    rows = [json.loads(line) for line in q.read_text(encoding="utf-8").splitlines()]
    rows[0]["metadata"].update(dataset_rows=[17, 4023], row_fingerprints=["row:17", "row:4023"])
    rows[1]["metadata"].update(dataset_rows=["nq/train/88"], row_fingerprints=["ABC"])
    rows[0]["metadata"]["benchmark"]["base_pilot"] = "solved"
    rows[1]["metadata"]["benchmark"]["base_pilot"] = {"runs": 3, "correct": 1}

    def write(rows: list[dict[str, object]]) -> None:
        q.write_text("".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows),
                     encoding="utf-8")

    write(rows)
    write_release_manifest(release)
    report = validate(release)
    assert report.ok(strict=True), failed(report)
    for field, value in [("index", "4"), ("calibration_tier", "hard"), ("label", 30)]:
        bad_rows = json.loads(json.dumps(rows))
        target = bad_rows[3] if field == "label" else bad_rows[3]["metadata"]["benchmark"]
        target[field] = value
        write(bad_rows)  # the manifest is not rewritten: it refuses rows that do not validate
        message = failed(validate(release))["questions schema"]
        assert "benchmark/questions.jsonl:4: " in message and field in message, message


def test_unknown_file_is_a_warning(release: Path) -> None:
    (release / "search" / "notes.txt").write_text("hello\n")
    report = validate(release)
    assert report.ok() and not report.ok(strict=True)
    assert report.by_name("file search/notes.txt").status == "WARN"
    assert cli("validate", "--release-dir", str(release))[0] == 0
    assert cli("validate", "--release-dir", str(release), "--strict")[0] == 1


@pytest.mark.parametrize("rel", ["search/coverage_summary.json", "benchmark/blocked_docids.txt", DATABASE,
                                 "manifest.json", "checksums.sha256"])
def test_removed_file_fails(release: Path, rel: str) -> None:
    (release / rel).unlink()
    report = validate(release, deep=True)
    assert not report.ok()
    assert rel in report.by_name("layout").message


def test_nonexistent_blocked_docid_fails(release: Path) -> None:
    with open(release / "benchmark/blocked_docids.txt", "a") as fh:
        fh.write("d-0000000000000000\n")
    write_release_manifest(release)
    bad = failed(validate(release))
    assert bad["blocked_docids"] == ("benchmark/blocked_docids.txt: 1 of 2 blocked docids are not in the corpus: "
                                     "d-0000000000000000")


def test_answer_documents_must_be_present_and_unblocked(release: Path) -> None:
    """The blocklist holds leak artifacts; a blocked (or absent) independent answer document
    makes its question unanswerable by construction: a FAIL, not a warning."""
    assert validate(release).by_name("answer docids").status == "PASS"
    questions = release / "benchmark/questions.jsonl"
    answer = json.loads(questions.read_text().splitlines()[0])["metadata"]["benchmark"][
        "clean_provenance_answer_docids"][0]
    with open(release / "benchmark/blocked_docids.txt", "a") as fh:
        fh.write(f"{answer}\n")
    write_release_manifest(release)
    check = validate(release).by_name("answer docids")
    assert check.status == "FAIL" and f"1 blocked ({answer})" in check.message


def test_an_answer_document_absent_from_the_corpus_fails(release: Path) -> None:
    questions = release / "benchmark/questions.jsonl"
    rows = questions.read_text().splitlines()
    row = json.loads(rows[0])
    row["metadata"]["benchmark"]["clean_provenance_answer_docids"] = ["d-0000000000000000"]
    questions.write_text("\n".join([json.dumps(row), *rows[1:]]) + "\n")
    write_release_manifest(release)
    check = validate(release).by_name("answer docids")
    assert check.status == "FAIL" and "1 not in the corpus (d-0000000000000000)" in check.message


def test_changed_summary_counts_fail(release: Path) -> None:
    path = release / "benchmark/summary.json"
    summary = json.loads(path.read_text())
    summary["questions"] = 13
    summary["corpus"]["chunks"] += 1
    path.write_text(json.dumps(summary))
    write_release_manifest(release)
    message = failed(validate(release))["summary counts"]
    assert "questions is 13 but the release has 4" in message
    assert "chunks is 76 but the corpus meta has 75" in message


# -- more ways a release can be wrong ----------------------------------------------------


def test_checksums_and_manifest_must_agree(release: Path) -> None:
    sums = (release / "checksums.sha256").read_text()
    (release / "checksums.sha256").write_text(sums.replace("  benchmark/summary.json", "  benchmark/other.json"))
    message = failed(validate(release))["checksums"]
    assert "no line for benchmark/summary.json" in message and "does not list: benchmark/other.json" in message
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["release"]["revision"] = "1.0.1"
    (release / "manifest.json").write_text(json.dumps(manifest))
    assert "manifest.json does not match its checksum" in failed(validate(release))["checksums"]


def test_manifest_paths_cannot_escape_the_release(release: Path, tmp_path: Path) -> None:
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["files"][0]["path"] = "../outside.txt"
    (release / "manifest.json").write_text(json.dumps(manifest))
    assert "file path '../outside.txt' contains an empty, '.' or '..' part" in failed(validate(release))["manifest"]


@pytest.mark.parametrize("rel", ["benchmark/questions.jsonl", "search/corpus.sqlite3", "manifest.json",
                                 "search", "benchmark/notes.txt"])
def test_a_release_file_resolving_outside_the_release_is_refused(release: Path, tmp_path: Path,
                                                                 rel: str) -> None:
    """The same bytes behind a symlink that leaves the release (of the file, or of a directory
    above it) are not part of the release: validate fails naming the file and reads nothing
    else; ``release manifest`` refuses to vouch for it (exit 2, one line)."""
    outside = tmp_path / "elsewhere" / rel
    outside.parent.mkdir(parents=True)
    if rel == "benchmark/notes.txt":  # an extra file that exists only outside
        outside.write_text("not part of the release\n")
    else:
        (release / rel).rename(outside)
    (release / rel).symlink_to(outside)
    report = validate(release, deep=True)
    bad = failed(report)
    assert not report.ok() and bad[f"file {rel}"] == (f"resolves outside the release (to {outside}): refused, "
                                                      "not read; a release must hold its own files")
    assert "containment" in bad and all(  # nothing but containment failures: no other check ran
        name == "containment" or msg.startswith("resolves outside") for name, msg in bad.items())
    assert {c.name for c in report.checks} == set(bad)
    code, out = cli("validate", "--release-dir", str(release))
    assert code == 1 and f"FAIL  file {rel}" in out
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        assert main(["release", "manifest", str(release), "--quiet"], out=io.StringIO()) == 2
    assert f"{rel} resolves outside the release (to {outside})" in err.getvalue()
    assert len(err.getvalue().strip().splitlines()) == 1


def test_symlinks_that_stay_inside_the_release_are_fine(release: Path) -> None:
    (release / "benchmark/copy-of-summary.json").symlink_to("summary.json")
    (release / "search/alias").symlink_to("../benchmark")
    write_release_manifest(release)
    report = validate(release)
    assert report.ok(), failed(report)
    assert report.by_name("file benchmark/copy-of-summary.json").status == "PASS"


def test_a_symlink_loop_in_a_release_is_refused_not_raised(release: Path) -> None:
    (release / "search/loop").symlink_to("loop")
    bad = failed(validate(release))
    assert bad["file search/loop"].startswith("resolves outside the release (to an unresolvable link")


def test_corpus_meta_must_match_the_manifest(release: Path) -> None:
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["corpus"]["content_identity"] = "0" * 32
    manifest["corpus"]["build"]["chunk_words"] = 512
    (release / "manifest.json").write_text(json.dumps(manifest))
    message = failed(validate(release))["corpus meta"]
    assert "content_identity" in message and "chunk_words is 800 but manifest.json has 512" in message


def test_foreign_database_fails_on_header_and_meta(release: Path) -> None:
    db = release / DATABASE
    db.unlink()
    conn = apsw.Connection(str(db))
    conn.execute("CREATE TABLE t(x)")
    conn.close()
    bad = failed(validate(release))
    assert "application_id 0x0, expected 0x44525331" in bad["corpus header"] and "corpus meta" in bad


def test_not_a_directory_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = cli("validate", "--release-dir", str(tmp_path / "nope"))
    err = capsys.readouterr().err
    assert code == 2 and "no such release directory" in err and err.count("\n") == 1


def test_json_report(release: Path) -> None:
    code, out = cli("validate", "--release-dir", str(release), "--json", "--quiet")
    body = json.loads(out)
    assert code == 0 and body["ok"] and body["mode"] == "fast" and body["failed"] == 0
    assert {c["status"] for c in body["checks"]} == {"PASS"}


# -- manifests --------------------------------------------------------------------------


def test_manifest_is_deterministic_and_checksums_are_sorted(release: Path, pristine_release: Path) -> None:
    before = {n: (release / n).read_bytes() for n in ("manifest.json", "checksums.sha256")}
    code, out = cli("release", "manifest", str(release), "--quiet")
    assert code == 0 and "drsearch-sample 2.0.0" in out
    assert {n: (release / n).read_bytes() for n in before} == before
    sums, problems = parse_checksums(before["checksums.sha256"].decode())
    assert not problems and list(sums) == sorted(sums) and "manifest.json" in sums
    text = before["manifest.json"].decode()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def test_manifest_needs_a_name_the_first_time(release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (release / "manifest.json").unlink()
    code, _ = cli("release", "manifest", str(release))
    assert code == 2 and "give --name and --revision" in capsys.readouterr().err
    code, _ = cli("release", "manifest", str(release), "--name", "x", "--revision", "2")
    assert code == 0 and json.loads((release / "manifest.json").read_text())["release"] == {
        "name": "x", "revision": "2"}


# -- pinned identities ------------------------------------------------------------------


def test_a_release_named_dr256_is_compared_precisely(release: Path) -> None:
    write_release_manifest(release, "DR-256", "v1.1.0")
    report = validate(release)
    message = report.by_name("pinned identity").message
    size = (release / DATABASE).stat().st_size
    assert message.startswith("names itself DR-256 v1.1.0, but: ")
    files = {f["path"]: f for f in json.loads((release / "manifest.json").read_text())["files"]}
    assert f"SHA-256 is {files['benchmark/questions.jsonl']['sha256']}" in message
    assert f"pins {DR256_V1_1_0.questions_sha256}" in message
    assert "4 questions, DR-256 v1.1.0 has 256" in message
    assert f"is {size:,} bytes, DR-256 v1.1.0 pins 3,499,802,624 ({3_499_802_624 - size:,} bytes short)" in message
    assert f"pins {DR256_V1_1_0.database_sha256}" in message
    assert not report.ok()


def test_other_revisions_of_a_pinned_release_warn(release: Path) -> None:
    write_release_manifest(release, "dr256", "1.0.0")
    check = validate(release).by_name("pinned identity")
    assert check.status == "WARN" and "pinned revisions: v1.1.0" in check.message


def pin_of(release: Path, **changes: object) -> PinnedRelease:
    manifest = json.loads((release / "manifest.json").read_text())
    files = {f["path"]: f for f in manifest["files"]}
    fields: dict = {"name": "Sample-Pin", "revision": "v2", "questions": 4,
                    "questions_sha256": files["benchmark/questions.jsonl"]["sha256"],
                    "database_sha256": files[DATABASE]["sha256"], "database_bytes": files[DATABASE]["bytes"],
                    "tiers": {"challenge": 2, "frontier": 2}}
    fields.update(changes)
    return PinnedRelease(**fields)  # type: ignore[arg-type]


def test_a_pinned_release_is_recognised_by_its_questions(release: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(release_checks, "PINNED_RELEASES", (DR256_V1_1_0, pin_of(release)))
    check = validate(release).by_name("pinned identity")
    assert check.status == "PASS" and "its questions are those of Sample-Pin v2" in check.message
    assert "corpus hash checked by --deep" in check.message
    deep = validate(release, deep=True).by_name("pinned identity")
    assert deep.status == "PASS" and "--deep" not in deep.message


def test_a_pinned_release_with_a_different_corpus_fails_deep(release: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pin = pin_of(release, database_sha256="ab" * 32)
    monkeypatch.setattr(release_checks, "PINNED_RELEASES", (pin,))
    write_release_manifest(release, "sample pin", "2")  # names the pin; manifest lists the real hash
    message = validate(release, deep=True).by_name("pinned identity").message
    assert message.startswith("names itself Sample-Pin v2, but: ")
    assert f"manifest.json lists {DATABASE} SHA-256" in message and "re-hashed to SHA-256" in message


def test_every_file_is_opened_read_only_during_validation(release: Path) -> None:
    """Belt and braces: the mtime of the directory itself does not change either."""
    before = os.stat(release).st_mtime_ns, os.stat(release / "search").st_mtime_ns
    validate(release, deep=True)
    assert (os.stat(release).st_mtime_ns, os.stat(release / "search").st_mtime_ns) == before


def test_an_upstream_release_in_another_tools_format_is_still_identified(
        release: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DR-256 as downloaded: a foreign manifest and a corpus built by another tool. Neither
    fails validation by itself: checksums.sha256 and the pinned identity prove which files
    these are; what needs our schema is reported as not checked (WARN)."""
    db = release / DATABASE
    db.unlink()
    conn = apsw.Connection(str(db))
    conn.execute("CREATE TABLE pages(id INTEGER PRIMARY KEY, url TEXT, body TEXT)")
    conn.execute("INSERT INTO pages(url, body) VALUES('https://a.example/', 'text')")
    conn.close()
    (release / "manifest.json").write_text(json.dumps({"release": "upstream", "version": "v1"}))
    files = sorted(p.relative_to(release).as_posix() for p in release.rglob("*")
                   if p.is_file() and p.name != "checksums.sha256")
    (release / "checksums.sha256").write_bytes(checksum_lines({f: sha256_file(release / f) for f in files}))
    pin = PinnedRelease("Upstream", "v1", sha256_file(release / "benchmark/questions.jsonl"), sha256_file(db),
                        db.stat().st_size, 4, {"challenge": 2, "frontier": 2})
    monkeypatch.setattr(release_checks, "PINNED_RELEASES", (pin,))
    fast = validate(release)
    assert fast.ok(), failed(fast)
    assert status(fast, "manifest") == "WARN" and "another tool's" in fast.by_name("manifest").message
    assert status(fast, "checksums") == "PASS" and "(search/corpus.sqlite3: with --deep)" in \
        fast.by_name("checksums").message
    assert fast.by_name("foreign corpus").message.startswith("foreign corpus file: pinned Upstream v1 identity")
    assert fast.by_name("pinned identity").message.startswith("matches Upstream v1 (its questions are")
    deep = validate(release, deep=True)
    assert deep.ok(), failed(deep)
    assert status(deep, "corpus sha256") == "PASS" and "matches checksums.sha256" in \
        deep.by_name("corpus sha256").message
    assert status(deep, "pinned identity") == "PASS"
    with open(db, "r+b") as fh:
        fh.seek(db.stat().st_size - 10)
        fh.write(b"!")
    deep = validate(release, deep=True)
    bad = failed(deep)
    assert "re-hashed to SHA-256" in bad["pinned identity"] and "corpus sha256" in bad
    assert f"{DATABASE} SHA-256 is {sha256_file(db)}, Upstream v1 pins {pin.database_sha256}" in bad["foreign corpus"]
    # an unpinned foreign corpus still fails, saying why
    monkeypatch.setattr(release_checks, "PINNED_RELEASES", ())
    bad = failed(validate(release))
    assert "application_id 0x0, expected 0x44525331" in bad["corpus header"] and "corpus meta" in bad
    assert "no pinned identity names this file" in bad["corpus header"]


def test_without_our_manifest_checksums_must_list_every_file(release: Path) -> None:
    (release / "manifest.json").write_text(json.dumps({"release": "upstream"}))
    sums = {f: sha256_file(release / f) for f in ("benchmark/questions.jsonl", "manifest.json")}
    (release / "checksums.sha256").write_bytes(checksum_lines(sums))
    (release / "notes.txt").write_text("x")
    report = validate(release)
    assert "a release file missing from checksums.sha256" in failed(report)["file benchmark/summary.json"]
    assert report.by_name("file notes.txt").status == "WARN"
    (release / "checksums.sha256").unlink()
    assert "no checksums.sha256" in failed(validate(release))["manifest"]


@pytest.mark.parametrize("content", [b"", b"garbage" * 1000, b"SQLite format 3\x00" + b"\xff" * 5000])
def test_a_database_that_is_not_sqlite_is_reported_not_raised(release: Path, content: bytes) -> None:
    (release / DATABASE).write_bytes(content)  # the old manifest stays: a new one needs a readable corpus
    report = validate(release, deep=True)
    bad = failed(report)
    assert "corpus header" in bad and "corpus sha256" in bad and "corpus fts5 integrity" in bad
    code, out = cli("validate", "--release-dir", str(release), "--deep", "--quiet")
    assert code == 1 and "validate: FAIL" in out


def test_a_damaged_posting_list_fails_the_deep_check_naming_its_term(release: Path) -> None:
    """A code beyond its list's table (schema 5's coded lists) is what the file's checksum
    and FTS5's check cannot see: validate --deep's posting-list check names the term."""
    db = release / DATABASE
    conn = apsw.Connection(str(db))
    term, tid, n_table, data = conn.execute(
        "SELECT t.term, t.id, t.n_table, p.data FROM terms AS t JOIN postings AS p ON p.id = t.id WHERE "
        "t.dense = 0 AND t.width = 1 AND t.n_table < 255 ORDER BY t.df DESC, t.term LIMIT 1").fetchone()
    damaged = bytearray(data)
    damaged[8 * n_table] = 0xFF  # its first posting's code
    conn.execute("UPDATE postings SET data = ? WHERE id = ?", (bytes(damaged), tid))
    conn.close()
    write_release_manifest(release, "test", "v0")  # the file's new hash: only the lists are wrong
    assert validate(release).ok()
    bad = failed(validate(release, deep=True))
    assert list(bad) == ["corpus posting lists"] and repr(term) in bad["corpus posting lists"]
    code, out = cli("validate", "--release-dir", str(release), "--deep", "--quiet")
    assert code == 1 and "corpus posting lists" in out and "beyond its table" in out


def test_a_release_file_dropped_from_the_manifest_fails(release: Path) -> None:
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["files"] = [f for f in manifest["files"] if f["path"] != "benchmark/questions.jsonl"]
    (release / "manifest.json").write_text(json.dumps(manifest))
    assert "unverifiable" in failed(validate(release))["file benchmark/questions.jsonl"]


# -- assembling -------------------------------------------------------------------------


def assemble(out: Path, docs: Path = DATA / "sample/docs.jsonl", questions: Path = DATA / "sample/questions.jsonl",
             *extra: str) -> tuple[int, str]:
    return cli("release", "assemble", "--docs", str(docs), "--questions", str(questions), "--blocked-docids",
               str(DATA / "sample/blocked_docids.txt"), "--out", str(out), "--name", "drsearch-sample",
               "--revision", "1.0.0", "--quiet", *extra)


def test_assemble_with_bad_documents_leaves_the_old_release_as_it_was(
        release: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"docid": "x", "url": "https://a.test/"}) + "\n")  # no text
    other = tmp_path / "questions.jsonl"
    other.write_bytes((DATA / "sample/questions.jsonl").read_bytes().replace(b"Martin", b"Martina"))
    before = snapshot(release)
    code, _ = assemble(release, bad, other, "--force")
    assert code == 2 and capsys.readouterr().err.count("\n") == 1
    assert snapshot(release) == before
    code, _ = assemble(tmp_path / "new", bad)  # nothing left behind: a rerun needs no --force
    assert code == 2 and not (tmp_path / "new").exists()


def test_assemble_usage_errors_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("keep")
    assert assemble(tmp_path / "file")[0] == 2 and "is not a directory" in capsys.readouterr().err
    assert (tmp_path / "file").read_text() == "keep"
    assert assemble(tmp_path / "rel", questions=tmp_path / "missing.jsonl")[0] == 2
    err = capsys.readouterr().err
    assert "cannot read questions" in err and err.count("\n") == 1 and not (tmp_path / "rel").exists()
