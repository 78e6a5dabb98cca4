"""Citation audit: which identifiers an answer cites, whether they exist, whether they support it.

- **Extraction** (:func:`extract_citations`): PMIDs (``PMID: 123``, PubMed URLs), NCT
  numbers, arXiv ids (``arXiv:2101.01234v2``, ``arXiv:hep-th/9901001``, ``arxiv.org/abs|pdf``
  links with or without a scheme, arXiv's own DOIs ``10.48550/arXiv.<id>``; normalised by
  :func:`arxiv_id`), DOIs (bare or as ``doi.org`` URLs), docids of our corpus (a configurable
  pattern) and any other http(s) URL (looked up in our corpus). Each citation keeps the
  line it appeared on as the claim it supports.
- **L1 existence** (:class:`CitationResolver`): a tristate ``found`` / ``notfound`` /
  ``transient``. Transient outcomes (timeouts, 429, 5xx) are retried a bounded number of
  times (drsearch.contract.retry's loop, waiting at least a resolver's ``Retry-After``, up
  to a minute) and, if still transient, left out of the existence rate, never counted as
  fabricated. :class:`CorpusResolver` opens docids and URLs through a
  :class:`~drsearch.index.Searcher`; :class:`HttpRecordResolver` fetches PMIDs, DOIs,
  NCT numbers and arXiv ids from URL templates over an injected httpx client (tests pass a double);
  :class:`RoutingResolver` sends each kind to its resolver.
- **L2 support**: a judge reads the cited record and says ``yes`` / ``partial`` / ``no``.
  A *wrong paper* is a citation that exists but does not support its claim.

:func:`citation_rates` sums checks into the rates reported in ``scores.json``.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol

import httpx

from ..contract import DrsearchError, Searcher
from ..contract.retry import GaveUp, RetryPolicy, TryAgain, parse_retry_after, retry
from .judges import JudgeParseError, JudgePrompt, LLMJudge, default_prompt, json_object
from .stats import wilson_interval

CitationKind = Literal["pmid", "nct", "arxiv", "doi", "docid", "url"]
CITATION_KINDS: tuple[CitationKind, ...] = ("pmid", "nct", "arxiv", "doi", "docid", "url")
Existence = Literal["found", "notfound", "transient"]
Support = Literal["yes", "partial", "no"]

DEFAULT_DOCID_PATTERN = r"\b(?:d|web)-[0-9a-f]{16}\b"
"""Docids of corpora built by drsearch (``d-``, also the bundled sample) and of older ``web-`` corpora."""

_URL = re.compile(r"https?://[^\s<>\"'`\]\[)(}{]+", re.I)
_PUBMED_URL = re.compile(r"^https?://(?:www\.)?(?:pubmed\.ncbi\.nlm\.nih\.gov|ncbi\.nlm\.nih\.gov/pubmed)/(\d{1,9})/?$",
                         re.I)
_DOI_URL = re.compile(r"^https?://(?:dx\.)?doi\.org/(10\.\d{4,9}/\S+)$", re.I)
_NCT = re.compile(r"\bNCT\d{8}\b", re.I)
_PMID = re.compile(r"\bPMID\s*:?\s*(\d{1,9})\b", re.I)
_DOI = re.compile(r"\b(10\.\d{4,9}/[^\s\"<>]+)")
_TRAILING = ".,;:!?'\""
# arXiv ids: new style YYMM.NNNN(N) since 2007-04; old style archive[.subject-class]/YYMMNNN before.
# Either may carry a version (v2). The subject class is not part of an old id (math.GT/0309136 and
# math/0309136 are one paper), so it is matched but dropped by arxiv_id().
_ARXIV_NEW = r"\d{4}\.\d{4,5}"
_ARXIV_OLD = r"[a-z]+(?:-[a-z]+)?(?:\.[a-z-]{2,})?/\d{7}"
_ARXIV_BODY = rf"(?:{_ARXIV_NEW}|{_ARXIV_OLD})(?:v\d+)?"
_ARXIV_ID = rf"{_ARXIV_BODY}(?![\w/])"
"""An id in running text: not the head of a longer token (2101.012345, 2101.01234x)."""
_ARXIV_SHAPE = re.compile(rf"(?:(?P<new>{_ARXIV_NEW})|(?P<archive>[a-z]+(?:-[a-z]+)?)(?:\.[a-z-]{{2,}})?"
                          r"/(?P<number>\d{7}))(?:v\d+)?", re.I)
_ARXIV = re.compile(r"\barxiv\s*:?\s*(" + _ARXIV_ID + r")"
                    r"|\b(?:www\.|export\.)?arxiv\.org/(?:abs|pdf|html)/(" + _ARXIV_ID + r")", re.I)
_ARXIV_URL = re.compile(r"^https?://(?:www\.|export\.)?arxiv\.org/(?:abs|pdf|html)/(" + _ARXIV_BODY +
                        r")(?:\.pdf)?/?(?:[?#]\S*)?$", re.I)
_ARXIV_DOI = re.compile(r"10\.48550/arxiv\.(" + _ARXIV_ID + r")[)\].,;:!?'\"]*$", re.I)
"""arXiv's own (DataCite) DOIs name the arXiv paper: they are arxiv citations, not DOIs."""
NOTFOUND_STATUSES = frozenset({400, 404, 410, 422})
"""HTTP statuses of a record service that mean the identifier does not resolve."""


