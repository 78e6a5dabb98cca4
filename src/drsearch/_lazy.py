"""Module-level ``__getattr__`` for packages whose public names include some from modules that
are costly or need an optional extra (pydantic for the index's build settings; httpx, scipy,
onnxruntime for the benchmark layer): such a module is imported only when one of its names is
first used, so ``import drsearch.index`` stays light and ``import drsearch.benchmark`` works
without the extra. Shared by every layer (it imports nothing of drsearch)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, lazy: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A ``__getattr__`` for ``package``: ``name`` is read from ``package.<lazy[name]>`` on first
    use and kept in ``namespace`` (the package's globals), so later lookups cost nothing.

    A lazy name may not be the name of its own module: importing a submodule sets the
    package's attribute of that name to the module, which would then hide the lazy value
    (``drsearch.index.build`` the function vs the module). Raises ValueError for one."""
    clash = sorted(name for name, module in lazy.items() if name == module)
    if clash:
        raise ValueError(f"{package}: lazy names that are their module's name: {', '.join(clash)}")

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
