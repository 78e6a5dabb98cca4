"""The multi-hop pages of the construction fixture: data in ``data/construct/multihop.json``, read
by ``scripts/offline_recipe/fixture.py``; re-exported here for the tests."""

from __future__ import annotations

from offline_recipe.fixture import DISTRACTORS, MULTIHOP, install, pages
from offline_recipe.fixture import multihop_upstream_rows as upstream_rows

__all__ = ["DISTRACTORS", "MULTIHOP", "install", "pages", "upstream_rows"]
