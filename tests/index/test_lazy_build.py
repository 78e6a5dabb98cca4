"""A process that only searches never imports the build side (pydantic, ~150 ms): the
package imports it on first use of a build name (``drsearch.index.__getattr__``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import drsearch.index as index

_SEARCH_ONLY = """
import json, sys
from drsearch.index import Engine
with Engine.open(sys.argv[1]) as e:
    hits = e.search("solar energy", 5).hits
print(json.dumps({"hits": len(hits), "loaded": sorted(m for m in ("pydantic", "drsearch.index.build",
      "drsearch.index.settings") if m in sys.modules)}))
"""


def test_searching_imports_no_build_side(sample_index: Path) -> None:
    p = subprocess.run([sys.executable, "-c", _SEARCH_ONLY, str(sample_index)], capture_output=True,
                       text=True, timeout=120, check=True)
    assert json.loads(p.stdout) == {"hits": 5, "loaded": []}


def test_build_names_load_on_first_use() -> None:
    from drsearch.index.build import build
    from drsearch.index.settings import BuildSettings

    assert index.build is build and index.BuildSettings is BuildSettings
    assert set(index._LAZY) <= set(index.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        index.nonexistent  # noqa: B018
