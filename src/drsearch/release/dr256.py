"""DR-256 question rows and pinned release identities, re-exported for the release tooling.

The row model lives in :mod:`drsearch.benchmark.datasets.dr256` (the benchmark layer owns
datasets); ``validate``, ``release`` and ``manifest`` keep importing it from here. The
names are that module's ``__all__``, so the two lists cannot drift apart.
"""

from __future__ import annotations

from ..benchmark.datasets.dr256 import *  # noqa: F403
from ..benchmark.datasets.dr256 import __all__ as __all__
