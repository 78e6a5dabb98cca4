"""A DrBencher-style generator: answer-first numeric questions from knowledge-graph chains
(docs/GENERATE.md, "The DrBencher-style generator").

Modules: :mod:`.sparql` (SPARQL 1.1 protocol client, replay-cached), :mod:`.kgstore` (the
offline endpoint behind ``drsearch kg serve``; pyoxigraph, the ``kg`` extra),
:mod:`.templates` (typed pure functions computing the gold), :mod:`.config` (the strict
generator config), :mod:`.queries` (the portable SPARQL the stages send), :mod:`.stages`
(Discover and Chains), :mod:`.serving` (V2's served support corpus), :mod:`.pipeline` (the
``drsearch generate drbencher`` pipeline).
"""

from __future__ import annotations

from .errors import ConfigError, KGDataError, KGEndpointError, SparqlError
from .sparql import CachedSparql, SparqlClient, SparqlResult, SparqlSettings, check_portable

__all__ = ["CachedSparql", "ConfigError", "KGDataError", "KGEndpointError", "SparqlClient", "SparqlError",
           "SparqlResult", "SparqlSettings", "check_portable"]
