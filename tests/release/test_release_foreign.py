"""Releases whose corpus another tool built (DR-256 v1.1.0's own file), or that ship our
index rebuilt from it with ``drsearch import``; and progress reporting of the deep checks.

The pinned identities are constants (3.5 GB for DR-256), so every test pins a miniature:
``validate_release(pins=...)``, or ``release_checks.PINNED_RELEASES`` patched for the CLI.
"""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import apsw
import pytest
from offline_recipe.driver import Recipe

from drsearch.corpus import quote_identifier
from drsearch.corpus.pipeline import DOCS_FILE, default_crawl_dir
from drsearch.index import fts5_integrity_check, quick_check, sha256_file
from drsearch.index.integrity import PROGRESS_STEPS, fts5_tables
from drsearch.release import assemble_release
from drsearch.release import checks as release_checks
from drsearch.release.dr256 import DR256_V1_1_0, PinnedRelease
from drsearch.release.manifest import DATABASE, QUESTIONS, write_release_manifest
from drsearch.release.report import ValidationReport
from drsearch.release.validate import validate_release
from drsearch.tools.cli import main

from ..helpers import DATA
from .conftest import snapshot

TABLE = "crawl pages"
# the metadata the recipe's extraction keeps (an import keeping the same columns gives the same content identity)
METADATA = ("content_type", "extractor", "final_url", "lang")
METADATA_ARGS = [a for c in METADATA for a in ("--metadata-col", c)]
MARKER = "Ambrose Tellwright grew up in Harrowgate Cross"  # in an answer page of the sample release


@pytest.fixture(scope="module")
def docs(sample_recipe: Recipe) -> list[dict[str, Any]]:
    """The sample release's documents, as the recipe extracted them (a foreign corpus holds the
    same pages as the release it replaces)."""
    path = default_crawl_dir(sample_recipe.corpus) / DOCS_FILE
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def foreign_corpus(path: Path, docs: list[dict[str, Any]]) -> Path:
    """Another tool's corpus: its own table and column names, an FTS5 table, no
    application id or schema version of ours."""
    conn = apsw.Connection(str(path))
    t = quote_identifier(TABLE)
    conn.execute(f'CREATE TABLE {t}(page_id INTEGER PRIMARY KEY, "doc key" TEXT, address TEXT, '
                 f"headline TEXT, body TEXT, {', '.join(f'{c} TEXT' for c in METADATA)})")
    conn.execute("CREATE VIRTUAL TABLE title_fts USING fts5(headline)")
    with conn:
        for i, d in enumerate(docs, 1):
            conn.execute(f"INSERT INTO {t} VALUES(?,?,?,?,?,?,?,?,?)",
                         (i, d["docid"], d["url"], d["title"], d["text"], *(d.get(c) for c in METADATA)))
            conn.execute("INSERT INTO title_fts(rowid, headline) VALUES(?,?)", (i, d["title"]))
    conn.execute("PRAGMA user_version=7")
    conn.close()
    return path


def pin_for(release: Path, db: Path, name: str = "Mini-256", revision: str = "v9") -> PinnedRelease:
    return PinnedRelease(name, revision, sha256_file(release / QUESTIONS), sha256_file(db), db.stat().st_size,
                         4, {"challenge": 2, "frontier": 2})


def failed(report: ValidationReport) -> dict[str, str]:
    return {c.name: c.message for c in report.checks if c.status == "FAIL"}


def cli(*args: str) -> tuple[int, str]:
    buf = io.StringIO()
    return main(list(args), out=buf), buf.getvalue()


@pytest.fixture()
def foreign_release(release: Path, docs: list[dict[str, Any]]) -> tuple[Path, PinnedRelease]:
    """The sample release shipping a foreign corpus file, with our manifest naming its pin."""
    db = release / DATABASE
    db.unlink()
    foreign_corpus(db, docs)
    write_release_manifest(release, "Mini-256", "v9")
    return release, pin_for(release, db)


# -- (a) the pinned release's own corpus file ----------------------------------------------


