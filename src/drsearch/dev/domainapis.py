"""Local stand-ins for the DrBencher domain APIs (tests, the documented offline run).

One HTTP server on 127.0.0.1 speaks the documented request and response shapes of PubChem
PUG-REST (``/rest/pug/compound/cid/{cid}/property/{names}/JSON``), UniProt REST
(``/uniprotkb/{accession}?format=json``), SEC EDGAR (``/files/company_tickers.json``,
``/api/xbrl/companyfacts/CIK##########.json`` and, for the V2 agent's ``sec_xbrl`` tool,
``/api/xbrl/companyconcept/CIK##########/us-gaap/{concept}.json``, one concept of the same
facts), the NVD CVE API 2.0
(``/rest/json/cves/2.0?cveId=``), FIRST EPSS (``/data/v1/epss?cve=``) and the CISA KEV feed
(``/sites/default/files/feeds/known_exploited_vulnerabilities.json``): their paths do not
overlap, so one server holds them all. Answers come from a fixture of public records
(data/domains/fixtures.json; the source of every value in data/domains/README.md and
provenance.tsv). Unknown records get each service's documented not-found answer.

``fault`` makes every answer a failure the client must survive or report: ``"429"`` (rate
limited forever, ``Retry-After: 0``), ``"html"`` (a maintenance page), ``"not_json"`` (a
200 whose body is not JSON); with ``fault_after`` N, only from the (N+1)-th request on (a
service that answers a run's probe and then fails). ``drsearch dev domain-apis`` serves them
until Ctrl-C.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from .standin import RecordingServer, Running, TextHandler

DEFAULT_FIXTURES = Path(__file__).resolve().parents[3] / "data" / "domains" / "fixtures.json"
JSON = "application/json"
Answer = tuple[int, str, str]
FAULTS = ("429", "html", "not_json")

_PUBCHEM = re.compile(r"^/rest/pug/compound/cid/([^/]+)/property/([^/]+)/JSON$")
_COMPANYFACTS = re.compile(r"^/api/xbrl/companyfacts/CIK([0-9]{10})\.json$")
_COMPANYCONCEPT = re.compile(r"^/api/xbrl/companyconcept/CIK([0-9]{10})/us-gaap/([A-Za-z]+)\.json$")


def _json(value: Any, status: int = 200) -> Answer:
    return status, JSON, json.dumps(value, sort_keys=True)


def answer(d: dict[str, Any], path: str, q: dict[str, str]) -> Answer:
    """The answer of the fixture ``d`` to ``GET path?q``."""
    m = _PUBCHEM.match(path)
    if m:
        cid, names = unquote(m.group(1)), unquote(m.group(2)).split(",")
        record = d["pubchem"].get(cid)
        if not cid.isdigit():
            return _json({"Fault": {"Code": "PUGREST.BadRequest", "Message": "Invalid ID, must be positive "
                                                                             "integer"}}, 400)
        if record is None:
            return _json({"Fault": {"Code": "PUGREST.NotFound", "Details": [f"No CID found for {cid}"],
                                    "Message": "No CID found"}}, 404)
        return _json({"PropertyTable": {"Properties": [
            {"CID": int(cid), **{n: record[n] for n in names if n in record}}]}})
    if path.startswith("/uniprotkb/"):
        acc = path.removeprefix("/uniprotkb/")
        if acc in d["uniprot"]:
            return _json(d["uniprot"][acc])
        return _json({"messages": [f"Resource not found: {acc}"], "url": path}, 404)
    if path == "/files/company_tickers.json":
        return _json({str(i): row for i, row in enumerate(d["sec"]["tickers"])})
    m = _COMPANYFACTS.match(path)
    if m:
        facts = d["sec"]["companyfacts"].get(m.group(1))
        if facts is None:  # EDGAR answers a plain 404 page for an unknown CIK
            return 404, "text/plain", "NoSuchKey"
        return _json(facts)
    m = _COMPANYCONCEPT.match(path)
    if m:
        facts = d["sec"]["companyfacts"].get(m.group(1))
        concept = (facts or {}).get("facts", {}).get("us-gaap", {}).get(m.group(2))
        if concept is None:
            return 404, "text/plain", "NoSuchKey"
        return _json({"cik": facts["cik"], "entityName": facts["entityName"], "tag": m.group(2),
                      "taxonomy": "us-gaap", **concept})
    if path == "/rest/json/cves/2.0":
        cve = q.get("cveId", "")
        found = [{"cve": d["nvd"][cve]}] if cve in d["nvd"] else []
        return _json({"format": "NVD_CVE", "resultsPerPage": len(found), "startIndex": 0,
                      "timestamp": d["nvd_timestamp"], "totalResults": len(found), "version": "2.0",
                      "vulnerabilities": found})
    if path == "/data/v1/epss":
        cve = q.get("cve", "")
        rows = [{"cve": cve, **d["epss"]["scores"][cve]}] if cve in d["epss"]["scores"] else []
        return _json({"access": "public", "data": rows, "limit": 100, "offset": 0, "status": "OK",
                      "status-code": 200, "total": len(rows), "version": "1.0"})
    if path == "/sites/default/files/feeds/known_exploited_vulnerabilities.json":
        kev = d["kev"]
        return _json({**{k: v for k, v in kev.items() if k != "vulnerabilities"},
                      "count": len(kev["vulnerabilities"]), "vulnerabilities": kev["vulnerabilities"]})
    return _json({"error": f"no such path {path}"}, 404)


class _Handler(TextHandler):
    server: _Server

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        q = {k: v[-1] for k, v in parse_qs(url.query).items()}
        with self.server.lock:
            self.server.requests.append(f"GET {url.path}" + (f"?{url.query}" if url.query else ""))
            self.server.user_agents.append(self.headers.get("User-Agent", ""))
            seen = len(self.server.requests)
        fault = self.server.fault if seen > self.server.fault_after else None
        if fault == "429":
            self._send(429, JSON, '{"message": "rate limited"}', {"Retry-After": "0"})
        elif fault == "html":
            self._send(200, "text/html", "<!doctype html><html><body>Maintenance</body></html>")
        elif fault == "not_json":
            self._send(200, JSON, "this is not JSON")
        else:
            self._send(*answer(self.server.data, url.path, q))


class _Server(RecordingServer):
    def __init__(self, address: tuple[str, int], data: dict[str, Any], fault: str | None,
                 fault_after: int = 0) -> None:
        super().__init__(address, _Handler)
        self.data, self.fault, self.fault_after = data, fault, fault_after
        self.user_agents: list[str] = []  # each request's User-Agent, in order (politeness tests)


class DomainAPIs(Running):
    """A running stand-in: its ``url``, the requests it saw (and their ``user_agents``), ``stop()``."""

    @property
    def user_agents(self) -> list[str]:
        server = self._server
        assert isinstance(server, _Server)
        with server.lock:
            return list(server.user_agents)


def start_domain_apis(fixtures: Path = DEFAULT_FIXTURES, port: int = 0, fault: str | None = None,
                      host: str = "127.0.0.1", fault_after: int = 0) -> DomainAPIs:
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"fault {fault!r} (known: {', '.join(FAULTS)})")
    data = json.loads(fixtures.read_text(encoding="utf-8"))
    return DomainAPIs(_Server((host, port), data, fault, fault_after))


@contextmanager
def serve_domain_apis(fixtures: Path = DEFAULT_FIXTURES, fault: str | None = None) -> Iterator[DomainAPIs]:
    apis = start_domain_apis(fixtures, fault=fault)
    try:
        yield apis
    finally:
        apis.stop()


__all__ = ["DEFAULT_FIXTURES", "FAULTS", "DomainAPIs", "answer", "serve_domain_apis", "start_domain_apis"]
