"""A process that only searches never imports the typed build settings (pydantic, ~150 ms):
the package imports them on first use (``drsearch.index.__getattr__``), and build() on its
first call without settings."""

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
print(json.dumps({"hits": len(hits), "loaded": sorted(m for m in ("pydantic", "drsearch.index.settings")
                                                  if m in sys.modules)}))
"""


def test_searching_imports_no_build_side(sample_index: Path) -> None:
    p = subprocess.run([sys.executable, "-c", _SEARCH_ONLY, str(sample_index)], capture_output=True,
                       text=True, timeout=120, check=True)
    assert json.loads(p.stdout) == {"hits": 5, "loaded": []}


def test_settings_load_on_first_use() -> None:
    from drsearch.index.settings import BuildSettings

    assert index.BuildSettings is BuildSettings
    assert set(index._LAZY) <= set(index.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nonexistent'"):
        index.nonexistent  # noqa: B018


# Whichever is imported first, the package's names stay the functions and classes (a
# submodule's import sets the package attribute of its own name: never one of the lazy ones).
_ORDERS = """
import importlib, sys
first = sys.argv[1]
if first == "submodules":
    import drsearch.index.build, drsearch.index.settings
from drsearch.index import BuildSettings, build
import drsearch.index.build, drsearch.index.settings
import drsearch.index as index
assert callable(index.build) and not isinstance(index.build, type(sys)), index.build
assert isinstance(index.BuildSettings, type) and index.BuildSettings is BuildSettings
assert index.build is build
print("ok")
"""


@pytest.mark.parametrize("first", ["submodules", "names"])
def test_the_package_names_survive_any_import_order(first: str) -> None:
    p = subprocess.run([sys.executable, "-c", _ORDERS, first], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]


def test_a_build_without_settings_uses_the_defaults(tmp_path: Path) -> None:
    from drsearch.index import BuildSettings, build, read_jsonl

    data = Path(__file__).resolve().parents[2] / "data" / "sample" / "docs.jsonl"
    report = build(read_jsonl(data), tmp_path / "x.sqlite3")
    again = build(read_jsonl(data), tmp_path / "y.sqlite3", BuildSettings())
    assert report.content_identity == again.content_identity


def test_a_lazy_name_of_its_own_module_is_refused() -> None:
    """The trap the lazy 'build' fell into, refused where lazy names are declared."""
    from drsearch._lazy import lazy_getattr

    with pytest.raises(ValueError, match="lazy names that are their module's name: build"):
        lazy_getattr("drsearch.index", {"build": "build", "BuildSettings": "settings"}, {})