@dataclass(frozen=True, slots=True)
class Citation:
    """One cited identifier, normalised (``NCT`` upper-case, DOI lower-case, arXiv by
    :func:`arxiv_id`), and its claim."""

    kind: CitationKind
    value: str
    claim: str


def _trim(text: str) -> str:
    return text.rstrip(_TRAILING)


def arxiv_id(text: str) -> str | None:
    """The canonical form of an arXiv id, or None when ``text`` is not one.

    The version suffix is dropped (``2101.01234v3`` → ``2101.01234``: a citation names the
    paper, not a revision); an old-style id keeps its archive in lower case and loses its
    subject class (``HEP-TH/9901001`` → ``hep-th/9901001``, ``math.GT/0309136`` →
    ``math/0309136``, the form arXiv itself resolves). Extraction and the behaviour metrics'
    source ids (``arXiv:<id>``) both normalise through here, so they compare equal.
    """
    m = _ARXIV_SHAPE.fullmatch(text.strip())
    if m is None:
        return None
    if m.group("new") is not None:
        return m.group("new")
    return f"{m.group('archive').lower()}/{m.group('number')}"


def _doi(value: str) -> tuple[CitationKind, str]:
    """A DOI citation, or an arxiv one for arXiv's own DOIs (the same paper as ``arXiv:<id>``)."""
    value = _trim(value)
    if (m := _ARXIV_DOI.match(value)) and (arxiv := arxiv_id(m.group(1))):
        return "arxiv", arxiv
    return "doi", value.casefold()


def _claim_at(answer: str, start: int, limit: int = 600) -> str:
    line_start = answer.rfind("\n", 0, start) + 1
    line_end = answer.find("\n", start)
    line = answer[line_start: len(answer) if line_end < 0 else line_end].strip()
    return line[:limit]


def _from_url(url: str) -> tuple[CitationKind, str]:
    if m := _PUBMED_URL.match(url):
        return "pmid", m.group(1)
    if (m := _ARXIV_URL.match(url)) and (arxiv := arxiv_id(m.group(1))):
        return "arxiv", arxiv
    if m := _DOI_URL.match(url):
        return _doi(m.group(1))
    if m := _NCT.search(url):
        return "nct", m.group(0).upper()
    return "url", url


