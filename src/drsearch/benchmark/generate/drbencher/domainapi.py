"""The domain APIs of the paper's biochemistry, financial and security domains, and what the
templates read from them.

The paper's five domains share one pipeline; they differ in their entry point (how a
domain identifier becomes an entity) and where a quantitative property comes from. For
geophysical and history topics every value is a Wikidata statement; for the other three
the values are the authoritative registries' (Appendix: "Domain APIs"):

=============  ======================================  =========================================
domain         entry point (identifier)                 values
=============  ======================================  =========================================
biochemistry   PubChem CID, UniProt accession           PubChem PUG-REST compound properties
                                                        (molecular weight, heavy atoms); UniProt
                                                        REST sequence (length, mass)
financial      ticker → CIK (SEC ``company_tickers``)   SEC XBRL ``companyfacts``: annual revenue
                                                        and net income (10-K, 12-month periods)
security       CVE ID                                   NVD CVE API 2.0 (CVSS v3.1 base score,
                                                        publication date), FIRST EPSS
                                                        (probability), CISA KEV (date added, due
                                                        date)
=============  ======================================  =========================================

Every request goes through the biomedical tools' polite client
(:class:`drsearch.biotools.http.ServiceClient`: a per-service rate limit shared by the
run's threads, retries with ``Retry-After`` on 408/429/5xx, timeouts, and a refusal of an
HTML page or a body that is not JSON) and through the generator's replay cache (kind
``domain``, keyed by service, base URL, path and query), so a recorded generation replays
offline byte for byte. A 404 in the service's own format is an answer (the record does not
exist: a counted rejection); a service that cannot answer is :class:`DomainAPIError`.

The extraction functions are pure: JSON in, property values out (:data:`DOMAIN_PROPERTIES`).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ....biotools import LiveBioTools
from ....biotools.errors import ServiceError
from ....biotools.http import RateLimiter, ServiceClient
from ....contract import check_http_url
from ....contract.retry import RetryPolicy
from .errors import DomainAPIError, DomainAPIUnreachableError
from .properties import Property

Fetch = Callable[[str, Any, str, Callable[[], tuple[bool, bytes]]], tuple[bool, bytes]]
"""``fetch(kind, key, describe, live)``: a call through the replay cache (``StageContext.fetch``)."""

DOMAIN_PROPERTIES: dict[str, Property] = {p.pid: p for p in (
    Property("pubchem:molecular_weight", "molecular weight (PubChem)", "quantity", "g/mol"),
    Property("pubchem:heavy_atom_count", "heavy atom count (PubChem)", "quantity", "atoms"),
    Property("uniprot:length", "sequence length (UniProt)", "quantity", "residues"),
    Property("uniprot:mass", "sequence mass (UniProt)", "quantity", "Da"),
    Property("sec:fiscal_year", "latest fiscal year with an annual report (SEC XBRL)", "quantity", "year"),
    Property("sec:revenue_fy0", "revenue in the latest fiscal year (SEC XBRL)", "quantity", "USD"),
    Property("sec:revenue_fy2", "revenue two fiscal years before the latest (SEC XBRL)", "quantity", "USD"),
    Property("sec:net_income_fy0", "net income in the latest fiscal year (SEC XBRL)", "quantity", "USD"),
    Property("nvd:base_score", "CVSS v3.1 base score (NVD)", "quantity", "points"),
    Property("nvd:published", "publication date (NVD)", "date", "day"),
    Property("epss:probability", "EPSS exploitation probability (FIRST)", "quantity", "probability"),
    Property("kev:date_added", "date added to the KEV catalog (CISA)", "date", "day"),
    Property("kev:due_date", "remediation due date (CISA KEV)", "date", "day"),
)}
"""The domain APIs' properties by key (``service:name``), as templates read them."""

API_DOMAINS = ("biochemistry", "financial", "security")
ENTRY_KINDS: dict[str, tuple[str, ...]] = {
    "biochemistry": ("pubchem_cid", "uniprot_accession"),
    "financial": ("ticker",),
    "security": ("cve",),
}
"""The identifiers each API domain's topics start from."""

WIKIDATA_ID_PROPERTY = {"pubchem_cid": "P662", "uniprot_accession": "P352", "cik": "P5531", "cve": "P3587"}
"""The Wikidata external-id property that maps an identifier to its entity (QID)."""

