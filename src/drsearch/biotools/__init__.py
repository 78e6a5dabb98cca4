"""Biomedical agent tools: clients of ten public APIs (OpenBioRQ's tool set).

Below the agents layer and above the engine: it knows nothing of runs, caches or models.
Each tool is a :class:`BioTool` (schema, argument checks, endpoints, one run function);
:class:`LiveBioTools` calls them live, politely; the agents layer caches and freezes their
answers (drsearch.agents.biotools, drsearch.agents.snapshot). docs/AGENTS.md documents them.

Public API::

    BIOTOOLS (name -> BioTool), BIOTOOL_NAMES (the ten), DOMAIN_TOOL_NAMES (DrBencher's
    financial and security tools); BioTool.check(args) -> canonical arguments
    LiveBioTools(endpoints, env=None, transport=None).call(name, args) -> envelope bytes
    render(envelope, limit) -> what the model reads; load_endpoints(file); signatures(names)
    InvalidArgumentsError, ServiceError; ServiceClient, RateLimiter
"""

from .errors import InvalidArgumentsError, ServiceError
from .http import RateLimiter, Reply, ServiceClient
from .registry import (
    BIOTOOL_NAMES,
    BIOTOOLS,
    DOMAIN_TOOL_NAMES,
    LiveBioTools,
    load_endpoints,
    signatures,
    utc_date,
)
from .spec import BioTool, Outcome, envelope, provenance, render

__all__ = [
    "BIOTOOLS",
    "BIOTOOL_NAMES",
    "DOMAIN_TOOL_NAMES",
    "BioTool",
    "InvalidArgumentsError",
    "LiveBioTools",
    "Outcome",
    "RateLimiter",
    "Reply",
    "ServiceClient",
    "ServiceError",
    "envelope",
    "load_endpoints",
    "provenance",
    "render",
    "signatures",
    "utc_date",
]
