"""``drsearch validate --release-dir DIR [--deep]``: prove a release is the one published.

Fast checks (seconds, whatever the corpus size): the layout; manifest.json parses and
lists every file with its size; SHA-256 of every file except the database (whose size and
SQLite header, application id and schema version are checked instead); checksums.sha256
agrees with the manifest (or, when the manifest is another tool's, with the files); the
corpus opens and its ``meta`` agrees with the manifest; questions.jsonl is schema-valid
with indices 0..N-1 and unique qids; every blocked docid exists in the corpus;
summary.json, the coverage and source summaries and the manifest's counts agree with the
questions and the corpus; a pinned identity (DR-256 v1.1.0) matches when the release
names it or its content is recognised. ``deep`` also re-hashes the database and runs
``PRAGMA quick_check`` and FTS5's integrity-check.

Validation never writes into the release: files are read, the corpus is opened
read-only and immutable, and the FTS5 check runs on a read-only file descriptor.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..index import (
    BlockList,
    DrsearchError,
    Engine,
    InvalidInputError,
    fts5_integrity_check,
    header_problems,
    missing_docids,
    quick_check,
    read_sqlite_header,
    sha256_file,
)
from . import release_checks as rc
from .dr256 import QuestionSet, load_questions
from .manifest import (
    CHECKSUMS,
    DATABASE,
    LAYOUT,
    MANIFEST,
    QUESTIONS,
    RELEASE_FILES,
    Manifest,
    ProgressFactory,
    check_relative_path,
    parse_checksums,
    read_manifest,
    release_files,
)
from .report import Check, Status, ValidationReport


class _Validator:
    def __init__(self, root: Path, deep: bool, progress: ProgressFactory | None,
                 stage: Callable[[str], None] | None) -> None:
        self.root = root
        self.deep = deep
        self.progress = progress
        self.stage = stage or (lambda _msg: None)
        self.checks: list[Check] = []
        self.manifest: Manifest | None = None
        self.meta: dict[str, Any] | None = None
        self.questions: QuestionSet | None = None
        self.blocklist: BlockList | None = None
        self.hashes: dict[str, str] = {}
        self.checksums: dict[str, str] = {}

    def add(self, name: str, status: Status, message: str, **details: Any) -> None:
        self.checks.append(Check(name, status, message, details))

    def present(self, rel: str) -> bool:
        return (self.root / rel).is_file()

    def run(self) -> list[Check]:
        self.check_layout()
        self.check_manifest()
        self.check_files()
        self.check_checksums()
        self.check_corpus()
        self.check_questions()
        self.check_blocklist()
        if self.meta is not None and self.questions is not None:
            self.checks.extend(rc.content_checks(self.root, self.meta, self.questions, self.blocklist,
                                                 self.manifest))
        if self.deep:
            self.check_deep()
        self.checks.extend(rc.identity_checks(self.root, self.manifest, self.questions, self.hashes))
        return self.checks

    # -- layout, manifest, files ---------------------------------------------------------
    def check_layout(self) -> None:
        missing = [p for p in LAYOUT if not self.present(p)]
        if missing:
            self.add("layout", "FAIL", f"missing: {', '.join(missing)}", missing=missing)
        else:
            self.add("layout", "PASS", f"all {len(LAYOUT)} release files present")

    def check_manifest(self) -> None:
        if not self.present(MANIFEST):
            self.add("manifest", "FAIL", "no manifest.json: nothing to check sizes and hashes against")
            return
        try:
            self.manifest = read_manifest(self.root / MANIFEST)
        except InvalidInputError as e:
            self.add("manifest", "FAIL", e.message)
            return
        m = self.manifest
        self.add("manifest", "PASS", f"{m.release.name} {m.release.revision}: {len(m.files)} files listed",
                 release=m.release.model_dump())

    def check_files(self) -> None:
        if self.manifest is None:
            return
        listed = {f.path for f in self.manifest.files}
        for entry in self.manifest.files:
            self.check_file(entry.path, entry.bytes, entry.sha256)
        try:
            present = release_files(self.root)
        except InvalidInputError as e:
            self.add("files", "FAIL", e.message)
            present = []
        for rel in present:
            if rel in RELEASE_FILES and rel not in listed:
                self.add(f"file {rel}", "FAIL", "a release file missing from manifest.json: unverifiable")
            elif rel not in listed:
                self.add(f"file {rel}", "WARN", "unlisted: present but not in manifest.json")

    def check_file(self, rel: str, size: int, sha: str) -> None:
        name = f"file {rel}"
        path = self.root / rel
        if not path.is_file():
            self.add(name, "FAIL", "listed in manifest.json but missing")
            return
        actual = path.stat().st_size
        if actual != size:
            diff = actual - size
            self.add(name, "FAIL", f"{actual:,} bytes, manifest says {size:,} "
                     f"({abs(diff):,} bytes {'more' if diff > 0 else 'short'})")
            return
        if rel == DATABASE:
            self.add(name, "PASS", f"{size:,} bytes; SHA-256 "
                     + ("re-hashed below (--deep)" if self.deep else "not re-hashed (fast mode; use --deep)"))
            return
        try:
            digest = self.hashes[rel] = sha256_file(path)
        except OSError as e:
            self.add(name, "FAIL", f"unreadable: {e.strerror}")
            return
        if digest != sha:
            self.add(name, "FAIL", f"SHA-256 {digest}, manifest says {sha}: the file was changed")
        else:
            self.add(name, "PASS", f"{size:,} bytes, SHA-256 matches")

    def check_checksums(self) -> None:
        if not self.present(CHECKSUMS):
            return
        try:
            text = (self.root / CHECKSUMS).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            self.add("checksums", "FAIL", f"{CHECKSUMS} unreadable: {e}")
            return
        sums, problems = parse_checksums(text)
        self.checksums = sums
        if self.manifest is not None:
            problems += _checksum_disagreements(sums, self.manifest, self.root)
            ok = f"{len(sums)} lines agree with manifest.json"
        else:  # e.g. a release published with another tool's manifest: checksums still prove it
            problems += self.checksum_mismatches(sums)
            ok = f"{len(sums)} files match their checksums" + (
                "" if self.deep or DATABASE not in sums else f" ({DATABASE}: with --deep)")
        if problems:
            self.add("checksums", "FAIL", f"{CHECKSUMS}: " + "; ".join(problems[:5]), problems=problems)
        else:
            self.add("checksums", "PASS", ok)

    def checksum_mismatches(self, sums: dict[str, str]) -> list[str]:
        """Files that differ from checksums.sha256 (the database is left to the deep hash)."""
        problems = []
        for rel, digest in sorted(sums.items()):
            why = check_relative_path(rel)
            if why:
                problems.append(f"path {rel!r} {why}")
            elif rel == DATABASE:
                continue
            elif not (self.root / rel).is_file():
                problems.append(f"{rel} missing")
            else:
                try:
                    actual = self.hashes.setdefault(rel, sha256_file(self.root / rel))
                except OSError as e:
                    problems.append(f"{rel} unreadable: {e.strerror}")
                    continue
                if actual != digest:
                    problems.append(f"{rel}: SHA-256 {actual}, checksum says {digest}")
        return problems

    # -- corpus, questions, blocklist ----------------------------------------------------
    def check_corpus(self) -> None:
        path = self.root / DATABASE
        if not path.is_file():
            return
        try:
            header = read_sqlite_header(path)
        except DrsearchError as e:
            self.add("corpus header", "FAIL", e.message)
            return
        problems = header_problems(header)
        if problems:
            self.add("corpus header", "FAIL", "; ".join(problems))
        else:
            self.add("corpus header", "PASS", f"SQLite, application_id {header.application_id:#x}, "
                     f"schema version {header.user_version}, {header.page_count:,} pages of "
                     f"{header.page_size:,} bytes = file size")
        try:
            with Engine.open(path) as engine:
                self.meta = dict(engine.meta)
        except DrsearchError as e:
            self.add("corpus meta", "FAIL", e.message)
            return
        self.checks.append(rc.corpus_meta_check(self.meta, self.manifest))

    def check_questions(self) -> None:
        if not self.present(QUESTIONS):
            return
        qs = self.questions = load_questions(self.root / QUESTIONS)
        if qs.problems:
            self.add("questions schema", "FAIL", "; ".join(qs.problems[:3]), problems=qs.problems)
        else:
            n = len(qs.rows)
            self.add("questions schema", "PASS", f"{n} DR-256 rows; benchmark.index 0..{n - 1} unique; "
                     f"qids unique; tiers {qs.tiers}")

    def check_blocklist(self) -> None:
        path = self.root / "benchmark/blocked_docids.txt"
        if not path.is_file():
            return
        try:
            self.blocklist = BlockList.from_file(path)
        except DrsearchError as e:
            self.add("blocked_docids", "FAIL", e.message)
            return
        if self.meta is None:
            self.add("blocked_docids", "WARN", f"{len(self.blocklist)} docids parse; not checked against "
                     "the corpus, which could not be read")
            return
        try:
            missing = missing_docids(self.root / DATABASE, self.blocklist.docids)
        except DrsearchError as e:
            self.add("blocked_docids", "FAIL", f"cannot look the docids up: {e.message}")
            return
        if missing:
            shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
            self.add("blocked_docids", "FAIL", f"{len(missing)} of {len(self.blocklist)} blocked docids "
                     f"are not in the corpus: {shown}", missing=missing[:100])
        else:
            self.add("blocked_docids", "PASS", f"{len(self.blocklist)} docids, all in the corpus")

    # -- deep ----------------------------------------------------------------------------
    def check_deep(self) -> None:
        path = self.root / DATABASE
        if not path.is_file():
            return
        self.deep_hash(path)
        self.stage("PRAGMA quick_check")
        self.timed("corpus quick_check", lambda: quick_check(path), "PRAGMA quick_check: ok")
        self.stage("FTS5 integrity-check")
        self.timed("corpus fts5 integrity", lambda: fts5_integrity_check(path),
                   "FTS5 integrity-check (with content comparison): ok")

    def deep_hash(self, path: Path) -> None:
        size = path.stat().st_size
        bar = self.progress(f"sha256 {DATABASE}", size) if self.progress is not None else None
        start = time.perf_counter()
        try:
            digest = sha256_file(path, bar.update if bar is not None else None)
        except OSError as e:
            self.add("corpus sha256", "FAIL", f"unreadable: {e.strerror}")
            return
        finally:
            if bar is not None:
                bar.close()
        seconds = time.perf_counter() - start
        rate = size / 1e6 / seconds if seconds > 0 else 0.0
        self.hashes[DATABASE] = digest
        speed = f"{size / 1e6:,.1f} MB in {seconds:.2f} s, {rate:,.0f} MB/s"
        entry = self.manifest.entry(DATABASE) if self.manifest is not None else None
        expected, source = (entry.sha256, "manifest") if entry is not None else (
            self.checksums.get(DATABASE), CHECKSUMS)
        details = {"sha256": digest, "bytes": size, "seconds": round(seconds, 3), "mb_per_s": round(rate, 1)}
        if expected is None:
            self.add("corpus sha256", "FAIL", f"SHA-256 {digest} ({speed}): no manifest entry or checksum "
                     "to compare", **details)
        elif expected != digest:
            self.add("corpus sha256", "FAIL", f"SHA-256 {digest}, {source} says {expected} ({speed})",
                     **details)
        else:
            self.add("corpus sha256", "PASS", f"SHA-256 matches {source} ({speed})", **details)

    def timed(self, name: str, run: Callable[[], list[str]], ok: str) -> None:
        start = time.perf_counter()
        try:
            problems = run()
        except DrsearchError as e:
            problems = [e.message]
        seconds = round(time.perf_counter() - start, 3)
        if problems:
            self.add(name, "FAIL", "; ".join(problems[:3]), problems=problems, seconds=seconds)
        else:
            self.add(name, "PASS", f"{ok} ({seconds:.2f} s)", seconds=seconds)


def _checksum_disagreements(sums: dict[str, str], manifest: Manifest, root: Path) -> list[str]:
    problems = []
    for entry in manifest.files:
        got = sums.get(entry.path)
        if got is None:
            problems.append(f"no line for {entry.path}")
        elif got != entry.sha256:
            problems.append(f"{entry.path}: {got[:12]}… but manifest.json says {entry.sha256[:12]}…")
    listed = {f.path for f in manifest.files} | {MANIFEST}
    problems += [f"line for a file the manifest does not list: {p}" for p in sorted(set(sums) - listed)]
    if MANIFEST not in sums:
        problems.append("no line for manifest.json")
    elif sums[MANIFEST] != sha256_file(root / MANIFEST):
        problems.append("manifest.json does not match its checksum: it was changed")
    return problems


def validate_release(
    release_dir: str | os.PathLike[str],
    *,
    deep: bool = False,
    progress: ProgressFactory | None = None,
    stage: Callable[[str], None] | None = None,
) -> ValidationReport:
    """Run every check on the release at ``release_dir``; never modifies it.

    ``progress(desc, total_bytes)`` makes a bar for the deep re-hash; ``stage(msg)`` is told
    when a long deep step starts. Raises InvalidInputError only if ``release_dir`` is not a
    directory; every problem with the release itself is a FAIL or WARN in the report.
    """
    root = Path(release_dir)
    if not root.is_dir():
        raise InvalidInputError(f"{root}: no such release directory")
    checks = _Validator(root, deep, progress, stage).run()
    return ValidationReport(str(root), deep, checks)


__all__ = ["Check", "Status", "ValidationReport", "validate_release"]
