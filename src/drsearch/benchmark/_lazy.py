"""Module-level ``__getattr__`` for packages whose public names include some from modules that
need an optional extra (httpx, scipy, onnxruntime): such a module is imported only when one of
its names is first used, so ``import drsearch.benchmark`` works without the extra."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, lazy: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package``: ``name`` is read from ``package.<lazy[name]>`` on first
    use and kept in ``namespace`` (the package's globals), so later lookups cost nothing."""

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
