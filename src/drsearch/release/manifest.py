"""Release manifests: ``manifest.json`` (inventory) and ``checksums.sha256`` (sha256sum format).

A release directory holds the files of :data:`RELEASE_FILES`; ``write_release_manifest``
describes every regular file under it (except the two files it writes) with its size,
SHA-256 and role, plus the release's name and revision, the corpus identity, build
parameters and counts. Output is deterministic: sorted keys, sorted paths, no timestamps,
so the same release always gives byte-identical manifests. A release with the dense
retriever's vectors (``search/corpus.sqlite3.vectors``) gets a ``vectors`` section (their
header) and the file the role ``corpus_vectors``; a release without them, neither. ``checksums.sha256`` covers
every file including ``manifest.json`` and is checked by ``sha256sum -c checksums.sha256``
run inside the release directory.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

from ..contract import InvalidInputError
from ..contract.atomic import write_bytes_atomic
from ..contract.dirlock import LOCK_NAME, lock_dir
from ..dense.sidecar import SUFFIX as SIDECAR_SUFFIX
from ..dense.sidecar import VectorsError, open_records
from ..index import BlockList, Engine, read_sqlite_header, sha256_file
from ..index.releases import BLOCKED as BLOCKED  # the layout every front-end knows (re-exported)
from ..index.releases import DATABASE as DATABASE
from ..index.releases import MANIFEST as MANIFEST
from ..index.schema import APPLICATION_ID
from .documents import BASELINES, CODE_DIR, LICENSE_CODE, README, TERMS
from .dr256 import load_questions

CHECKSUMS = "checksums.sha256"
QUESTIONS = "benchmark/questions.jsonl"
SUMMARY = "benchmark/summary.json"
COVERAGE = "search/coverage_summary.json"
SOURCES = "search/source_manifest_summary.json"
VECTORS = DATABASE + SIDECAR_SUFFIX  # optional: the dense retriever's vectors (drsearch embed)
VECTORS_ROLE = "corpus_vectors"
# what the manifest's "vectors" section copies from the sidecar's header
VECTORS_KEYS = ("content_identity", "dimension", "format_version", "max_tokens", "model", "model_sha256",
                "normalised", "pooling", "route", "rows", "tokenizer_sha256", "vector_format")
RELEASE_FILES: dict[str, str] = {  # path -> role
    QUESTIONS: "questions",
    BLOCKED: "blocked_docids",
    SUMMARY: "benchmark_summary",
    DATABASE: "corpus_database",
    COVERAGE: "coverage_summary",
    SOURCES: "source_manifest_summary",
}
LAYOUT = (*RELEASE_FILES, MANIFEST, CHECKSUMS)
DOCUMENT_ROLES: dict[str, str] = {README: "readme", TERMS: "terms", LICENSE_CODE: "license_code"}
"""The release documents (the DR-256 card's README.md, TERMS.md, LICENSE-CODE): not needed to
run the benchmark, so not in LAYOUT; ``validate`` warns when README or TERMS is missing."""
FOLDER_ROLES: dict[str, str] = {BASELINES: "baseline", CODE_DIR: "code", "selection": "selection",
                                "audit": "audit"}
"""Roles by top-level folder: reference runs, packaged utilities, construction evidence."""
FORMAT = "drsearch-release-manifest"
FORMAT_VERSION = 1
EXTRA_ROLE = "extra"

Sha256 = Annotated[StrictStr, Field(pattern=r"^[0-9a-f]{64}$")]
_CHECKSUM_LINE = re.compile(r"^([0-9a-fA-F]{64}) [ *](.+)$")
CORPUS_BUILD_KEYS = ("tokenizer", "chunking", "chunk_words", "chunk_stride", "chunk_overlap", "bm25",
                     "build_tool", "sqlite_version")
CORPUS_COUNT_KEYS = ("documents", "indexed_documents", "empty_documents", "chunks", "tokens",
                     "vocabulary")


class ProgressBar(Protocol):
    """What a progress callback factory returns (a tqdm bar satisfies it)."""

    def update(self, n: int) -> Any: ...

    def close(self) -> Any: ...


ProgressFactory = Callable[[str, int | None], ProgressBar]
"""``factory(description, total)`` makes a bar; ``total`` None: no known total (e.g. the
SQLite VM steps of a deep check, shown as activity and elapsed time)."""


class FileEntry(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: StrictStr
    bytes: Annotated[StrictInt, Field(ge=0)]
    sha256: Sha256
    role: StrictStr


class ReleaseInfo(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: Annotated[StrictStr, Field(min_length=1)]
    revision: Annotated[StrictStr, Field(min_length=1)]


class Manifest(BaseModel):
    """The parsed ``manifest.json`` of a release."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: StrictStr
    format_version: StrictInt
    release: ReleaseInfo
    corpus: dict[str, Any]
    counts: dict[str, Any]
    files: list[FileEntry]
    vectors: dict[str, Any] | None = None  # the sidecar's header (VECTORS_KEYS), where there is one

    def entry(self, path: str) -> FileEntry | None:
        return next((f for f in self.files if f.path == path), None)


def check_relative_path(path: str) -> str | None:
    """Why ``path`` cannot name a file inside a release (None if it can).

    Refused: absolute paths, ``..``/``.`` parts, empty parts, backslashes and control
    characters (sha256sum escapes those, and a manifest must never point outside its root).
    """
    if not path or path.startswith("/") or "\\" in path:
        return "must be a relative POSIX path"
    if any(ord(c) < 32 or c == "\x7f" for c in path):
        return "contains control characters"
    if any(part in ("", ".", "..") for part in path.split("/")):
        return "contains an empty, '.' or '..' part"
    return None


def release_files(root: Path) -> list[str]:
    """Every regular file under ``root`` (symlinks to files followed), as sorted relative
    POSIX paths, except manifest.json, checksums.sha256 and lock files (``.drsearch.lock``,
    drsearch.contract.dirlock). Raises InvalidInputError on a
    name a manifest cannot carry."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            full = Path(dirpath) / name
            rel = full.relative_to(root).as_posix()
            if rel in (MANIFEST, CHECKSUMS) or name == LOCK_NAME or not full.is_file():
                continue  # the lock file of whoever writes the release is not part of it
            problem = check_relative_path(rel)
            if problem:
                raise InvalidInputError(f"{full}: file name {problem}")
            out.append(rel)
    return sorted(out)


def escaping_paths(root: Path, rels: Iterable[str] = ()) -> dict[str, str]:
    """Release paths that resolve outside ``root``: relative path → where it leads.

    A release is the files inside its directory: a symlink (of a file, or of a directory
    above it) that leads elsewhere would let a manifest vouch for, and ``validate`` read, a
    file that is not part of the release. Checked: ``rels`` (e.g. the layout) and every
    symlink under ``root`` (directory symlinks are not descended into). Links that stay
    inside the release are fine; one that cannot be resolved (a loop) counts as escaping.
    """
    base = root.resolve()
    candidates = {r for r in rels if check_relative_path(r) is None}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in (*dirnames, *filenames):
            full = Path(dirpath) / name
            if full.is_symlink():
                candidates.add(full.relative_to(root).as_posix())
    out: dict[str, str] = {}
    for rel in sorted(candidates):
        full = root / rel
        if not (full.is_symlink() or full.exists()):
            continue
        try:
            target = full.resolve()
        except (OSError, RuntimeError) as e:  # RuntimeError: a symlink loop (Python 3.11)
            out[rel] = f"an unresolvable link ({e})"
            continue
        if not target.is_relative_to(base):
            out[rel] = str(target)
    return out


def check_contained(root: Path) -> None:
    """Raise InvalidInputError naming the first release file that resolves outside ``root``."""
    escaping = escaping_paths(root, LAYOUT)
    if escaping:
        rel, target = next(iter(escaping.items()))
        more = f" (+{len(escaping) - 1} more)" if len(escaping) > 1 else ""
        raise InvalidInputError(f"{root}: {rel} resolves outside the release (to {target}){more}: "
                                "a release holds its own files")


def hash_entries(root: Path, paths: Iterable[str], role_of: Callable[[str], str],
                 progress: ProgressFactory | None = None) -> list[FileEntry]:
    """Size and SHA-256 of each path under ``root`` (a progress bar per file over 64 MB)."""
    entries = []
    for rel in sorted(paths):
        full = root / rel
        size = full.stat().st_size
        bar = progress(rel, size) if progress is not None and size > 64 << 20 else None
        try:
            digest = sha256_file(full, bar.update if bar is not None else None)
        finally:
            if bar is not None:
                bar.close()
        entries.append(FileEntry(path=rel, bytes=size, sha256=digest, role=role_of(rel)))
    return entries


def role_of(path: str) -> str:
    """A release path's role: a release file's, a document's, its top-level folder's, else extra."""
    if path == VECTORS:
        return VECTORS_ROLE
    known = RELEASE_FILES.get(path) or DOCUMENT_ROLES.get(path)
    if known is not None:
        return known
    folder, sep, _ = path.partition("/")
    return FOLDER_ROLES.get(folder, EXTRA_ROLE) if sep else EXTRA_ROLE


def vectors_section(root: Path, corpus: dict[str, Any]) -> dict[str, Any] | None:
    """The manifest's ``vectors`` section: the path and the header (model, SHA-256s, format,
    rows, corpus identity) of the release's ``search/corpus.sqlite3.vectors``; None without one.
    Raises VectorsError (CorpusFileError) for a damaged or truncated sidecar or one of another
    corpus: a release is not described with vectors that cannot serve it."""
    path = root / VECTORS
    if not path.is_file():
        return None
    header, _ = open_records(path)
    if (header.get("content_identity") != corpus.get("content_identity")
            or header.get("rows") != corpus.get("chunks")):
        raise VectorsError(f"{path}: vectors of another corpus (identity {header.get('content_identity')}, "
                           f"{header.get('rows')} chunks; the release's corpus is "
                           f"{corpus.get('content_identity')}, {corpus.get('chunks')} chunks); rerun "
                           "`drsearch embed`")
    return {"path": VECTORS, **{k: header[k] for k in VECTORS_KEYS if k in header}}


def corpus_section(database: Path) -> dict[str, Any]:
    """The corpus identity, build parameters, counts and provenance, read from ``meta``.

    A SQLite file another tool wrote (not our application id) is described by its header
    only: ``{"path", "foreign": true, "application_id", "schema_version"}`` (validate then
    needs a pinned identity to accept it). Raises CorpusFileError if the database is
    missing, not SQLite, or claims to be a drsearch index and cannot be opened as one.
    """
    header = read_sqlite_header(database)
    if header.application_id != APPLICATION_ID:
        return {"path": DATABASE, "foreign": True, "application_id": header.application_id,
                "schema_version": header.user_version}
    with Engine.open(database, release_blocklist="ignore") as engine:  # describes the whole file
        meta = engine.meta
    section: dict[str, Any] = {
        "path": DATABASE,
        "content_identity": meta["content_identity"],
        "schema_version": meta["schema_version"],
        "application_id": meta["application_id"],
        "build": {k: meta[k] for k in CORPUS_BUILD_KEYS if k in meta},
    }
    section.update({k: meta[k] for k in CORPUS_COUNT_KEYS if k in meta})
    if "provenance" in meta:
        section["provenance"] = meta["provenance"]
    return section


def release_counts(root: Path, corpus: dict[str, Any]) -> dict[str, Any]:
    """Counts a manifest records. Raises InvalidInputError if the questions do not parse."""
    questions = load_questions(root / QUESTIONS)
    if questions.problems:
        raise InvalidInputError(f"cannot describe the release: {questions.problems[0]}")
    blocked = BlockList.from_file(root / BLOCKED)
    return {
        "questions": len(questions.rows),
        "calibration_tiers": questions.tiers,
        "difficulty": questions.difficulties,
        "blocked_docids": len(blocked),
        **{k: corpus[k] for k in ("documents", "chunks") if k in corpus},  # none: a foreign corpus
    }


def read_manifest(path: Path) -> Manifest:
    """Parse a manifest.json. Raises InvalidInputError with the first problem found."""
    try:
        data = json.loads(path.read_bytes())
    except OSError as e:
        raise InvalidInputError(f"{path}: cannot read ({e.strerror})") from e
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidInputError(f"{path}: not valid JSON ({e})") from e
    try:
        manifest = Manifest.model_validate(data)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "manifest"
        raise InvalidInputError(f"{path}: {where}: {first['msg']}") from e
    if manifest.format != FORMAT or manifest.format_version != FORMAT_VERSION:
        raise InvalidInputError(
            f"{path}: format {manifest.format!r} version {manifest.format_version}, "
            f"this drsearch reads {FORMAT!r} version {FORMAT_VERSION}")
    for entry in manifest.files:
        problem = check_relative_path(entry.path)
        if problem:
            raise InvalidInputError(f"{path}: file path {entry.path!r} {problem}")
    paths = [f.path for f in manifest.files]
    if len(set(paths)) != len(paths):
        raise InvalidInputError(f"{path}: a file is listed twice")
    return manifest


def parse_checksums(text: str) -> tuple[dict[str, str], list[str]]:
    """Parse sha256sum output: ({path: lowercase hex}, problems). Never raises."""
    entries: dict[str, str] = {}
    problems: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        m = _CHECKSUM_LINE.match(line)
        if not m:
            problems.append(f"line {n} is not '<sha256>  <path>'")
            continue
        digest, path = m.group(1).lower(), m.group(2)
        if path in entries:
            problems.append(f"line {n}: {path} listed twice")
        entries[path] = digest
    return entries, problems


def manifest_json(data: dict[str, Any]) -> bytes:
    """The canonical bytes of a manifest: sorted keys, 2-space indent, UTF-8, final newline."""
    return (json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def checksum_lines(entries: dict[str, str]) -> bytes:
    return "".join(f"{entries[p]}  {p}\n" for p in sorted(entries)).encode("utf-8")


def _release_info(root: Path, name: str | None, revision: str | None) -> ReleaseInfo:
    if name is None or revision is None:
        try:
            old = read_manifest(root / MANIFEST).release if (root / MANIFEST).exists() else None
        except InvalidInputError:
            old = None
        if old is None:
            raise InvalidInputError(f"{root} has no usable manifest.json: give --name and --revision")
        name, revision = name or old.name, revision or old.revision
    return ReleaseInfo(name=name, revision=revision)


def build_manifest(root: Path, name: str | None = None, revision: str | None = None,
                   progress: ProgressFactory | None = None) -> dict[str, Any]:
    """The manifest of the release at ``root`` as a JSON-ready dict (nothing written).

    ``name``/``revision`` default to those of an existing manifest.json. Raises
    InvalidInputError (no such directory, missing release files, no name/revision,
    unparseable questions or blocklist, a file resolving outside ``root``) and
    CorpusFileError (not SQLite; a broken drsearch index).
    """
    if not root.is_dir():
        raise InvalidInputError(f"{root}: no such directory")
    check_contained(root)
    missing = [p for p in RELEASE_FILES if not (root / p).is_file()]
    if missing:
        raise InvalidInputError(f"{root}: missing release file(s): {', '.join(missing)}")
    release = _release_info(root, name, revision)
    corpus = corpus_section(root / DATABASE)
    counts = release_counts(root, corpus)
    vectors = vectors_section(root, corpus)
    files = hash_entries(root, release_files(root), role_of, progress)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "release": release.model_dump(),
        "corpus": corpus,
        "counts": counts,
        "files": [f.model_dump() for f in files],
        **({"vectors": vectors} if vectors is not None else {}),  # a release without: as before
    }


def write_release_manifest(root: str | os.PathLike[str], name: str | None = None,
                           revision: str | None = None,
                           progress: ProgressFactory | None = None) -> Manifest:
    """Write ``manifest.json`` then ``checksums.sha256`` for the release at ``root``.

    Both are replaced atomically. Errors as :func:`build_manifest`; nothing is written
    unless the whole manifest could be computed.
    """
    base = Path(root)
    if not base.is_dir():  # as before the lock: a missing release is refused, not created
        return Manifest.model_validate(build_manifest(base, name, revision, progress))
    with lock_dir(base, "release directory"):
        data = build_manifest(base, name, revision, progress)
        body = manifest_json(data)
        sums = {f["path"]: f["sha256"] for f in data["files"]}
        write_bytes_atomic(base / MANIFEST, body)
        sums[MANIFEST] = sha256_file(base / MANIFEST)
        write_bytes_atomic(base / CHECKSUMS, checksum_lines(sums))
    return Manifest.model_validate(data)


__all__ = [
    "CHECKSUMS",
    "DATABASE",
    "LAYOUT",
    "MANIFEST",
    "RELEASE_FILES",
    "VECTORS",
    "VECTORS_KEYS",
    "FileEntry",
    "Manifest",
    "ProgressBar",
    "ProgressFactory",
    "build_manifest",
    "check_contained",
    "check_relative_path",
    "checksum_lines",
    "escaping_paths",
    "hash_entries",
    "manifest_json",
    "parse_checksums",
    "read_manifest",
    "release_files",
    "vectors_section",
    "write_release_manifest",
]
