"""``drsearch validate --release-dir DIR [--deep]``: prove a release is the one published.

Fast checks (seconds, whatever the corpus size): the layout; manifest.json parses and
lists every file with its size; SHA-256 of every file except the database (whose size and
SQLite header, application id and schema version are checked instead); checksums.sha256
agrees with the manifest (or, when the manifest is another tool's, with the files); the
corpus opens and its ``meta`` agrees with the manifest; questions.jsonl is schema-valid
with indices 0..N-1 and unique qids; every blocked docid exists in the corpus;
summary.json, the coverage and source summaries and the manifest's counts agree with the
questions and the corpus; a pinned identity (DR-256 v1.1.0) matches when the release
names it or its content is recognised; every file's role in the manifest is the one its
path has, README.md and TERMS.md are there and complete (WARN), LICENSE-CODE is there
where code ships, and baselines/ holds runs over this corpus and blocklist
(:mod:`.doc_checks`). ``deep`` also re-hashes the database and runs
``PRAGMA quick_check`` and FTS5's integrity-check, and checks the tool snapshot a release may
carry beside its corpus (``tool-snapshot/``: the biomedical tools' frozen answers,
drsearch.agents.snapshot) digest by digest.

Two kinds of corpus built by another tool are accepted (docs/RELEASE.md): the pinned
release's own corpus file, whose schema drsearch does not read (``foreign corpus``: its
size, and with ``deep`` its SHA-256, must be the pinned ones; content checks that need
our schema are reported as not checked), and drsearch's index rebuilt from it by
``drsearch import``, which records its source in ``meta`` (``corpus provenance``: the
recorded size and SHA-256 must be those the named release pins).

Validation never writes into the release: files are read, the corpus is opened
read-only and immutable, and the FTS5 check runs on a read-only file descriptor. Nor does
it read outside it: a release path that resolves outside the directory (a symlink of the
file or of a directory above it) fails the release before any file is read.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from ..contract import DrsearchError, InvalidInputError
from ..dense.sidecar import open_records
from ..index import (
    BlockList,
    Engine,
    fts5_integrity_check,
    header_problems,
    missing_docids,
    posting_problems,
    quick_check,
    read_sqlite_header,
    sha256_file,
)
from ..index.integrity import fts5_tables
from ..index.schema import APPLICATION_ID
from . import checks as rc
from . import doc_checks as dc
from .dr256 import PinnedRelease, QuestionSet, load_questions
from .manifest import (
    BLOCKED,
    CHECKSUMS,
    DATABASE,
    FORMAT,
    LAYOUT,
    MANIFEST,
    QUESTIONS,
    RELEASE_FILES,
    VECTORS,
    VECTORS_KEYS,
    Manifest,
    ProgressFactory,
    check_relative_path,
    escaping_paths,
    parse_checksums,
    read_manifest,
    release_files,
)
from .report import Check, Status, ValidationReport

TOOL_SNAPSHOT = "tool-snapshot"
"""Where a release carries the biomedical tools' snapshot (``drsearch snapshot freeze --out``)."""


