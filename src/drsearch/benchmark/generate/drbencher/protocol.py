"""The SPARQL 1.1 protocol's results media type, shared by the client (sparql.py: httpx, the
agents extra) and the offline endpoint (kgstore.py: pyoxigraph, the kg extra), so that either
imports without the other's extra."""

from __future__ import annotations

RESULTS_JSON = "application/sparql-results+json"

__all__ = ["RESULTS_JSON"]
