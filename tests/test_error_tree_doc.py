"""docs/DESIGN.md's error tree names every error class of the package (checked against the code)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import drsearch
from drsearch.contract import DrsearchError

from .helpers import REPO


def _every_error_class() -> set[type[DrsearchError]]:
    for info in pkgutil.walk_packages(drsearch.__path__, "drsearch."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed: its errors cannot be listed
            continue
    found: set[type[DrsearchError]] = set()
    todo: list[type[DrsearchError]] = [DrsearchError]
    while todo:
        cls = todo.pop()
        if cls.__module__.startswith("drsearch.") and cls not in found:
            found.add(cls)
            todo.extend(cls.__subclasses__())
    return found


def test_the_design_error_tree_names_every_error_class() -> None:
    design = (REPO / "docs/DESIGN.md").read_text()
    section = design.split("\n## Errors\n", 1)[1].split("\n## ", 1)[0]
    tree = section.split("```", 2)[1]
    named = set(re.findall(r"\b[A-Z][A-Za-z]+Error\b", tree))
    classes = {cls.__name__ for cls in _every_error_class()}
    assert classes - named == set(), "error classes missing from docs/DESIGN.md's error tree"
    assert named - classes == set(), "docs/DESIGN.md's error tree names classes the code lacks"
