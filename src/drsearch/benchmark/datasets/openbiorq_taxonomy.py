"""OpenBioRQ's classification: the 12 level-one biomedical domains and the four tracks.

The paper (OpenBioRQ, §3.1, §3.3, Appendix C.5 / Table 7) labels every question with one of
12 level-one taxonomy domains and records the track it came from, "because the track is why
I call it open". Its text names seven of the twelve domains (Clinical Medicine, Neuroscience,
Oncology, Infectious Disease, Medical AI & Informatics, Surgical Sciences, Genomics); Table 7's
rows are not in the text, so the other five here are drsearch's choice, marked
``named_by_paper: False`` in :data:`DOMAINS` and listed as such in docs/GENERATE.md.

The question-type list drsearch used before (efficacy, safety, mechanism, …) stays available
as :data:`QUESTION_TYPES` (``--taxonomy question-types``), as do the earlier tracks
(:data:`LEGACY_TRACKS`, ``--tracks clinical,translational,computational``).
"""

from __future__ import annotations

from typing import NamedTuple


class Domain(NamedTuple):
    """One level-one domain: its label (what the refiner writes), display name and origin."""

    label: str
    name: str
    named_by_paper: bool


DOMAINS: tuple[Domain, ...] = (
    Domain("clinical_medicine", "Clinical Medicine", True),
    Domain("oncology", "Oncology", True),
    Domain("neuroscience", "Neuroscience", True),
    Domain("infectious_disease", "Infectious Disease", True),
    Domain("genomics", "Genomics", True),
    Domain("surgical_sciences", "Surgical Sciences", True),
    Domain("medical_ai_informatics", "Medical AI & Informatics", True),
    Domain("cardiovascular", "Cardiovascular Medicine", False),
    Domain("immunology", "Immunology", False),
    Domain("pharmacology", "Pharmacology & Therapeutics", False),
    Domain("public_health", "Public Health & Epidemiology", False),
    Domain("mental_health", "Psychiatry & Mental Health", False),
)
"""The 12 level-one domains, in report order (the paper's seven first)."""

DOMAIN_LABELS: tuple[str, ...] = tuple(d.label for d in DOMAINS)
"""The default taxonomy of the refine stage."""

QUESTION_TYPES: tuple[str, ...] = ("efficacy", "safety", "mechanism", "diagnosis", "prognosis",
                                   "epidemiology", "prevention", "implementation", "health_economics",
                                   "methodology", "computational_modelling", "other")
"""The earlier 12-class question-type taxonomy (``--taxonomy question-types``)."""

TAXONOMIES: dict[str, tuple[str, ...]] = {"domains": DOMAIN_LABELS, "question-types": QUESTION_TYPES}
"""Built-in taxonomies by the name ``--taxonomy`` accepts (a JSON file gives any other)."""


class Track(NamedTuple):
    """One track: its name and why its questions are open (the paper's §3.1)."""

    name: str
    why_open: str


TRACKS: tuple[Track, ...] = (
    Track("retrieval_verified", "real follow-up evidence says so: sources from PubMed, trial registries and "
                                "arXiv, re-judged against their citing papers and registry records"),
    Track("expert_consensus", "an authoritative body has declared it open: JLA Priority Setting Partnerships "
                              "and NICE research recommendations"),
    Track("priority_setting", "it is on a research agenda: society agendas and WHO/CHNRI/NASEM/PCORI and "
                              "Delphi priority-setting documents (via Europe PMC)"),
    Track("expand", "systematic reviews name it a research gap: the Cochrane research-gap literature"),
)
"""The four tracks, in dedup order (the base corpus first, then the two additional tracks)."""

TRACK_NAMES: tuple[str, ...] = tuple(t.name for t in TRACKS)
"""The default tracks of a sources file."""

LEGACY_TRACKS: tuple[str, ...] = ("clinical", "translational", "computational")
"""The tracks drsearch used before (``--tracks clinical,translational,computational``)."""


def domain_name(label: str) -> str:
    """The display name of a domain label; any other label (a custom taxonomy's) as it is."""
    return next((d.name for d in DOMAINS if d.label == label), label)


__all__ = ["DOMAINS", "DOMAIN_LABELS", "LEGACY_TRACKS", "QUESTION_TYPES", "TAXONOMIES", "TRACKS",
           "TRACK_NAMES", "Domain", "Track", "domain_name"]