class _Validator:
    def __init__(self, root: Path, deep: bool, progress: ProgressFactory | None,
                 stage: Callable[[str], None] | None, pins: tuple[PinnedRelease, ...] | None) -> None:
        self.root = root
        self.deep = deep
        self.progress = progress
        self.stage = stage or (lambda _msg: None)
        self.pins = pins
        self.checks: list[Check] = []
        self.manifest: Manifest | None = None
        self.foreign_manifest = False
        self.foreign: PinnedRelease | None = None  # the pin a foreign corpus file is accepted as
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
        if not self.check_containment():
            return self.checks
        self.check_layout()
        self.check_manifest()
        self.check_files()
        if self.manifest is not None:
            self.checks.append(dc.role_check(self.manifest))
        self.checks.extend(dc.documents_checks(self.root, self.manifest))
        self.check_checksums()
        self.check_corpus()
        self.check_questions()
        self.check_blocklist()
        if (self.meta is not None or self.foreign is not None) and self.questions is not None:
            self.checks.extend(rc.content_checks(self.root, self.meta, self.questions, self.blocklist,
                                                 self.manifest))
        identity = self.meta.get("content_identity") if self.meta is not None else None
        if (baselines := dc.baselines_check(self.root, identity, self.blocklist)) is not None:
            self.checks.append(baselines)
        if self.deep:
            self.check_deep()
            self.check_vectors()
        recorded = self.meta.get("provenance") if self.meta is not None else None
        provenance = recorded if isinstance(recorded, dict) else None
        if self.meta is not None and (check := rc.provenance_check(self.meta, self.pins)) is not None:
            self.checks.append(check)
        if self.foreign is not None:
            self.checks.append(rc.foreign_corpus_check(self.foreign, (self.root / DATABASE).stat().st_size,
                                                       self.hashes.get(DATABASE)))
        self.checks.extend(rc.identity_checks(
            self.root, self.manifest, self.questions, self.hashes, self.pins,
            foreign=self.foreign is not None, provenance=provenance))
        return self.checks

    # -- containment, layout, manifest, files ----------------------------------------------
    def check_containment(self) -> bool:
        """No release file may resolve outside the release (through a symlink of the file or
        of a directory above it). Checks read files by their release paths, so any escape
        fails the release before anything is read. True when nothing escapes."""
        escaping = escaping_paths(self.root, LAYOUT)
        for rel, target in escaping.items():
            self.add(f"file {rel}", "FAIL", f"resolves outside the release (to {target}): refused, not read; "
                     "a release must hold its own files", target=target)
        if escaping:
            self.add("containment", "FAIL", f"{len(escaping)} release path(s) lead outside {self.root}: no "
                     "other check was run, so nothing outside the release was read")
        return not escaping

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
        if self.check_foreign_manifest():
            return
        try:
            self.manifest = read_manifest(self.root / MANIFEST)
        except InvalidInputError as e:
            self.add("manifest", "FAIL", e.message)
            return
        m = self.manifest
        self.add("manifest", "PASS", f"{m.release.name} {m.release.revision}: {len(m.files)} files listed",
                 release=m.release.model_dump())

    def check_foreign_manifest(self) -> bool:
        """A manifest.json in another tool's format (e.g. the upstream DR-256 download's):
        not a failure when checksums.sha256 can prove the files instead. True if foreign."""
        try:
            data = json.loads((self.root / MANIFEST).read_bytes())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return False  # read_manifest reports it
        if not isinstance(data, dict) or data.get("format") == FORMAT:
            return False
        self.foreign_manifest = True
        what = f"manifest.json is another tool's (format {data.get('format')!r}, not {FORMAT!r})"
        if self.present(CHECKSUMS):
            self.add("manifest", "WARN", f"{what}: files are checked against {CHECKSUMS} and the pinned "
                     "identity instead")
        else:
            self.add("manifest", "FAIL", f"{what} and there is no {CHECKSUMS}: nothing to check the files "
                     "against")
        return True

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
            self.check_unlisted(sums)
        if problems:
            self.add("checksums", "FAIL", f"{CHECKSUMS}: " + "; ".join(problems[:5]), problems=problems)
        else:
            self.add("checksums", "PASS", ok)

    def check_unlisted(self, sums: dict[str, str]) -> None:
        """Without our manifest, checksums.sha256 is the inventory: every file must be in it."""
        try:
            present = release_files(self.root)
        except InvalidInputError as e:
            self.add("files", "FAIL", e.message)
            return
        for rel in [*present, MANIFEST]:
            if rel in sums or not self.present(rel):
                continue
            if rel in RELEASE_FILES or rel == MANIFEST:
                self.add(f"file {rel}", "FAIL", f"a release file missing from {CHECKSUMS}: unverifiable")
            else:
                self.add(f"file {rel}", "WARN", f"unlisted: present but not in {CHECKSUMS}")

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
        if header.application_id != APPLICATION_ID:
            self.foreign = rc.recognise_pin(self.manifest, self.hashes.get(QUESTIONS), self.pins,
                                            db_bytes=header.file_bytes, foreign=True)
        if self.foreign is not None:
            self.check_foreign_header(header)
            return
        problems = header_problems(header)
        if problems:
            hint = ("" if header.application_id == APPLICATION_ID else " (not a drsearch index, and no "
                    "pinned identity names this file: drsearch import rebuilds it)")
            self.add("corpus header", "FAIL", "; ".join(problems) + hint)
        else:
            self.add("corpus header", "PASS", f"SQLite, application_id {header.application_id:#x}, "
                     f"schema version {header.user_version}, {header.page_count:,} pages of "
                     f"{header.page_size:,} bytes = file size")
        try:
            with Engine.open(path, release_blocklist="ignore") as engine:  # checks the whole file
                self.meta = dict(engine.meta)
        except DrsearchError as e:
            self.add("corpus meta", "FAIL", e.message)
            return
        self.checks.append(rc.corpus_meta_check(self.meta, self.manifest))

    def check_foreign_header(self, header: Any) -> None:
        """Another tool's SQLite file, accepted as a pinned release's corpus: only the
        structure of its header is ours to check (the pins are checked by foreign corpus)."""
        problems = header_problems(header, drsearch=False)
        what = (f"foreign corpus file (application_id {header.application_id:#x}, schema version "
                f"{header.user_version}: not a drsearch index; accepted as {self.foreign.label}'s, "
                "see foreign corpus)") if self.foreign is not None else ""
        if problems:
            self.add("corpus header", "FAIL", f"{what}: " + "; ".join(problems))
        else:
            self.add("corpus header", "PASS", f"{what}; {header.page_count:,} pages of {header.page_size:,} "
                     "bytes = file size")

    def check_questions(self) -> None:
        if not self.present(QUESTIONS):
            return
        try:
            qs = self.questions = load_questions(self.root / QUESTIONS)
        except OSError as e:
            self.add("questions schema", "FAIL", f"{QUESTIONS} unreadable: {e.strerror}")
            return
        if qs.problems:
            self.add("questions schema", "FAIL", "; ".join(qs.problems[:3]), problems=qs.problems)
        else:
            n = len(qs.rows)
            self.add("questions schema", "PASS", f"{n} DR-256 rows; benchmark.index 0..{n - 1} unique; "
                     f"qids unique; tiers {qs.tiers}")

    def check_blocklist(self) -> None:
        path = self.root / BLOCKED
        if not path.is_file():
            return
        try:
            self.blocklist = BlockList.from_file(path)
        except DrsearchError as e:
            self.add("blocked_docids", "FAIL", e.message)
            return
        if self.meta is None:
            why = ("is another tool's file, whose schema drsearch does not read" if self.foreign is not None
                   else "could not be read")
            self.add("blocked_docids", "WARN", f"{len(self.blocklist)} docids parse; not looked up in the "
                     f"corpus, which {why}")
            return
        try:
            missing = missing_docids(self.root / DATABASE, self.blocklist.docids)
        except DrsearchError as e:
            self.add("blocked_docids", "FAIL", f"cannot look the docids up: {e.message}")
            return
        if missing:
            shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
            self.add("blocked_docids", "FAIL", f"{BLOCKED}: {len(missing)} of {len(self.blocklist)} blocked "
                     f"docids are not in the corpus: {shown}", missing=missing[:100])
        else:
            self.add("blocked_docids", "PASS", f"{len(self.blocklist)} docids, all in the corpus")

    # -- deep ----------------------------------------------------------------------------
    def check_tool_snapshot(self) -> None:
        """The tool snapshot beside the corpus, when the release carries one: every digest
        (the agents extra is needed only then)."""
        where = self.root / TOOL_SNAPSHOT
        if not where.exists():
            return
        from ..agents.errors import SnapshotError
        from ..agents.snapshot import load_snapshot

        try:
            snap = load_snapshot(where)
        except SnapshotError as e:
            self.add("tool snapshot", "FAIL", e.message)
            return
        m = snap.manifest
        tools = ", ".join(sorted(m["tools"]))
        self.add("tool snapshot", "PASS", f"{TOOL_SNAPSHOT}/: {m['rows']} answer(s) of {tools} (accessed "
                 f"{', '.join(m['access_dates'])}), every digest matches", digest=snap.digest)

    def check_deep(self) -> None:
        self.check_tool_snapshot()
        path = self.root / DATABASE
        if not path.is_file():
            return
        self.deep_hash(path)
        self.stage("PRAGMA quick_check")
        self.timed("corpus quick_check", "PRAGMA quick_check", lambda tick: quick_check(path, tick),
                   "PRAGMA quick_check: ok")
        self.stage("FTS5 integrity-check")
        if self.foreign is None:
            self.timed("corpus fts5 integrity", "FTS5 integrity-check",
                       lambda tick: fts5_integrity_check(path, progress=tick),
                       "FTS5 integrity-check (with content comparison): ok")
            self.stage("posting lists")
            self.timed("corpus posting lists", "posting lists", lambda tick: posting_problems(path),
                       "every posting list sound (its layout, length, table, codes and rowids)")
            return
        try:
            tables = fts5_tables(path)
        except DrsearchError as e:
            self.add("corpus fts5 integrity", "FAIL", e.message)
            return
        if not tables:
            self.add("corpus fts5 integrity", "PASS", "the foreign corpus file has no FTS5 table to check")
            return
        self.timed("corpus fts5 integrity", "FTS5 integrity-check",
                   lambda tick: fts5_integrity_check(path, None, tick),
                   f"FTS5 integrity-check of the foreign file's {', '.join(tables)}: ok")

    def check_vectors(self) -> None:
        """The dense retriever's sidecar (``search/corpus.sqlite3.vectors``), where the manifest
        names one or the file is there: whole (its size is its header's rows), of this corpus
        (identity and chunk count), of the model the manifest records, and every record sound
        (a finite positive scale, components within ±127). Its SHA-256 is the file check's."""
        named = self.manifest.vectors if self.manifest is not None else None
        path = self.root / VECTORS
        if named is None and not path.is_file():
            return
        if not path.is_file():
            self.add("corpus vectors", "FAIL", f"manifest.json names {VECTORS}, which is missing")
            return
        try:
            header, records = open_records(path)
        except DrsearchError as e:
            self.add("corpus vectors", "FAIL", e.message)
            return
        problems = []
        if self.meta is not None:
            for key, meta_key in (("content_identity", "content_identity"), ("rows", "chunks")):
                if header.get(key) != self.meta.get(meta_key):
                    problems.append(f"header {key} {header.get(key)!r}, the corpus has "
                                    f"{self.meta.get(meta_key)!r}")
        for key in VECTORS_KEYS:
            if named is not None and header.get(key) != named.get(key):
                problems.append(f"header {key} {header.get(key)!r}, manifest.json says {named.get(key)!r}")
        bad = 0
        for lo in range(0, len(records), 65536):
            block = records[lo:lo + 65536]
            scales = block["s"].astype(np.float64)
            bad += int(np.count_nonzero(~(np.isfinite(scales) & (scales > 0)))
                       + np.count_nonzero((block["v"] == -128).any(axis=1)))
        if bad:
            problems.append(f"{bad} record(s) with a scale that is not finite and positive or a "
                            "component of -128")
        what = (f"{header.get('rows'):,} vectors of {header.get('dimension')} "
                f"({header.get('vector_format')}), model {header.get('model')} "
                f"{str(header.get('model_sha256'))[:12]}…")
        if problems:
            self.add("corpus vectors", "FAIL", f"{VECTORS}: " + "; ".join(problems[:3]), problems=problems)
        elif named is None:
            self.add("corpus vectors", "WARN", f"{what}, sound, but manifest.json does not name them "
                     "(rewrite it: drsearch release manifest)")
        else:
            self.add("corpus vectors", "PASS", f"{what}: whole, of this corpus and of the manifest's model")

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
            self.add("corpus sha256", "FAIL", f"{DATABASE} SHA-256 {digest} ({speed}): no manifest entry or "
                     "checksum to compare", **details)
        elif expected != digest:
            self.add("corpus sha256", "FAIL", f"{DATABASE} SHA-256 {digest}, {source} says {expected} "
                     f"({speed}): the file was changed", **details)
        else:
            self.add("corpus sha256", "PASS", f"SHA-256 matches {source} ({speed})", **details)

    def timed(self, name: str, desc: str, run: Callable[[Callable[[int], None] | None], list[str]],
              ok: str) -> None:
        """Run a deep check, with a bar of SQLite VM steps (no known total) if asked for."""
        bar = self.progress(desc, None) if self.progress is not None else None
        start = time.perf_counter()
        try:
            problems = run(bar.update if bar is not None else None)
        except DrsearchError as e:
            problems = [e.message]
        finally:
            if bar is not None:
                bar.close()
        seconds = round(time.perf_counter() - start, 3)
        if problems:
            self.add(name, "FAIL", f"{DATABASE}: " + "; ".join(problems[:3]), problems=problems,
                     seconds=seconds)
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
    pins: tuple[PinnedRelease, ...] | None = None,
) -> ValidationReport:
    """Run every check on the release at ``release_dir``; never modifies it.

    ``progress(desc, total)`` makes a bar: for the deep re-hash (total bytes) and for
    ``PRAGMA quick_check`` and the FTS5 integrity-check (total None; updated with SQLite
    VM steps). ``stage(msg)`` is told when a long deep step starts. ``pins``: the pinned
    release identities to recognise (default :data:`~drsearch.release.dr256.PINNED_RELEASES`).
    Raises InvalidInputError only if ``release_dir`` is not a directory; every problem
    with the release itself is a FAIL or WARN in the report.
    """
    root = Path(release_dir)
    if not root.is_dir():
        raise InvalidInputError(f"{root}: no such release directory")
    checks = _Validator(root, deep, progress, stage, pins).run()
    return ValidationReport(str(root), deep, checks)


__all__ = ["Check", "Status", "ValidationReport", "validate_release"]
