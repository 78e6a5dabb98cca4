"""The generator's errors, under the toolkit's (``generate.errors``)::

    InvalidInputError (exit 2)
    ├── KGDataError          a knowledge-graph file that does not parse (file:line)
    ├── KGEndpointError      the SPARQL endpoint does not answer the probe (nothing written)
    ├── ConfigError          a generator config that does not validate (file:line)
    └── AnnotationError      an annotation sheet that cannot be read or compared (file: reason)
    GenerateError (exit 1)
    └── SparqlError          a query that failed for good during a stage (tries exhausted,
                             a 4xx, a body that is not sparql-results+json)
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


__all__ = ["AnnotationError", "ConfigError", "KGDataError", "KGEndpointError", "SparqlError"]
