"""A DrBencher-style generator: answer-first numeric questions from knowledge-graph chains
(docs/GENERATE.md, "The DrBencher-style generator").

Modules: :mod:`.sparql` (SPARQL 1.1 protocol client, replay-cached), :mod:`.kgstore` (the
offline endpoint behind ``drsearch kg serve``; pyoxigraph, the ``kg`` extra), :mod:`.protocol`
(the results media type both share),
:mod:`.templates` (typed pure functions computing the gold), :mod:`.config` (the strict
generator config), :mod:`.queries` (the portable SPARQL the stages send), :mod:`.stages`
(Discover and Chains), :mod:`.serving` (V2's served support corpus), :mod:`.pipeline` (the
``drsearch generate drbencher`` pipeline), :mod:`.options` (its command-line options).

The SPARQL client's names are imported on first use (httpx, the agents extra), so importing
the package, and ``.options`` for ``drsearch --help``, needs no extra.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...._lazy import lazy_getattr
from .errors import ConfigError, KGDataError, KGEndpointError, SparqlError

if TYPE_CHECKING:
    from .sparql import CachedSparql, SparqlClient, SparqlResult, SparqlSettings, check_portable

_LAZY: dict[str, str] = dict.fromkeys(
    ("CachedSparql", "SparqlClient", "SparqlResult", "SparqlSettings", "check_portable"), "sparql")

__getattr__ = lazy_getattr(__name__, _LAZY, globals())

__all__ = ["CachedSparql", "ConfigError", "KGDataError", "KGEndpointError", "SparqlClient", "SparqlError",
           "SparqlResult", "SparqlSettings", "check_portable"]