def test_a_foreign_corpus_matching_its_pins_passes(foreign_release: tuple[Path, PinnedRelease]) -> None:
    release, pin = foreign_release
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["corpus"] == {"path": DATABASE, "foreign": True, "application_id": 0, "schema_version": 7}
    assert "documents" not in manifest["counts"] and manifest["counts"]["questions"] == 4
    before = snapshot(release)
    for deep in (False, True):
        report = validate_release(release, deep=deep, pins=(pin,))
        assert report.ok(), failed(report)
        header = report.by_name("corpus header")
        assert header.status == "PASS" and header.message.startswith("foreign corpus file (application_id 0x0, "
                                                                     "schema version 7: not a drsearch index")
        foreign = report.by_name("foreign corpus")
        assert foreign.status == "PASS"
        assert foreign.message.startswith("foreign corpus file: pinned Mini-256 v9 identity")
        assert ("SHA-256 as pinned" if deep else "SHA-256 checked by --deep") in foreign.message
        assert report.by_name("pinned identity").message.startswith("matches Mini-256 v9 (names itself")
        # what needs our schema is said to be unchecked, not passed
        assert report.by_name("blocked_docids").status == "WARN"
        assert "another tool's file" in report.by_name("blocked_docids").message
        assert report.by_name("corpus counts").status == "WARN"
        assert report.by_name("summary counts").status == "PASS"
    assert report.by_name("corpus fts5 integrity").message.startswith(
        "FTS5 integrity-check of the foreign file's title_fts: ok")
    assert report.by_name("corpus quick_check").status == "PASS"
    assert snapshot(release) == before


def test_a_flipped_byte_in_a_foreign_corpus_fails_deep_precisely(
        foreign_release: tuple[Path, PinnedRelease]) -> None:
    release, pin = foreign_release
    db = release / DATABASE
    data = bytearray(db.read_bytes())
    at = data.find(MARKER.encode())
    assert at > 0
    data[at] ^= 0x20  # same size, still a sound SQLite file
    db.write_bytes(bytes(data))
    fast = validate_release(release, pins=(pin,))
    assert fast.ok() and fast.by_name("foreign corpus").status == "PASS"  # the size is right
    deep = validate_release(release, deep=True, pins=(pin,))
    bad = failed(deep)
    new = sha256_file(db)
    assert bad["foreign corpus"] == (f"foreign corpus file is not the pinned Mini-256 v9 identity: {DATABASE} "
                                     f"SHA-256 is {new}, Mini-256 v9 pins {pin.database_sha256}")
    assert "corpus sha256" in bad
    assert f"re-hashed to SHA-256 {new}, Mini-256 v9 pins {pin.database_sha256}" in bad["pinned identity"]


def test_a_foreign_corpus_of_the_wrong_size_fails_fast(foreign_release: tuple[Path, PinnedRelease]) -> None:
    release, pin = foreign_release
    with open(release / DATABASE, "ab") as fh:
        fh.write(b"\0" * 4096)
    write_release_manifest(release)  # the manifest agrees with the padded file: the pin does not
    bad = failed(validate_release(release, pins=(pin,)))
    assert f"pins {pin.database_bytes:,} (4,096 bytes more)" in bad["foreign corpus"]
    assert "truncated or padded" in bad["corpus header"]


def test_a_foreign_corpus_is_recognised_by_its_pinned_size(foreign_release: tuple[Path, PinnedRelease]) -> None:
    release, pin = foreign_release
    write_release_manifest(release, "renamed", "1")
    other = PinnedRelease("Mini-256", "v9", "0" * 64, "1" * 64, pin.database_bytes, 4, pin.tiers)
    report = validate_release(release, pins=(other,))
    assert report.by_name("foreign corpus").status == "PASS"
    assert report.by_name("pinned identity").message.startswith(
        "its foreign corpus file has the size Mini-256 v9 pins, but: benchmark/questions.jsonl SHA-256 is ")


def test_an_unpinned_foreign_corpus_fails(foreign_release: tuple[Path, PinnedRelease]) -> None:
    release, _ = foreign_release
    report = validate_release(release)  # the real pins: DR-256 v1.1.0 only
    bad = failed(report)
    assert "application_id 0x0, expected 0x44525331" in bad["corpus header"]
    assert "no pinned identity names this file" in bad["corpus header"]


def test_the_default_pins_are_dr256_v1_1_0() -> None:
    assert release_checks.active_pins(None) == (DR256_V1_1_0,)
    assert DR256_V1_1_0.database_bytes == 3_499_802_624
    assert DR256_V1_1_0.database_sha256 == "09172388ed6c0ae91cb43dff3a663bcfb219673ed991ff5c9922904eb61ee77e"


