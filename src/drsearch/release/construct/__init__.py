"""DR-256's construction recipe as stages: an upstream pool of (question, answer, visited URLs,
search queries) rows → the inputs of a release (docs/CONSTRUCT.md).

Built so far: ``consolidate`` (merge repeated questions, drop conflicting labels), ``urls``
(the crawl's URL list), ``answers`` (independent answer documents), ``artifacts``
(leak-artifact candidates, and the check of a reviewer's blocklist against the answer
documents), ``audit`` (shortcut probes through the engine with the blocklist applied),
``questions`` (the audit's kept questions as the calibration rollouts' questions file, with
the frozen prompt from a template), ``calibrate`` (the toolkit's DR-256 tier rule over three
graded reference-agent rollouts, and their leak audit), ``select`` (the seeded per-tier
sample, assembled into a release with its ``selection/`` and ``audit/`` evidence and
validated ``--deep``). Each is a one-stage generation-toolkit pipeline in ``POOL/<stage>/``:
resumable, skipped when unchanged, every removal with a reason code, counts in
``POOL/summary.json``.
"""

from __future__ import annotations

from .answers import NO_ANSWER_DOC, find_answers
from .artifacts import URL_PATTERNS, check_blocklist, find_artifacts, read_url_patterns
from .audit import PROBES, audit_shortcuts
from .calibrate import EXCLUSION_CODES, TIERS, calibrate_tiers
from .consolidate import CONFLICTING_LABELS, FIELDS, consolidate, field_map, qid_of
from .leaks import LEAK_CODES, leak_audit
from .questions import DEFAULT_TEMPLATE, read_template, write_kept_questions
from .select import ShortTierError, select_release
from .urls import INVALID_URL, collect_urls
from .work import SUMMARY, write_summary

__all__ = [
    "CONFLICTING_LABELS",
    "DEFAULT_TEMPLATE",
    "EXCLUSION_CODES",
    "FIELDS",
    "INVALID_URL",
    "LEAK_CODES",
    "NO_ANSWER_DOC",
    "PROBES",
    "SUMMARY",
    "TIERS",
    "URL_PATTERNS",
    "ShortTierError",
    "audit_shortcuts",
    "calibrate_tiers",
    "check_blocklist",
    "collect_urls",
    "consolidate",
    "field_map",
    "find_answers",
    "find_artifacts",
    "leak_audit",
    "qid_of",
    "read_template",
    "read_url_patterns",
    "select_release",
    "write_kept_questions",
    "write_summary",
]