_PATTERNS = {
    "pubchem_cid": re.compile(r"^[1-9][0-9]{0,11}$"),
    "uniprot_accession": re.compile(  # UniProt's documented accession format
        r"^[OPQ][0-9][A-Z0-9]{3}[0-9]$|^[A-NR-Z][0-9](?:[A-Z][A-Z0-9]{2}[0-9]){1,2}$"),
    "ticker": re.compile(r"^[A-Z][A-Z0-9.\-]{0,9}$"),
    "cve": re.compile(r"^CVE-[0-9]{4}-[0-9]{4,7}$"),
}


def check_identifier(kind: str, value: str) -> str:
    """``value`` if it is a well-formed ``kind`` identifier (ids are put into URL paths)."""
    if not _PATTERNS[kind].fullmatch(value):
        raise ValueError(f"{value!r} is not a {kind.replace('_', ' ')}")
    return value


class Service(BaseModel):
    """One public API: where it is and how often it may be asked."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    base_url: str
    rate_per_s: float = Field(gt=0, le=50)

    @field_validator("base_url")
    @classmethod
    def _url(cls, url: str) -> str:
        checked = check_http_url(url)
        assert checked is not None
        return checked.rstrip("/")


class DomainAPISettings(BaseModel):
    """The config's ``domain_apis``: each service's base URL and polite rate (the defaults are
    the public services and their documented limits: NVD 5 requests per 30 s without a key,
    SEC 10 per second, PubChem 5 per second), the ``User-Agent`` (SEC asks for a contact),
    the per-request timeout and the retries."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    pubchem: Service = Service(base_url="https://pubchem.ncbi.nlm.nih.gov", rate_per_s=5)
    uniprot: Service = Service(base_url="https://rest.uniprot.org", rate_per_s=5)
    sec_files: Service = Service(base_url="https://www.sec.gov", rate_per_s=5)
    sec_data: Service = Service(base_url="https://data.sec.gov", rate_per_s=5)
    nvd: Service = Service(base_url="https://services.nvd.nist.gov", rate_per_s=5 / 30)
    epss: Service = Service(base_url="https://api.first.org", rate_per_s=5)
    kev: Service = Service(base_url="https://www.cisa.gov", rate_per_s=1)
    user_agent: str = Field(default="drsearch-drbencher (research benchmark generator)", min_length=1)
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    max_attempts: int = Field(default=4, ge=1, le=20)


PATHS = {
    "pubchem": "/rest/pug/compound/cid/{id}/property/MolecularWeight,HeavyAtomCount/JSON",
    "uniprot": "/uniprotkb/{id}",
    "sec_files": "/files/company_tickers.json",
    "sec_data": "/api/xbrl/companyfacts/CIK{id}.json",
    "nvd": "/rest/json/cves/2.0",
    "epss": "/data/v1/epss",
    "kev": "/sites/default/files/feeds/known_exploited_vulnerabilities.json",
}
"""Each service's documented path (``{id}``: the identifier)."""

SERVICES_OF: dict[str, tuple[str, ...]] = {
    "pubchem_cid": ("pubchem",), "uniprot_accession": ("uniprot",), "ticker": ("sec_files", "sec_data"),
    "cve": ("nvd", "epss", "kev")}
"""The services an identifier kind asks (what ``build`` probes)."""


ENTRY_TOOLS: dict[str, tuple[str, ...]] = {
    "pubchem_cid": ("pubchem",), "uniprot_accession": ("uniprot",), "ticker": ("sec_tickers", "sec_xbrl"),
    "cve": ("nvd", "epss", "cisa_kev")}
"""The agent tools (:data:`drsearch.biotools.BIOTOOLS`) V2 offers for an identifier kind."""

TOOL_SERVICE = {"pubchem": "pubchem", "uniprot": "uniprot", "sec_tickers": "sec_files",
                "sec_xbrl": "sec_data", "nvd": "nvd", "epss": "epss", "cisa_kev": "kev"}
"""The ``domain_apis`` service whose base URL each of those tools asks."""


def agent_tools(kinds: set[str], settings: DomainAPISettings) -> dict[str, str]:
    """``{tool: base URL}`` of the agent tools for the identifier ``kinds`` a config's topics
    start from, at the config's ``domain_apis`` (the same servers the generator read)."""
    tools = sorted({t for k in kinds for t in ENTRY_TOOLS[k]})
    return {t: getattr(settings, TOOL_SERVICE[t]).base_url for t in tools}