# -- (b) our index, rebuilt from the pinned corpus file with drsearch import ----------------


@pytest.fixture()
def derived_release(release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                    docs: list[dict[str, Any]]) -> tuple[Path, PinnedRelease]:
    """The sample release shipping our index imported (by the CLI) from a pinned foreign file."""
    source = foreign_corpus(tmp_path / "corpus.sqlite3", docs)
    pin = pin_for(release, source)
    monkeypatch.setattr(release_checks, "PINNED_RELEASES", (pin,))
    code, out = cli("import", "--from", str(source), "--table", TABLE, "--docid-col", "doc key",
                    "--url-col", "address", "--title-col", "headline", "--text-col", "body",
                    *METADATA_ARGS, "--out", str(release / DATABASE), "--force", "--quiet")
    assert code == 0 and out.rstrip().endswith("; derived from Mini-256 v9"), out
    shutil.rmtree(release / "baselines")  # the recipe's rollouts ran over the corpus replaced here
    # the release's summaries describe the index it now ships (the import's content identity is
    # not the recipe build's: the import keeps metadata columns, the build the extraction's record)
    conn = apsw.Connection(str(release / DATABASE), flags=apsw.SQLITE_OPEN_READONLY)
    meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    conn.close()
    for rel in ("benchmark/summary.json", "search/coverage_summary.json", "search/source_manifest_summary.json"):
        path = release / rel
        path.write_text(json.dumps(_replace_counts(json.loads(path.read_text()), meta), sort_keys=True))
    write_release_manifest(release, "Mini-256", "v9")
    return release, pin


def meta_provenance(db: Path) -> dict[str, Any]:
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return json.loads(conn.execute("SELECT value FROM meta WHERE key = 'provenance'").get)
    finally:
        conn.close()


def set_provenance(db: Path, provenance: dict[str, Any]) -> None:
    conn = apsw.Connection(str(db))
    try:
        conn.execute("UPDATE meta SET value = ? WHERE key = 'provenance'", (json.dumps(provenance, sort_keys=True),))
    finally:
        conn.close()


def test_an_imported_index_records_and_validates_its_derivation(
        derived_release: tuple[Path, PinnedRelease]) -> None:
    release, pin = derived_release
    prov = meta_provenance(release / DATABASE)
    assert prov["derived_from"] == {"name": "Mini-256", "revision": "v9"}
    assert prov["source"] == {"name": "corpus.sqlite3", "format": "sqlite", "bytes": pin.database_bytes,
                              "sha256": pin.database_sha256}
    assert prov["mapping"]["table"] == TABLE
    assert json.loads((release / "manifest.json").read_text())["corpus"]["provenance"] == prov
    for deep in (False, True):
        report = validate_release(release, deep=deep)  # the patched PINNED_RELEASES
        assert report.ok(strict=True), failed(report)
        check = report.by_name("corpus provenance")
        assert check.message.startswith("derived from Mini-256 v9: drsearch import from corpus.sqlite3 (sqlite, ")
        assert "the source's size and SHA-256 are the pinned ones" in check.message
        identity = report.by_name("pinned identity").message
        assert identity.startswith("matches Mini-256 v9 (names itself Mini-256 v9)")
        assert "derived from Mini-256 v9's corpus file, as pinned" in identity


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("sha256", "ab" * 32, "meta provenance.source.sha256 is '" + "ab" * 32 + "', Mini-256 v9 pins "),
        ("bytes", "+1", "meta provenance.source.bytes is {n}, Mini-256 v9 pins {p} (1 bytes more)"),
    ],
)
def test_tampered_provenance_fails_naming_the_field(derived_release: tuple[Path, PinnedRelease], field: str,
                                                    value: str, message: str) -> None:
    release, pin = derived_release
    db = release / DATABASE
    prov = meta_provenance(db)
    prov["source"][field] = pin.database_bytes + 1 if value == "+1" else value
    set_provenance(db, prov)
    write_release_manifest(release)  # hashes and manifest agree with the tampered file
    report = validate_release(release, deep=True)
    bad = failed(report)
    expected = message.format(n=pin.database_bytes + 1, p=f"{pin.database_bytes:,}")
    assert bad["corpus provenance"].startswith("says it is derived from Mini-256 v9, but: " + expected)
    assert expected in bad["pinned identity"]
    assert set(bad) == {"corpus provenance", "pinned identity"}


