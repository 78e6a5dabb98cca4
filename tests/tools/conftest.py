"""The CLI tests use the release layer's sample-release fixtures (tests/release/conftest.py)."""

from __future__ import annotations

from ..release.conftest import pristine_release, release, sample_recipe, snapshot

__all__ = ["pristine_release", "release", "sample_recipe", "snapshot"]