def extract_citations(answer: str, docid_pattern: str = DEFAULT_DOCID_PATTERN) -> list[Citation]:
    """Every distinct identifier cited in ``answer``, in order of first appearance.

    URLs are found first; identifiers inside a URL are not counted again. Trailing
    punctuation is stripped from URLs and DOIs. An arXiv id is one citation whatever its
    form (``arXiv:`` text, an arxiv.org link, an arXiv DOI) or version: duplicates (same
    kind and normalised value) keep the first claim.
    """
    found: list[tuple[int, CitationKind, str]] = []
    taken: list[tuple[int, int]] = []
    for m in _URL.finditer(answer):
        url = _trim(m.group(0))
        taken.append((m.start(), m.start() + len(url)))
        found.append((m.start(), *_from_url(url)))

    def free(m: re.Match[str]) -> bool:
        return not any(a <= m.start() < b for a, b in taken)

    def arxiv(m: re.Match[str]) -> tuple[CitationKind, str] | None:
        value = arxiv_id(m.group(1) or m.group(2))
        return None if value is None else ("arxiv", value)

    patterns: list[tuple[re.Pattern[str], Callable[[re.Match[str]], tuple[CitationKind, str] | None]]] = [
        (_PMID, lambda m: ("pmid", m.group(1))),
        (_NCT, lambda m: ("nct", m.group(0).upper())),
        (_ARXIV, arxiv),
        (_DOI, lambda m: _doi(m.group(1))),
        (re.compile(docid_pattern), lambda m: ("docid", m.group(0))),
    ]
    for pattern, cite in patterns:
        for m in pattern.finditer(answer):
            if free(m) and (c := cite(m)) is not None:
                found.append((m.start(), *c))
    seen: set[tuple[str, str]] = set()
    out = []
    for start, kind, value in sorted(found, key=lambda f: f[0]):
        if (kind, value) not in seen:
            seen.add((kind, value))
            out.append(Citation(kind, value, _claim_at(answer, start)))
    return out


# -- L1: existence ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Resolution:
    """An existence check: ``found`` with the record's text, ``notfound``, or ``transient``.

    ``retry`` False marks a transient outcome that asking again cannot change (no resolver
    for that kind of identifier): it is not retried, and still left out of the rate.
    ``retry_after_s`` is the server's ``Retry-After``, when a transient answer carried one.
    """

    status: Existence
    record: str | None = None
    detail: str = ""
    retry: bool = True
    retry_after_s: float | None = None


class CitationResolver(Protocol):
    """Looks a citation up; must not raise for a network problem (answer ``transient``)."""

    def resolve(self, citation: Citation) -> Resolution:
        ...


class CorpusResolver:
    """Docids and URLs of our corpus, opened through a :class:`~drsearch.index.Searcher`.

    An unknown (or blocked) document is ``notfound``; any other error answer is
    ``transient``. The record is the title and the first ``max_chars`` of the text.
    """

    def __init__(self, searcher: Searcher, max_chars: int = 8000) -> None:
        self._searcher = searcher
        self._max_chars = max_chars

    def resolve(self, citation: Citation) -> Resolution:
        if citation.kind not in ("docid", "url"):
            return Resolution("transient", detail=f"the corpus cannot resolve a {citation.kind}", retry=False)
        key = {"docid": citation.value, "url": None} if citation.kind == "docid" else \
            {"docid": None, "url": citation.value}
        try:
            r = self._searcher.open(**key, offset=0, length=self._max_chars)
            body = json.loads(r.body)
        except (DrsearchError, ValueError) as e:  # a backend that cannot answer at all: try again later
            return Resolution("transient", detail=f"{e.__class__.__name__}: {e}")
        if r.ok:
            return Resolution("found", f"{body.get('title', '')}\n\n{body.get('text', '')}",
                              str(body.get("docid", "")))
        err = body.get("error", {}) if isinstance(body, dict) else {}
        status: Existence = "notfound" if err.get("type") in ("not_found", "invalid_request") else "transient"
        return Resolution(status, detail=str(err.get("message", "")))


class HttpRecordResolver:
    """PMIDs, DOIs, NCT numbers, arXiv ids fetched from ``templates[kind].format(id=value)``.

    HTTP 200 = ``found`` (the body, cut to ``max_chars``, is the record); 404 and 410 (no
    such record), 400 and 422 (a malformed identifier) = ``notfound``; every other outcome
    (429, 5xx, 401/403 from a rate limiter or a login wall, timeouts, connection errors)
    says nothing about the record and is ``transient``. The caller owns the client.
    """

    def __init__(self, client: httpx.Client, templates: Mapping[str, str], max_chars: int = 8000) -> None:
        self._client = client
        self._templates = dict(templates)
        self._max_chars = max_chars

    def resolve(self, citation: Citation) -> Resolution:
        template = self._templates.get(citation.kind)
        if template is None:
            return Resolution("transient", detail=f"no resolver for {citation.kind}", retry=False)
        try:
            r = self._client.get(template.format(id=citation.value))
        except httpx.HTTPError as e:
            return Resolution("transient", detail=f"{e.__class__.__name__}: {e}")
        if r.status_code == 200:
            return Resolution("found", r.text[: self._max_chars])
        if r.status_code in NOTFOUND_STATUSES:
            return Resolution("notfound", detail=f"HTTP {r.status_code}")
        return Resolution("transient", detail=f"HTTP {r.status_code}",
                          retry_after_s=parse_retry_after(r.headers.get("retry-after")))


