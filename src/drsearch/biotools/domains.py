"""The domain tools of DrBencher's financial and security domains, as agent tools.

The paper's tool-augmented filter (V2) gives its agent the domain APIs beside search: the
biochemistry domain's are the PubChem and UniProt tools of :mod:`.services`; these are the
rest, each a client of the documented API that DrBencher's generator reads its values from
(:mod:`drsearch.benchmark.generate.drbencher.domainapi`):

- ``sec_tickers``: SEC EDGAR ``/files/company_tickers.json``, the rows of one ticker (the
  file lists every company, about 10,000 rows: the filter is our choice, the rows are SEC's);
- ``sec_xbrl``: SEC XBRL frames of one company and one us-gaap concept
  (``/api/xbrl/companyconcept/CIK##########/us-gaap/{concept}.json``);
- ``nvd``: NVD CVE API 2.0, one CVE record (``/rest/json/cves/2.0?cveId=``);
- ``epss``: FIRST EPSS, one CVE's exploitation probability (``/data/v1/epss?cve=``);
- ``cisa_kev``: CISA's Known Exploited Vulnerabilities feed, the entry of one CVE (the feed
  lists over a thousand: the filter is our choice, the entry and the catalog's version and
  release date are CISA's).
"""

from __future__ import annotations

import json
from typing import Any

from ..contract import canonical_json
from .spec import BioTool, Outcome, Session, json_outcome

CVE_ID = {"type": "string", "pattern": "CVE-[0-9]{4}-[0-9]{4,7}", "description": "e.g. CVE-2021-44228"}
KEV_FEED = "/sites/default/files/feeds/known_exploited_vulnerabilities.json"