def test_provenance_in_the_manifest_must_match_the_index(derived_release: tuple[Path, PinnedRelease]) -> None:
    release, _ = derived_release
    manifest = json.loads((release / "manifest.json").read_text())
    manifest["corpus"]["provenance"]["derived_from"]["revision"] = "v8"
    (release / "manifest.json").write_text(json.dumps(manifest))
    assert "meta provenance is" in failed(validate_release(release))["corpus meta"]


def test_malformed_or_unpinned_provenance(derived_release: tuple[Path, PinnedRelease]) -> None:
    release, _ = derived_release
    db = release / DATABASE
    prov = meta_provenance(db)
    set_provenance(db, {**prov, "source": {**prov["source"], "sha256": "xyz"}})
    write_release_manifest(release)
    assert "meta provenance.source.sha256 is 'xyz', not a SHA-256" in failed(validate_release(release))[
        "corpus provenance"]
    set_provenance(db, {**prov, "derived_from": {"name": "Elsewhere", "revision": "1"}})
    write_release_manifest(release, "other", "1")
    check = validate_release(release).by_name("corpus provenance")
    assert check.status == "WARN" and "Elsewhere 1, which has no pinned identity" in check.message
    without = {k: v for k, v in prov.items() if k != "derived_from"}
    set_provenance(db, without)
    write_release_manifest(release)
    check = validate_release(release).by_name("corpus provenance")
    assert check.status == "WARN" and "the source is Mini-256 v9's corpus file, but derived_from" in check.message


def test_a_release_named_for_a_pin_with_an_underived_index_still_fails(
        release: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, docs: list[dict[str, Any]]) -> None:
    source = foreign_corpus(tmp_path / "corpus.sqlite3", docs)
    pin = pin_for(release, source)
    write_release_manifest(release, "Mini-256", "v9")  # our sample index, not derived from the pin
    report = validate_release(release, pins=(pin,))
    assert f"{DATABASE} is " in failed(report)["pinned identity"]


# -- progress of the long deep checks ------------------------------------------------------