class RoutingResolver:
    """Each citation kind to its resolver; a kind without one is ``transient`` (not judged)."""

    def __init__(self, routes: Mapping[str, CitationResolver]) -> None:
        self._routes = dict(routes)

    def resolve(self, citation: Citation) -> Resolution:
        resolver = self._routes.get(citation.kind)
        if resolver is None:
            return Resolution("transient", detail=f"no resolver for {citation.kind}", retry=False)
        return resolver.resolve(citation)


# -- L2: support --------------------------------------------------------------------------


def parse_support(content: str) -> dict[str, Any]:
    """``{support: yes|partial|no, reasoning}`` from a citation-support reply."""
    obj = json_object(content)
    support = str(obj.get("support", "")).strip().casefold()
    if support not in ("yes", "partial", "no"):
        raise JudgeParseError(f"support must be yes, partial or no, got {obj.get('support')!r}")
    return {"reasoning": str(obj.get("reasoning") or ""), "support": support}


class SupportJudge:
    """Asks a judge whether a cited record supports the claim citing it."""

    def __init__(self, llm: LLMJudge, prompt: JudgePrompt | None = None) -> None:
        self.llm = llm
        self.prompt = prompt or default_prompt("citation_support")

    def describe(self) -> dict[str, str]:
        """Model, prompt and prompt SHA-256: stored with every support verdict."""
        return {"model": self.llm.settings.model, "prompt": self.prompt.name,
                "prompt_sha256": self.prompt.sha256}

    def judge(self, citation: Citation, record: str) -> tuple[Support | None, str | None]:
        """``(support, None)``, or ``(None, why)`` when the judge failed."""
        reply = self.llm.ask(self.prompt, {"identifier": f"{citation.kind}:{citation.value}"},
                             {"record": record, "response": citation.claim}, parse_support,
                             f"support of {citation.kind}:{citation.value}")
        if not reply.ok:
            return None, reply.error
        support: Support = reply.parsed["support"]
        return support, None


# -- the audit ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CitationCheck:
    """One audited citation: existence, support (None when not judged) and tries made."""

    kind: CitationKind
    value: str
    existence: Existence
    support: Support | None
    attempts: int
    detail: str = ""
    support_judge: Mapping[str, str] | None = None
    """Model, prompt and prompt SHA-256 of the support verdict (None when none was asked)."""
    no_resolver: bool = False
    """Transient because nothing resolves this kind (no ``--record-url`` for it, no corpus):
    counted apart in :func:`citation_rates` so a missing resolver is never taken for a flaky one."""

    @property
    def wrong_paper(self) -> bool:
        return self.existence == "found" and self.support == "no"

    def as_dict(self) -> dict[str, Any]:
        return {"attempts": self.attempts, "detail": self.detail, "existence": self.existence,
                "kind": self.kind, "support": self.support,
                "no_resolver": self.no_resolver,
                "support_judge": None if self.support_judge is None else dict(self.support_judge),
                "value": self.value, "wrong_paper": self.wrong_paper}


RESOLVE_RETRY = RetryPolicy(max_attempts=3, backoff_s=0.5, backoff_max_s=math.inf, retry_after_max_s=60.0,
                            timeout_s=30.0)
"""Existence checks' retries (no cap on the exponential: a few tries at most; a resolver's
``Retry-After`` honoured up to a minute) and each record request's time limit."""


class _Transient(TryAgain):
    """A transient resolution, carried through the retry loop."""

    def __init__(self, resolution: Resolution) -> None:
        super().__init__(resolution.detail or "transient", resolution.retry_after_s)
        self.resolution = resolution