def _obj(props: dict[str, Any], required: tuple[str, ...]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": props, "required": list(required)}


def _filtered(s: Session, path: str, pick: Any) -> Outcome:
    """GET ``path`` (JSON) and keep what ``pick(answer)`` returns; a refusal is kept as is."""
    reply = s.call("GET", path, "json")
    if not reply.ok:
        return json_outcome(reply)
    try:
        kept = pick(json.loads(reply.text))
    except (ValueError, AttributeError, TypeError, KeyError):  # not the documented shape: show it
        return json_outcome(reply)
    return Outcome(True, reply.status, canonical_json(kept), "json")


def _sec_tickers(s: Session, a: dict[str, Any]) -> Outcome:
    ticker = a["ticker"].upper()
    return _filtered(s, "/files/company_tickers.json", lambda rows: {
        "matches": [r for r in rows.values() if str(r.get("ticker", "")).upper() == ticker]})


SEC_TICKERS = BioTool(
    name="sec_tickers",
    service="SEC EDGAR company tickers",
    description=("Find a company's SEC Central Index Key (CIK) and name by its stock `ticker` "
                 "(EDGAR company_tickers.json, the rows of that ticker)."),
    parameters=_obj({"ticker": {"type": "string", "pattern": "[A-Za-z][A-Za-z0-9.\\-]{0,9}",
                                "description": "e.g. AAPL"}}, ("ticker",)),
    endpoints=("GET /files/company_tickers.json",),
    base_url="https://www.sec.gov",
    run=_sec_tickers,
    rate_per_s=5.0,
    limiter="sec",
    docs="https://www.sec.gov/search-filings/edgar-application-programming-interfaces",
)


def _sec_xbrl(s: Session, a: dict[str, Any]) -> Outcome:
    cik = f"{int(a['cik']):010d}"
    path = f"/api/xbrl/companyconcept/CIK{cik}/us-gaap/{a['concept']}.json"
    return json_outcome(s.call("GET", path, "json"))


SEC_XBRL = BioTool(
    name="sec_xbrl",
    service="SEC EDGAR XBRL API",
    description=("Read every reported value of one us-gaap `concept` (e.g. Revenues, "
                 "RevenueFromContractWithCustomerExcludingAssessedTax, NetIncomeLoss) for the company "
                 "with SEC `cik`: periods, values, form (10-K is annual), fiscal year, filing date."),
    parameters=_obj({"cik": {"type": "string", "pattern": "[0-9]{1,10}", "description": "e.g. 320193"},
                     "concept": {"type": "string", "pattern": "[A-Za-z]{1,200}",
                                 "description": "a us-gaap concept name"}}, ("cik", "concept")),
    endpoints=("GET /api/xbrl/companyconcept/CIK{cik}/us-gaap/{concept}.json",),
    base_url="https://data.sec.gov",
    run=_sec_xbrl,
    rate_per_s=5.0,
    limiter="sec",
    docs="https://www.sec.gov/search-filings/edgar-application-programming-interfaces",
)


def _nvd(s: Session, a: dict[str, Any]) -> Outcome:
    return json_outcome(s.call("GET", "/rest/json/cves/2.0", "json", {"cveId": a["cve_id"]}))


NVD = BioTool(
    name="nvd",
    service="NVD CVE API 2.0",
    description=("Read one CVE record from the NVD CVE API 2.0 by `cve_id`: descriptions, CVSS "
                 "metrics (v3.1 base score and severity), publication date, weaknesses, references."),
    parameters=_obj({"cve_id": CVE_ID}, ("cve_id",)),
    endpoints=("GET /rest/json/cves/2.0",),
    base_url="https://services.nvd.nist.gov",
    run=_nvd,
    rate_per_s=5 / 30,  # NVD: 5 requests per rolling 30 s without a key, 50 with one
    key_env="NVD_API_KEY",
    rate_with_key_per_s=50 / 30,
    extra={"key_header": "apiKey"},
    docs="https://nvd.nist.gov/developers/vulnerabilities",
)


def _epss(s: Session, a: dict[str, Any]) -> Outcome:
    return json_outcome(s.call("GET", "/data/v1/epss", "json", {"cve": a["cve_id"]}))


EPSS = BioTool(
    name="epss",
    service="FIRST EPSS API",
    description=("Read the FIRST Exploit Prediction Scoring System score of `cve_id`: the "
                 "probability of exploitation in the next 30 days and its percentile, with the date."),
    parameters=_obj({"cve_id": CVE_ID}, ("cve_id",)),
    endpoints=("GET /data/v1/epss",),
    base_url="https://api.first.org",
    run=_epss,
    rate_per_s=5.0,
    docs="https://www.first.org/epss/api",
)


def _cisa_kev(s: Session, a: dict[str, Any]) -> Outcome:
    cve = a["cve_id"]
    return _filtered(s, KEV_FEED, lambda feed: {
        "catalogVersion": feed.get("catalogVersion"), "dateReleased": feed.get("dateReleased"),
        "vulnerabilities": [v for v in feed["vulnerabilities"] if v.get("cveID") == cve]})


CISA_KEV = BioTool(
    name="cisa_kev",
    service="CISA Known Exploited Vulnerabilities catalog",
    description=("Look up `cve_id` in CISA's Known Exploited Vulnerabilities catalog: its entry "
                 "(vendor, product, date added, remediation due date, required action) or none."),
    parameters=_obj({"cve_id": CVE_ID}, ("cve_id",)),
    endpoints=(f"GET {KEV_FEED}",),
    base_url="https://www.cisa.gov",
    run=_cisa_kev,
    rate_per_s=1.0,
    docs="https://www.cisa.gov/known-exploited-vulnerabilities-catalog",
)

DOMAIN_TOOLS: tuple[BioTool, ...] = (SEC_TICKERS, SEC_XBRL, NVD, EPSS, CISA_KEV)
"""The financial and security domains' tools, in the order their schemas are sent."""

__all__ = ["CISA_KEV", "DOMAIN_TOOLS", "EPSS", "KEV_FEED", "NVD", "SEC_TICKERS", "SEC_XBRL"]