@pytest.fixture(scope="module")
def demo_release(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A release of the demo corpus (data/sample, 184 pages): big enough for progress ticks."""
    out = tmp_path_factory.mktemp("demo") / "release"
    assemble_release(out, DATA / "sample/docs.jsonl", DATA / "sample/questions.jsonl",
                     DATA / "sample/blocked_docids.txt", name="drsearch-demo", revision="1")
    return out


def test_deep_checks_report_progress_on_a_real_file(demo_release: Path) -> None:
    pristine_release = demo_release
    db = pristine_release / DATABASE
    ticks: list[int] = []
    assert quick_check(db, ticks.append) == []
    assert ticks and set(ticks) == {PROGRESS_STEPS}
    fts: list[int] = []
    assert fts5_integrity_check(db, progress=fts.append) == []
    assert fts and all(n > 0 for n in fts)  # VM steps, and bytes read per MB
    assert fts5_tables(db) == ["chunks_fts"]

    bars: list[tuple[str, int | None, list[int], list[bool]]] = []

    class Bar:
        def __init__(self, desc: str, total: int | None) -> None:
            self.updates: list[int] = []
            self.closed: list[bool] = []
            bars.append((desc, total, self.updates, self.closed))

        def update(self, n: int) -> None:
            self.updates.append(n)

        def close(self) -> None:
            self.closed.append(True)

    stages: list[str] = []
    assert validate_release(pristine_release, deep=True, progress=Bar, stage=stages.append).ok()
    by_desc = {desc: (total, updates, closed) for desc, total, updates, closed in bars}
    assert by_desc[f"sha256 {DATABASE}"][0] == db.stat().st_size
    for desc in ("PRAGMA quick_check", "FTS5 integrity-check"):
        total, updates, closed = by_desc[desc]
        assert total is None and updates and closed == [True]
    assert stages == ["PRAGMA quick_check", "FTS5 integrity-check", "posting lists"]


def test_progress_goes_to_stderr_only_when_asked_or_on_a_terminal(
        pristine_release: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out = cli("validate", "--release-dir", str(pristine_release), "--deep", "--json")
    assert code == 0 and json.loads(out)["ok"] and capsys.readouterr().err == ""  # not a TTY: silent
    code, out = cli("validate", "--release-dir", str(pristine_release), "--deep", "--json", "--progress")
    err = capsys.readouterr().err
    assert code == 0 and json.loads(out)["ok"]
    assert "drsearch: running PRAGMA quick_check" in err and "drsearch: running FTS5 integrity-check" in err
    code, _ = cli("validate", "--release-dir", str(pristine_release), "--deep", "--progress", "--quiet")
    assert code == 0 and capsys.readouterr().err == ""


def _replace_counts(node: Any, meta: dict[str, Any]) -> Any:
    """A summary with its corpus counts and identity replaced by the index's own."""
    if isinstance(node, dict):
        return {k: meta[k] if k in ("chunks", "content_identity", "indexed_documents", "empty_documents")
                and not isinstance(v, dict) else _replace_counts(v, meta) for k, v in node.items()}
    return node


def test_a_release_of_an_index_imported_with_its_sources_fts5_chunks_validates(
        release: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docs: list[dict[str, Any]]) -> None:
    """DR-256's shape: the pinned file is a search database with an FTS5 table of chunks.
    The imported index keeps them (and their tokenizer); its release validates --strict, and
    validate names what was taken over."""
    source = tmp_path / "corpus.sqlite3"
    conn = apsw.Connection(str(source))
    t = quote_identifier(TABLE)
    conn.execute(f'CREATE TABLE {t}(page_id INTEGER PRIMARY KEY, "doc key" TEXT, address TEXT, '
                 f"headline TEXT, body TEXT, {', '.join(f'{c} TEXT' for c in METADATA)})")
    conn.execute("CREATE VIRTUAL TABLE chunk_fts USING fts5(\"doc key\" UNINDEXED, passage, "
                 "tokenize='unicode61 remove_diacritics 2')")
    with conn:
        for i, d in enumerate(docs, 1):
            conn.execute(f"INSERT INTO {t} VALUES(?,?,?,?,?,?,?,?,?)",
                         (i, d["docid"], d["url"], d["title"], d["text"], *(d.get(c) for c in METADATA)))
            words = d["text"].split()
            for start in range(0, len(words), 100):
                conn.execute("INSERT INTO chunk_fts VALUES(?,?)", (d["docid"], " ".join(words[start:start + 120])))
    conn.execute("PRAGMA user_version=7")
    conn.close()
    pin = pin_for(release, source)
    monkeypatch.setattr(release_checks, "PINNED_RELEASES", (pin,))
    code, out = cli("import", "--from", str(source), "--table", TABLE, "--docid-col", "doc key",
                    "--url-col", "address", "--title-col", "headline", "--text-col", "body",
                    *METADATA_ARGS, "--out", str(release / DATABASE), "--force", "--quiet")
    assert code == 0 and "FTS5 table 'chunk_fts' in rowid order" in out, out
    shutil.rmtree(release / "baselines")  # the recipe's rollouts ran over the corpus replaced here
    conn = apsw.Connection(str(release / DATABASE), flags=apsw.SQLITE_OPEN_READONLY)
    meta = {k: json.loads(v) for k, v in conn.execute("SELECT key, value FROM meta")}
    conn.close()
    assert meta["tokenizer"] == "unicode61 remove_diacritics 2" and meta["chunking"] == "pre-chunked"
    for rel in ("benchmark/summary.json", "search/coverage_summary.json", "search/source_manifest_summary.json"):
        path = release / rel
        path.write_text(json.dumps(_replace_counts(json.loads(path.read_text()), meta), sort_keys=True))
    write_release_manifest(release, "Mini-256", "v9")
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["corpus"]["build"]["chunking"] == "pre-chunked"
    assert manifest["corpus"]["build"]["tokenizer"] == "unicode61 remove_diacritics 2"
    for deep in (False, True):
        report = validate_release(release, deep=deep)
        assert report.ok(strict=True), failed(report)
    assert "chunks as given (pre-chunked)" in report.by_name("corpus meta").message
    assert ("its FTS5 table 'chunk_fts' as chunks, tokenizer 'unicode61 remove_diacritics 2'"
            in report.by_name("corpus provenance").message)
