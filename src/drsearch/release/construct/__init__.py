"""DR-256's construction recipe as stages: an upstream pool of (question, answer, visited URLs,
search queries) rows → the inputs of a release (docs/CONSTRUCT.md).

Built so far: ``consolidate`` (merge repeated questions, drop conflicting labels), ``urls``
(the crawl's URL list), ``answers`` (independent answer documents), ``artifacts``
(leak-artifact candidates, and the check of a reviewer's blocklist against the answer
documents), ``audit`` (shortcut probes through the engine with the blocklist applied),
``calibrate`` (the toolkit's DR-256 tier rule over three graded reference-agent rollouts).
Each is a one-stage generation-toolkit pipeline in ``POOL/<stage>/``: resumable,
skipped when unchanged, every removal with a reason code, counts in ``POOL/summary.json``.
Not built yet: the selection stage of docs/CONSTRUCT.md.
"""

from __future__ import annotations

from .answers import NO_ANSWER_DOC, find_answers
from .artifacts import URL_PATTERNS, check_blocklist, find_artifacts, read_url_patterns
from .audit import PROBES, audit_shortcuts
from .calibrate import EXCLUSION_CODES, TIERS, calibrate_tiers
from .consolidate import CONFLICTING_LABELS, FIELDS, consolidate, field_map, qid_of
from .urls import INVALID_URL, collect_urls
from .work import SUMMARY, write_summary

__all__ = [
    "CONFLICTING_LABELS",
    "EXCLUSION_CODES",
    "FIELDS",
    "INVALID_URL",
    "NO_ANSWER_DOC",
    "PROBES",
    "SUMMARY",
    "TIERS",
    "URL_PATTERNS",
    "audit_shortcuts",
    "calibrate_tiers",
    "check_blocklist",
    "collect_urls",
    "consolidate",
    "field_map",
    "find_answers",
    "find_artifacts",
    "qid_of",
    "read_url_patterns",
    "write_summary",
]
