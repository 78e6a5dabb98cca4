"""The repository's own data inventory (top-level ``manifest.json``) and sample release.

The repository is a release too: ``manifest.json`` at its root lists every file under
``data/`` with its size, SHA-256 and role, and names the inputs of the bundled sample
release: the DR-256 construction recipe's fixture (``data/construct/``), which ``make
sample-release`` runs the recipe on, offline (``scripts/offline_recipe``, docs/CONSTRUCT.md);
the sample release is that run's output, and the test suite builds and validates it on
every run.
"""

from __future__ import annotations

import fnmatch
import json
import os
from pathlib import Path
from typing import Any

from ..contract import InvalidInputError
from .manifest import FileEntry, ProgressFactory, hash_entries, manifest_json

FORMAT = "drsearch-data-manifest"
FORMAT_VERSION = 1
DATA_DIR = "data"
ROLES: tuple[tuple[str, str], ...] = (  # first matching pattern wins
    ("data/README.md", "documentation"),
    ("data/prices.example.json", "example_prices"),
    ("data/*/LICENSE", "licence"),
    ("data/sample/docs.jsonl", "sample_corpus"),
    ("data/sample/questions.jsonl", "sample_questions"),
    ("data/sample/blocked_docids.txt", "sample_blocked_docids"),
    ("data/sample/crawl/fetches.jsonl", "sample_crawl_records"),
    ("data/sample/crawl/bodies/*.html.gz", "sample_crawl_body"),
    ("data/construct/upstream.jsonl", "construct_fixture_upstream"),
    ("data/construct/multihop.json", "construct_fixture_pages"),
    ("data/construct/blocked_docids.txt", "construct_fixture_blocked_docids"),
    ("data/construct/reference_agent.json", "construct_fixture_reference_agent"),
    ("data/openbiorq/sources.jsonl", "openbiorq_fixture_sources"),
    ("data/openbiorq/followups.jsonl", "openbiorq_fixture_followups"),
    ("data/openbiorq/controls.jsonl", "openbiorq_fixture_controls"),
    ("data/openbiorq/preset-t0.json", "openbiorq_fixture_preset"),
    ("data/kg/README.md", "documentation"),
    ("data/biotools/README.md", "documentation"),
    ("data/biotools/fixtures.json", "biotools_fixture_records"),
    ("data/kg/kg.ttl", "kg_fixture_graph"),
    ("data/kg/docs.jsonl", "kg_fixture_articles"),
    ("data/kg/gen.json", "kg_fixture_generator_config"),
    ("data/kg/provenance.tsv", "kg_fixture_provenance"),
    ("data/domains/README.md", "documentation"),
    ("data/domains/fixtures.json", "domain_api_fixture_records"),
    ("data/domains/kg.ttl", "kg_fixture_graph"),
    ("data/domains/docs.jsonl", "kg_fixture_articles"),
    ("data/domains/gen.json", "kg_fixture_generator_config"),
    ("data/domains/provenance.tsv", "domain_api_fixture_provenance"),
    ("data/testcollections/cranfield/cran.all.1400", "test_collection_documents"),
    ("data/testcollections/cisi/CISI.ALL", "test_collection_documents"),
    ("data/testcollections/cranfield/cran.qry", "test_collection_queries"),
    ("data/testcollections/cisi/CISI.QRY", "test_collection_queries"),
    ("data/testcollections/cranfield/cranqrel", "test_collection_qrels"),
    ("data/testcollections/cisi/CISI.REL", "test_collection_qrels"),
)
# The sample release: what ``make sample-release`` runs the construction recipe on, and with
# which settings (scripts/offline_recipe/driver.py reads name, revision, per_tier and seed here).
SAMPLE_RELEASE: dict[str, str | int] = {
    "name": "drsearch-sample",
    "revision": "2.0.0",
    "recipe": "scripts/offline_recipe/driver.py",
    "upstream": "data/construct/upstream.jsonl",
    "pages": "data/construct/multihop.json",
    "blocked_docids": "data/construct/blocked_docids.txt",
    "reference_agent": "data/construct/reference_agent.json",
    "per_tier": 2,
    "seed": 7,
}


def role_of(path: str) -> str:
    """The role of a shipped data file. Raises InvalidInputError for an unknown file:
    every file the project ships must be accounted for."""
    for pattern, role in ROLES:
        if fnmatch.fnmatchcase(path, pattern):
            return role
    raise InvalidInputError(f"{path}: no role for this data file "
                            "(add one to drsearch.release.repo_data.ROLES)")


def data_files(repo: Path) -> list[str]:
    """Every file under data/ as sorted repository-relative POSIX paths."""
    out = []
    for dirpath, dirnames, filenames in os.walk(repo / DATA_DIR):
        dirnames.sort()
        out += [(Path(dirpath) / f).relative_to(repo).as_posix() for f in filenames]
    return sorted(out)


def data_manifest(repo: str | os.PathLike[str], progress: ProgressFactory | None = None) -> dict[str, Any]:
    """The repository's data manifest as a JSON-ready dict (deterministic)."""
    root = Path(repo)
    files = hash_entries(root, data_files(root), role_of, progress)
    return {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "name": "drsearch",
        "description": "Data this repository ships; see data/README.md for licences and provenance.",
        "files": [f.model_dump() for f in files],
        "sample_release": SAMPLE_RELEASE,
    }


def write_data_manifest(repo: str | os.PathLike[str]) -> Path:
    """Write ``manifest.json`` at the repository root; returns its path."""
    path = Path(repo) / "manifest.json"
    path.write_bytes(manifest_json(data_manifest(repo)))
    return path


def data_manifest_problems(repo: str | os.PathLike[str]) -> list[str]:
    """How the shipped data differs from ``manifest.json`` ([] if it matches exactly)."""
    root = Path(repo)
    try:
        recorded = json.loads((root / "manifest.json").read_bytes())
        entries = {e["path"]: FileEntry.model_validate(e) for e in recorded["files"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        return [f"manifest.json unreadable: {e}"]
    problems = []
    actual = {e.path: e for e in hash_entries(root, [p for p in data_files(root) if p in entries],
                                              lambda p: entries[p].role)}
    for path, want in sorted(entries.items()):
        got = actual.get(path)
        if got is None:
            problems.append(f"{path}: listed but missing")
        elif (got.bytes, got.sha256) != (want.bytes, want.sha256):
            problems.append(f"{path}: {got.bytes:,} bytes, SHA-256 {got.sha256[:16]}…; manifest.json says "
                            f"{want.bytes:,} bytes, {want.sha256[:16]}…")
    problems += [f"{p}: shipped but not in manifest.json" for p in data_files(root) if p not in entries]
    if recorded.get("sample_release") != SAMPLE_RELEASE:
        problems.append("sample_release section differs from drsearch.release.repo_data.SAMPLE_RELEASE")
    return problems


__all__ = [
    "ROLES",
    "SAMPLE_RELEASE",
    "data_files",
    "data_manifest",
    "data_manifest_problems",
    "role_of",
    "write_data_manifest",
]
