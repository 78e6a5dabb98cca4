"""The errors of the generation toolkit, under the project's one hierarchy::

    DrsearchError (drsearch.index)
    ├── InvalidInputError (exit 2)
    │   └── PipelineInputError   a pipeline that cannot start: unknown --until stage, a missing
    │                            input file, stages that do not fit together
    └── GenerateError (exit 1)   a stage could not finish (an LLM call failed for good); the
                                 items it finished are kept and a rerun resumes from them

A replay miss is the agents layer's ReplayMissError (exit 1), raised as is: it names the call.
"""

from __future__ import annotations

from ...contract import DrsearchError, InvalidInputError


class PipelineInputError(InvalidInputError):
    """Bad input to a pipeline, found before any stage runs (nothing is written)."""

    error_type = "invalid_pipeline_input"


class GenerateError(DrsearchError):
    """A stage failed; what it finished stays in its journal for the rerun."""

    exit_code = 1
    error_type = "generate_error"


__all__ = ["GenerateError", "PipelineInputError"]
