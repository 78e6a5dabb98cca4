"""drsearch: a frozen, reproducible local search environment for deep-research agents.

Layers (imports go down only): tools > benchmark > agents > server | corpus > index.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
