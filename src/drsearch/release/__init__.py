"""The release layer: make, describe and check a frozen release directory (docs/RELEASE.md).

Between ``drsearch.benchmark`` (which owns the question-row model) and ``drsearch.tools``
(the command line, which only parses arguments and prints): ``assemble_release`` builds a
release from documents, questions and a blocklist; ``write_release_manifest`` writes its
``manifest.json`` and ``checksums.sha256``; ``validate_release`` runs the fast and deep
checks; ``repo_data`` is the repository's own data inventory (and names the sample release's inputs);
``construct`` turns a pool of upstream rows into the inputs of a release (docs/CONSTRUCT.md).

Public API (pinned by tests/release/test_public_api.py)::

    assemble_release(out, docs, questions, blocked, name=, revision=, documents=) -> Manifest
    ReleaseDocuments(readme=, terms=, allow_placeholders=, tools=, code_license=); write_templates(dir)
    write_release_manifest(dir, name, revision) -> Manifest; read_manifest(dir) -> Manifest
    validate_release(dir, deep=) -> ValidationReport (Check records: PASS, FAIL, WARN)
    data_manifest_problems(repo); write_data_manifest(repo)
    pin_of_corpus_file(sha256, size) -> PinnedRelease | None

Submodules keep their own ``__all__`` for the rest (``manifest``'s path constants,
``checks``' individual checks, ``dr256``'s row model re-exported from the benchmark layer).
"""

from __future__ import annotations

from .assemble import assemble_release
from .checks import pin_of_corpus_file
from .documents import PlaceholderError, ReleaseDocuments, write_templates
from .manifest import (
    MANIFEST,
    FileEntry,
    Manifest,
    ProgressBar,
    ProgressFactory,
    read_manifest,
    write_release_manifest,
)
from .repo_data import data_manifest_problems, write_data_manifest
from .report import Check, Status, ValidationReport
from .validate import validate_release

__all__ = [
    "MANIFEST",
    "Check",
    "FileEntry",
    "Manifest",
    "PlaceholderError",
    "ProgressBar",
    "ProgressFactory",
    "ReleaseDocuments",
    "Status",
    "ValidationReport",
    "assemble_release",
    "data_manifest_problems",
    "pin_of_corpus_file",
    "read_manifest",
    "validate_release",
    "write_data_manifest",
    "write_release_manifest",
    "write_templates",
]
