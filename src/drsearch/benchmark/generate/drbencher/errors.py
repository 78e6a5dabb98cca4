"""The generator's errors, under the toolkit's (``generate.errors``)::

    InvalidInputError (exit 2)
    ├── KGDataError          a knowledge-graph file that does not parse (file:line)
    ├── KGEndpointError      the SPARQL endpoint does not answer the probe (nothing written)
    ├── ConfigError          a generator config that does not validate (file:line)
    ├── AnnotationError      an annotation sheet that cannot be read or compared (file: reason)
    └── DomainAPIUnreachableError  a domain API (PubChem, SEC, NVD, ...) that does not answer
                             its probe with JSON (down, rate-limiting past the retries,
                             HTML): nothing written
    GenerateError (exit 1)
    ├── SparqlError          a query that failed for good during a stage (tries exhausted,
    │                        a 4xx, a body that is not sparql-results+json)
    └── DomainAPIError       a domain API call that failed for good during a stage (the
                             stage stops; finished stages and items are kept)
"""

from __future__ import annotations

from ....contract import InvalidInputError
from ..errors import GenerateError


class KGDataError(InvalidInputError):
    error_type = "invalid_kg_data"


class KGEndpointError(InvalidInputError):
    error_type = "kg_endpoint_unreachable"


class ConfigError(InvalidInputError):
    error_type = "invalid_generator_config"


class AnnotationError(InvalidInputError):
    error_type = "invalid_annotation_sheet"


class SparqlError(GenerateError):
    error_type = "sparql_error"


class DomainAPIUnreachableError(InvalidInputError):
    error_type = "domain_api_unreachable"


class DomainAPIError(GenerateError):
    error_type = "domain_api_error"


__all__ = ["AnnotationError", "ConfigError", "DomainAPIError", "DomainAPIUnreachableError", "KGDataError",
           "KGEndpointError", "SparqlError"]
