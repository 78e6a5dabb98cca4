"""The ``drsearch`` command line: the one place where layers are wired together."""

from .cli import main

__all__ = ["main"]
