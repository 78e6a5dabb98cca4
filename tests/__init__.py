"""The test suite. ``scripts/`` goes on sys.path: the offline stand-ins of the construction
recipe (``scripts/offline_recipe``: loopback crawl site, fixture, driver) are shipped code
that ``make sample-release`` runs, and the tests use the same modules. The scripted models
(chat server, oracle judge, rule-based responders) are the package's :mod:`drsearch.dev`."""

from __future__ import annotations

import sys
from pathlib import Path

_SCRIPTS = str(Path(__file__).resolve().parents[1] / "scripts")
if _SCRIPTS not in sys.path:
    sys.path.insert(0, _SCRIPTS)
