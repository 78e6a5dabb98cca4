"""DR-256 question rows and pinned release identities, re-exported for the release tooling.

The row model lives in :mod:`drsearch.benchmark.datasets.dr256` (the benchmark layer owns
datasets); ``validate``, ``release`` and ``manifest`` keep importing it from here.
"""

from __future__ import annotations

from ..benchmark.datasets.dr256 import (
    DR256_V1_1_0,
    PINNED_RELEASES,
    BenchmarkInfo,
    PinnedRelease,
    PromptMessage,
    QuestionMetadata,
    QuestionRow,
    QuestionSet,
    load_questions,
    normalise_question,
    pinned_for,
    pins_named,
    read_dr256,
)

__all__ = [
    "DR256_V1_1_0",
    "PINNED_RELEASES",
    "BenchmarkInfo",
    "PinnedRelease",
    "PromptMessage",
    "QuestionMetadata",
    "QuestionRow",
    "QuestionSet",
    "load_questions",
    "normalise_question",
    "pinned_for",
    "pins_named",
    "read_dr256",
]