class CitationAuditor:
    """Extracts, resolves (retrying transient outcomes) and judges support."""

    def __init__(self, resolver: CitationResolver, support: SupportJudge | None = None, *,
                 max_attempts: int = 3, backoff_s: float = 0.5, docid_pattern: str = DEFAULT_DOCID_PATTERN,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.resolver = resolver
        self.support = support
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.retry = replace(RESOLVE_RETRY, max_attempts=max_attempts, backoff_s=backoff_s)
        self.docid_pattern = docid_pattern
        self._sleep = sleep

    def _resolve(self, citation: Citation) -> tuple[Resolution, int]:
        def attempt(n: int) -> tuple[Resolution, int]:
            resolution = self.resolver.resolve(citation)
            if resolution.status == "transient" and resolution.retry:
                raise _Transient(resolution)
            return resolution, n

        try:
            return retry(attempt, self.retry, sleep=self._sleep)
        except GaveUp as e:
            assert isinstance(e.last, _Transient)
            return e.last.resolution, e.attempts

    def check(self, citation: Citation) -> CitationCheck:
        resolution, attempts = self._resolve(citation)
        support: Support | None = None
        detail = resolution.detail
        judge = None
        if resolution.status == "found" and self.support is not None:
            support, why = self.support.judge(citation, resolution.record or "")
            detail = why or detail
            judge = self.support.describe()
        return CitationCheck(citation.kind, citation.value, resolution.status, support, attempts, detail,
                             judge, no_resolver=resolution.status == "transient" and not resolution.retry)

    def audit(self, answer: str | None) -> list[CitationCheck]:
        """Every citation of ``answer`` checked (an empty answer cites nothing)."""
        if not answer:
            return []
        return [self.check(c) for c in extract_citations(answer, self.docid_pattern)]


def _rate(count: int, n: int) -> dict[str, Any]:
    low, high = wilson_interval(count, n)
    return {"ci": [round(low, 6), round(high, 6)], "count": count, "n": n,
            "rate": None if n == 0 else round(count / n, 6)}


def citation_rates(checks: Iterable[CitationCheck | Mapping[str, Any]]) -> dict[str, Any]:
    """Counts and rates over audited citations (dicts as stored, or :class:`CitationCheck`).

    ``existence``: found / (found + notfound), transient left out. ``no_resolver``: by
    kind, the transient citations that no resolver could look up (a part of
    ``existence.transient``). ``support``: yes, partial and ``wrong_paper`` (found and
    support no) over the found citations whose support was judged. Every rate carries a
    Wilson 95% interval.
    """
    rows = [c.as_dict() if isinstance(c, CitationCheck) else dict(c) for c in checks]
    existence = {s: sum(r["existence"] == s for r in rows) for s in ("found", "notfound", "transient")}
    judged = [r for r in rows if r["existence"] == "found" and r["support"] is not None]
    support = {s: sum(r["support"] == s for r in judged) for s in ("yes", "partial", "no")}
    by_kind = {k: sum(r["kind"] == k for r in rows) for k in CITATION_KINDS}
    no_resolver = {k: sum(r["kind"] == k and bool(r.get("no_resolver")) for r in rows)
                   for k in CITATION_KINDS}
    checked = existence["found"] + existence["notfound"]
    return {
        "by_kind": by_kind,
        "cited": len(rows),
        "existence": {**existence, "rate": _rate(existence["found"], checked)},
        "no_resolver": no_resolver,
        "support": {**support, "judged": len(judged), "unjudged_found": existence["found"] - len(judged),
                    "rate_yes": _rate(support["yes"], len(judged)),
                    "rate_partial": _rate(support["partial"], len(judged))},
        "wrong_paper": _rate(support["no"], len(judged)),
    }


def rates_of_graded(judge_records: Sequence[Mapping[str, Any] | None]) -> dict[str, Any]:
    """:func:`citation_rates` over the ``citations`` lists stored in graded questions' judge records."""
    return citation_rates(c for rec in judge_records if rec for c in rec.get("citations") or ())


__all__ = [
    "CITATION_KINDS",
    "DEFAULT_DOCID_PATTERN",
    "NOTFOUND_STATUSES",
    "Citation",
    "CitationAuditor",
    "CitationCheck",
    "CitationKind",
    "CitationResolver",
    "CorpusResolver",
    "Existence",
    "HttpRecordResolver",
    "Resolution",
    "RoutingResolver",
    "Support",
    "SupportJudge",
    "arxiv_id",
    "citation_rates",
    "extract_citations",
    "parse_support",
    "rates_of_graded",
]
