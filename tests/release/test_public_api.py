"""The release layer's public surface changes only on purpose."""

from __future__ import annotations

import drsearch.release

EXPECTED_RELEASE_API = {
    "MANIFEST", "Check", "FileEntry", "Manifest", "ProgressBar", "ProgressFactory", "Status",
    "ValidationReport", "assemble_release", "data_manifest_problems",
    "pin_of_corpus_file", "read_manifest", "validate_release", "write_data_manifest",
    "write_release_manifest", "PlaceholderError", "ReleaseDocuments", "write_templates",
}


def test_release_exports() -> None:
    assert set(drsearch.release.__all__) == EXPECTED_RELEASE_API
    for name in drsearch.release.__all__:
        assert getattr(drsearch.release, name) is not None


def test_tools_holds_only_the_command_line() -> None:
    """The release tooling moved out of drsearch.tools: no module of it is left behind there."""
    from pathlib import Path

    import drsearch.tools

    left = {p.stem for p in Path(drsearch.tools.__file__).parent.glob("*.py")}
    assert not left & {"manifest", "release", "release_checks", "validate", "report", "repo_data", "dr256"}


def test_construct_exports() -> None:
    import drsearch.release.construct as construct

    assert set(construct.__all__) == {
        "CONFLICTING_LABELS", "FIELDS", "INVALID_URL", "NO_ANSWER_DOC", "PROBES", "SUMMARY", "URL_PATTERNS", "audit_shortcuts",
        "check_blocklist", "collect_urls", "consolidate", "field_map", "find_answers", "find_artifacts",
        "qid_of", "read_url_patterns", "write_summary", "EXCLUSION_CODES", "TIERS", "calibrate_tiers",
        "DEFAULT_TEMPLATE", "LEAK_CODES", "ShortTierError", "leak_audit", "read_template", "select_release",
        "write_kept_questions",
    }
    for name in construct.__all__:
        assert getattr(construct, name) is not None