def agent_services(tools: Mapping[str, str], settings: DomainAPISettings,
                   sleep: Callable[[float], object] = time.sleep) -> LiveBioTools:
    """The live callers of V2's domain ``tools`` (:func:`agent_tools`) with the politeness the
    generator's own clients use: each tool at its service's ``rate_per_s``, the config's
    ``User-Agent``, timeout and retries (a loopback stand-in included: the config says how fast)."""
    rates = {t: float(getattr(settings, TOOL_SERVICE[t]).rate_per_s) for t in tools}
    policy = RetryPolicy(max_attempts=settings.max_attempts, backoff_s=1.0, backoff_max_s=30.0,
                         timeout_s=settings.timeout_s)
    return LiveBioTools(dict(tools), rates=rates, user_agent=settings.user_agent, policy=policy, sleep=sleep)


class DomainAPI:
    """The domain services of one run, each a polite :class:`ServiceClient` made on first use
    (``fetch``: the replay cache; ``live`` False: replay, no client is ever made)."""

    def __init__(self, settings: DomainAPISettings, fetch: Fetch, live: bool = True,
                 limiters: dict[str, RateLimiter] | None = None) -> None:
        self.settings, self._fetch, self._live = settings, fetch, live
        self._clients: dict[str, ServiceClient] = {}
        self._limiters = limiters if limiters is not None else {}

    def close(self) -> None:
        for c in self._clients.values():
            c.close()
        self._clients.clear()

    def _client(self, service: str) -> ServiceClient:
        if service not in self._clients:
            s: Service = getattr(self.settings, service)
            limiter = self._limiters.setdefault(service, RateLimiter(s.rate_per_s))
            policy = RetryPolicy(max_attempts=self.settings.max_attempts, backoff_s=1.0, backoff_max_s=30.0,
                                 timeout_s=self.settings.timeout_s)
            self._clients[service] = ServiceClient(service, s.base_url, s.rate_per_s, policy=policy,
                                                   limiter=limiter, user_agent=self.settings.user_agent)
        return self._clients[service]

    def get(self, service: str, path: str, params: Mapping[str, str] | None = None) -> tuple[bool, Any]:
        """``(ok, parsed JSON)`` of ``GET base_url+path?params`` through the replay cache; a 4xx
        in the service's own format is ``(False, body)``; DomainAPIError when it cannot answer."""
        s: Service = getattr(self.settings, service)
        query = dict(sorted((params or {}).items()))
        key = [service, s.base_url, path, query]

        def live() -> tuple[bool, bytes]:
            try:
                reply = self._client(service).request("GET", path, "json", params=query or None)
            except ServiceError as e:
                raise DomainAPIError(str(e)) from None
            if not reply.ok and "json" not in reply.content_type:
                if reply.status in (404, 410):  # no such record, in plain text (EDGAR: NoSuchKey)
                    return False, b"null"
                raise DomainAPIError(f"{service} GET {path}: HTTP {reply.status} answered "
                                     f"{reply.content_type or 'no content type'}, not JSON")
            return reply.ok, reply.text.encode("utf-8")

        ok, body = self._fetch("domain", key, f"{service} GET {path}", live)
        return ok, json.loads(body)

    def probe(self, services: tuple[str, ...]) -> None:
        """Ask each service one documented request before anything is written; one that is
        down, rate-limits past the retries or answers something other than JSON is
        DomainAPIUnreachableError (exit 2)."""
        probes = {"pubchem": (PATHS["pubchem"].format(id="2244"), None),
                  "uniprot": (PATHS["uniprot"].format(id="P04637"), {"format": "json"}),
                  "sec_files": (PATHS["sec_files"], None),
                  "sec_data": (PATHS["sec_data"].format(id="0000320193"), None),
                  "nvd": (PATHS["nvd"], {"cveId": "CVE-2021-44228"}),
                  "epss": (PATHS["epss"], {"cve": "CVE-2021-44228"}),
                  "kev": (PATHS["kev"], None)}
        for service in services:
            path, params = probes[service]
            try:
                self._client(service).request("GET", path, "json", params=params)
            except ServiceError as e:
                raise DomainAPIUnreachableError(f"domain_apis.{service}: {e}") from None


# -- extraction (pure) -----------------------------------------------------------------------

Values = dict[str, Decimal | date]


def _decimal(v: Any, what: str) -> Decimal:
    try:
        d = Decimal(str(v))
    except InvalidOperation:
        raise ValueError(f"{what}: {v!r} is not a number") from None
    if not d.is_finite():
        raise ValueError(f"{what}: {v!r} is not finite")
    return d


