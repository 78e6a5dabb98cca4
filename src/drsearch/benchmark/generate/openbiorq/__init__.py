"""An OpenBioRQ-style generator: open research questions from source documents, with
frozen checklist rubrics (docs/GENERATE.md, "OpenBioRQ-style pipeline").

Public API (pinned by tests/benchmark/generate/openbiorq/test_public_api.py)::

    read_sources(path, tracks) -> [Source]          SOURCES.jsonl, checked (file:line, exit 2)
    OpenBioRQSettings(sources=, base_url=, ...)    what the stages depend on
    build_pipeline(settings) -> Pipeline           extract, refine, audit, dedup, rubric, openness
    rubric_problems(criteria, vague_phrases)       the rubric rules (feedback for a redraft)

Run it with ``drsearch generate openbiorq STAGE OBRQ_DIR --sources FILE --base-url URL``.
"""

from __future__ import annotations

from .pipeline import (
           AUDIT_SAMPLE,
           GENERATOR,
           PUBLIC_APIS,
           STAGES,
           TAXONOMY,
           OpenBioRQSettings,
           build_pipeline,
)
from .replies import UnparseableReply
from .rubric import REDRAFTS, VAGUE_PHRASES, rubric_problems
from .sources import DEFAULT_TRACKS, ID_PREFIXES, Source, id_kind, read_sources

__all__ = ["AUDIT_SAMPLE", "DEFAULT_TRACKS", "GENERATOR", "ID_PREFIXES", "PUBLIC_APIS", "REDRAFTS", "STAGES",
           "TAXONOMY", "VAGUE_PHRASES", "OpenBioRQSettings", "Source", "UnparseableReply", "build_pipeline",
           "id_kind", "read_sources", "rubric_problems"]