def pubchem_values(data: Any) -> Values:
    """PUG-REST ``property/MolecularWeight,HeavyAtomCount/JSON`` → molecular weight (a string
    in the answer, g/mol) and heavy atom count."""
    (row,) = data["PropertyTable"]["Properties"]
    out: Values = {"pubchem:molecular_weight": _decimal(row["MolecularWeight"], "MolecularWeight")}
    if "HeavyAtomCount" in row:
        out["pubchem:heavy_atom_count"] = _decimal(row["HeavyAtomCount"], "HeavyAtomCount")
    return out


def uniprot_values(data: Any) -> Values:
    """UniProtKB entry JSON → sequence length (residues) and mass (``molWeight``, Da)."""
    seq = data["sequence"]
    return {"uniprot:length": _decimal(seq["length"], "sequence.length"),
            "uniprot:mass": _decimal(seq["molWeight"], "sequence.molWeight")}


def cik_of(tickers: Any, ticker: str) -> str | None:
    """The 10-digit CIK of ``ticker`` in ``company_tickers.json`` (``{"0": {"cik_str",
    "ticker", "title"}, ...}``), None when it is not listed."""
    for row in tickers.values():
        if str(row["ticker"]).upper() == ticker.upper():
            return f"{int(row['cik_str']):010d}"
    return None


REVENUE_CONCEPTS = ("Revenues", "RevenueFromContractWithCustomerExcludingAssessedTax", "SalesRevenueNet")
"""The us-gaap concepts a company may report revenue under, tried in this order."""


def annual_values(facts: Any, concept: str) -> dict[int, Decimal]:
    """USD values of a us-gaap ``concept`` for 12-month periods reported in 10-K filings, by the
    calendar year the period ends in (a fiscal year ending 2023-09-30 is FY2023); when
    several filings report a period (a later 10-K repeats it as a comparative, or restates
    it), the latest filing's value (then the highest accession number) wins."""
    rows = facts.get("facts", {}).get("us-gaap", {}).get(concept, {}).get("units", {}).get("USD", [])
    best: dict[int, tuple[str, str, Decimal]] = {}
    for r in rows:
        if r.get("form") != "10-K" or "start" not in r:
            continue
        days = (date.fromisoformat(r["end"]) - date.fromisoformat(r["start"])).days
        if not 350 <= days <= 380:  # an annual period, not a quarter or a stub
            continue
        year = date.fromisoformat(r["end"]).year
        rank = (str(r.get("filed", "")), str(r.get("accn", "")))
        if year not in best or rank > best[year][:2]:
            best[year] = (*rank, _decimal(r["val"], concept))
    return {y: v[2] for y, v in best.items()}


def sec_values(facts: Any) -> Values:
    """companyfacts → the latest fiscal year with annual revenue, its revenue and net income and
    the revenue two fiscal years before (absent ones are left out)."""
    revenue: dict[int, Decimal] = {}
    for concept in REVENUE_CONCEPTS:
        revenue = annual_values(facts, concept)
        if revenue:
            break
    if not revenue:
        return {}
    fy = max(revenue)
    out: Values = {"sec:fiscal_year": Decimal(fy), "sec:revenue_fy0": revenue[fy]}
    if fy - 2 in revenue:
        out["sec:revenue_fy2"] = revenue[fy - 2]
    income = annual_values(facts, "NetIncomeLoss")
    if fy in income:
        out["sec:net_income_fy0"] = income[fy]
    return out


def nvd_values(data: Any) -> Values:
    """NVD CVE API 2.0 ``?cveId=`` → the primary CVSS v3.1 base score and the publication day."""
    vulns = data.get("vulnerabilities") or []
    if len(vulns) != 1:
        return {}
    cve = vulns[0]["cve"]
    out: Values = {"nvd:published": date.fromisoformat(str(cve["published"])[:10])}
    metrics = cve.get("metrics", {}).get("cvssMetricV31") or []
    primary = [m for m in metrics if m.get("type") == "Primary"] or metrics
    if primary:
        out["nvd:base_score"] = _decimal(primary[0]["cvssData"]["baseScore"], "baseScore")
    return out


def epss_values(data: Any) -> Values:
    """FIRST EPSS ``?cve=`` → the exploitation probability (a string in the answer)."""
    rows = data.get("data") or []
    return {"epss:probability": _decimal(rows[0]["epss"], "epss")} if len(rows) == 1 else {}


def kev_values(catalog: Any, cve: str) -> Values:
    """CISA KEV feed → the CVE's date added and remediation due date (empty when not listed)."""
    for v in catalog.get("vulnerabilities", []):
        if v.get("cveID") == cve:
            return {"kev:date_added": date.fromisoformat(v["dateAdded"]),
                    "kev:due_date": date.fromisoformat(v["dueDate"])}
    return {}


class Resolved(BaseModel):
    """What one identifier gave: the identifier Wikidata knows the entity by, the values, and
    where each came from (the URL of the answer)."""

    model_config = ConfigDict(frozen=True)
    id_kind: str
    id_value: str
    values: dict[str, Any]
    sources: dict[str, str]


def resolve(api: DomainAPI, kind: str, ident: str) -> Resolved | str:
    """Ask the services for identifier ``ident`` of ``kind``: its values, or a reason it has
    none (the record does not exist, or lacks every value). DomainAPIError passes through."""
    s = api.settings

    def url(service: str, path: str, q: str = "") -> str:
        return f"{getattr(s, service).base_url}{path}{q}"

    values: Values = {}
    sources: dict[str, str] = {}

    def take(new: Values, where: str) -> None:
        values.update(new)
        sources.update({k: where for k in new})

    try:
        if kind == "pubchem_cid":
            path = PATHS["pubchem"].format(id=ident)
            ok, data = api.get("pubchem", path)
            if not ok:
                return f"PubChem has no compound CID {ident}"
            take(pubchem_values(data), url("pubchem", path))
            return Resolved(id_kind=kind, id_value=ident, values=_json(values), sources=sources)
        if kind == "uniprot_accession":
            path = PATHS["uniprot"].format(id=ident)
            ok, data = api.get("uniprot", path, {"format": "json"})
            if not ok:
                return f"UniProt has no entry {ident}"
            take(uniprot_values(data), url("uniprot", path, "?format=json"))
            return Resolved(id_kind=kind, id_value=ident, values=_json(values), sources=sources)
        if kind == "ticker":
            ok, tickers = api.get("sec_files", PATHS["sec_files"])
            cik = cik_of(tickers, ident) if ok else None
            if cik is None:
                return f"SEC company_tickers lists no ticker {ident}"
            path = PATHS["sec_data"].format(id=cik)
            ok, facts = api.get("sec_data", path)
            if not ok:
                return f"SEC has no XBRL company facts for CIK {cik} ({ident})"
            take(sec_values(facts), url("sec_data", path))
            if not values:
                return f"CIK {cik} ({ident}) reports no annual revenue in 10-K filings"
            return Resolved(id_kind="cik", id_value=cik, values=_json(values), sources=sources)
        # cve
        ok, data = api.get("nvd", PATHS["nvd"], {"cveId": ident})
        if not ok or not data.get("vulnerabilities"):
            return f"NVD has no record {ident}"
        take(nvd_values(data), url("nvd", PATHS["nvd"], f"?cveId={ident}"))
        ok, data = api.get("epss", PATHS["epss"], {"cve": ident})
        if ok:
            take(epss_values(data), url("epss", PATHS["epss"], f"?cve={ident}"))
        ok, catalog = api.get("kev", PATHS["kev"])
        if ok:
            take(kev_values(catalog, ident), url("kev", PATHS["kev"]))
        return Resolved(id_kind=kind, id_value=ident, values=_json(values), sources=sources)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        return f"{kind} {ident}: the answer does not have the documented shape ({e.__class__.__name__}: {e})"


def _json(values: Values) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in sorted(values.items()):
        out[k] = {"type": "date", "value": v.isoformat()} if isinstance(v, date) else \
            {"type": "quantity", "value": str(v)}
    return out


__all__ = [
    "API_DOMAINS",
    "DOMAIN_PROPERTIES",
    "ENTRY_KINDS",
    "ENTRY_TOOLS",
    "PATHS",
    "REVENUE_CONCEPTS",
    "SERVICES_OF",
    "TOOL_SERVICE",
    "WIKIDATA_ID_PROPERTY",
    "DomainAPI",
    "DomainAPISettings",
    "Resolved",
    "Service",
    "agent_services",
    "agent_tools",
    "annual_values",
    "check_identifier",
    "cik_of",
    "epss_values",
    "kev_values",
    "nvd_values",
    "pubchem_values",
    "resolve",
    "sec_values",
    "uniprot_values",
]
