"""The domain APIs' clients (drbencher/domainapi.py) against the local stand-in that speaks each
API's documented shape (drsearch.dev.domainapis, fixture data/domains/fixtures.json): the values
they extract, record → replay byte identity, the polite rate limit, Retry-After, and every way a
service can fail (down, 429 forever, HTML, not JSON)."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from drsearch.agents import ReplayCache
from drsearch.benchmark.generate.drbencher.domainapi import (
    DomainAPI,
    DomainAPISettings,
    Resolved,
    annual_values,
    resolve,
)
from drsearch.benchmark.generate.drbencher.errors import DomainAPIError, DomainAPIUnreachableError
from drsearch.dev.domainapis import DomainAPIs, serve_domain_apis

SERVICES = ("pubchem", "uniprot", "sec_files", "sec_data", "nvd", "epss", "kev")


def settings_for(url: str, rate: float = 50.0, attempts: int = 2) -> DomainAPISettings:
    return DomainAPISettings.model_validate({
        **{s: {"base_url": url, "rate_per_s": rate} for s in SERVICES},
        "max_attempts": attempts, "timeout_s": 5})


def live_api(url: str, **kw: Any) -> DomainAPI:
    return DomainAPI(settings_for(url, **kw), lambda kind, key, describe, live: live())


@pytest.fixture(scope="module")
def apis() -> Iterator[DomainAPIs]:
    with serve_domain_apis() as a:
        yield a


def values(r: Resolved | str) -> dict[str, str]:
    assert isinstance(r, Resolved), r
    return {k: v["value"] for k, v in r.values.items()}


def test_pubchem_and_uniprot_give_molecular_weight_and_sequence(apis: DomainAPIs) -> None:
    api = live_api(apis.url)
    aspirin = resolve(api, "pubchem_cid", "2244")
    assert values(aspirin) == {"pubchem:heavy_atom_count": "13", "pubchem:molecular_weight": "180.16"}
    assert isinstance(aspirin, Resolved)
    assert aspirin.sources["pubchem:molecular_weight"] == \
        f"{apis.url}/rest/pug/compound/cid/2244/property/MolecularWeight,HeavyAtomCount/JSON"
    assert values(resolve(api, "uniprot_accession", "P04637")) == {"uniprot:length": "393",
                                                                   "uniprot:mass": "43653"}
    assert resolve(api, "pubchem_cid", "999999") == "PubChem has no compound CID 999999"
    assert resolve(api, "uniprot_accession", "Q9ZZZ9") == "UniProt has no entry Q9ZZZ9"
    api.close()


def test_sec_ticker_to_cik_to_annual_10k_values(apis: DomainAPIs) -> None:
    api = live_api(apis.url)
    apple = resolve(api, "ticker", "AAPL")
    assert isinstance(apple, Resolved) and (apple.id_kind, apple.id_value) == ("cik", "0000320193")
    # FY2023 = the year ending 2023-09-30; the 3-month Q4 row of the 10-K is not an annual value
    assert values(apple) == {"sec:fiscal_year": "2023", "sec:net_income_fy0": "96995000000",
                             "sec:revenue_fy0": "383285000000", "sec:revenue_fy2": "365817000000"}
    msft = values(resolve(api, "ticker", "MSFT"))
    assert msft == {"sec:fiscal_year": "2023", "sec:revenue_fy0": "211915000000",
                    "sec:revenue_fy2": "168088000000"}  # no NetIncomeLoss in the fixture: left out
    assert resolve(api, "ticker", "ZZZZ") == "SEC company_tickers lists no ticker ZZZZ"
    # EDGAR answers an unknown CIK with a plain-text 404: no such record, not a failure
    assert api.get("sec_data", "/api/xbrl/companyfacts/CIK0000000001.json") == (False, None)
    api.close()


def test_annual_values_take_the_latest_filing_of_a_period() -> None:
    def row(val: int, filed: str, start: str = "2020-01-01", end: str = "2020-12-31") -> dict[str, Any]:
        return {"accn": "x", "end": end, "filed": filed, "form": "10-K", "start": start, "val": val}
    facts = {"facts": {"us-gaap": {"Revenues": {"units": {"USD": [
        row(100, "2021-02-01"), row(105, "2022-02-01"),  # restated in the next 10-K: 105 wins
        row(7, "2021-02-01", "2020-10-01"),  # a quarter
        {**row(1, "2021-02-01"), "form": "10-Q"}]}}}}}
    assert annual_values(facts, "Revenues") == {2020: Decimal(105)}


def test_nvd_epss_kev_values_of_a_cve(apis: DomainAPIs) -> None:
    api = live_api(apis.url)
    assert values(resolve(api, "cve", "CVE-2021-44228")) == {
        "epss:probability": "0.97565", "kev:date_added": "2021-12-10", "kev:due_date": "2021-12-24",
        "nvd:base_score": "10.0", "nvd:published": "2021-12-10"}
    # no EPSS row in the fixture for Heartbleed: left out, not invented
    assert values(resolve(api, "cve", "CVE-2014-0160")) == {
        "kev:date_added": "2022-05-04", "kev:due_date": "2022-05-25", "nvd:base_score": "7.5",
        "nvd:published": "2014-04-07"}
    assert resolve(api, "cve", "CVE-1999-0001") == "NVD has no record CVE-1999-0001"
    api.close()


def test_record_then_replay_offline_is_byte_identical(tmp_path: Path) -> None:
    cache_file = tmp_path / "cache.sqlite3"
    calls = (("pubchem_cid", "2244"), ("ticker", "AAPL"), ("cve", "CVE-2021-44228"))

    def run(store: ReplayCache, url: str, live: bool) -> tuple[list[Any], list[bytes]]:
        bodies: list[bytes] = []

        def fetch(kind: str, key: Any, describe: str, call: Any) -> tuple[bool, bytes]:
            ok, body = store.fetch(kind, key, describe, call if live else None)
            bodies.append(body)
            return ok, body
        api = DomainAPI(settings_for(url), fetch, live=live)
        out = [resolve(api, kind, ident) for kind, ident in calls]
        api.close()
        store.close()
        return out, bodies

    with serve_domain_apis() as apis:
        recorded, recorded_bodies = run(ReplayCache(cache_file, "record"), apis.url, True)
        url, asked = apis.url, len(apis.requests)
    assert asked == 1 + 2 + 3
    # the server is gone: only the cache answers, with the very bytes it recorded
    replayed, replayed_bodies = run(ReplayCache(cache_file, "replay"), url, False)
    assert replayed_bodies == recorded_bodies
    assert [r.model_dump_json() for r in replayed] == [r.model_dump_json() for r in recorded]


def test_requests_keep_to_the_rate_limit(apis: DomainAPIs) -> None:
    api = live_api(apis.url, rate=20.0)
    start = time.monotonic()
    for _ in range(6):
        api.get("kev", "/sites/default/files/feeds/known_exploited_vulnerabilities.json")
    assert time.monotonic() - start >= 5 / 20.0 - 0.01  # 6 starts at most 20 per second
    api.close()


@pytest.mark.parametrize(("fault", "says"), [
    ("429", "HTTP 429"), ("html", "HTML page"), ("not_json", "not JSON")])
def test_a_service_that_cannot_answer_is_one_error(fault: str, says: str) -> None:
    with serve_domain_apis(fault=fault) as apis:
        api = live_api(apis.url, attempts=3)
        with pytest.raises(DomainAPIError, match=says):
            resolve(api, "pubchem_cid", "2244")
        if fault == "429":  # Retry-After honoured, then given up after max_attempts
            assert len(apis.requests) == 3
        with pytest.raises(DomainAPIUnreachableError, match=f"domain_apis.nvd: .*{says}"):
            api.probe(("nvd",))
        api.close()


def test_a_service_that_is_down_fails_the_probe() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    api = live_api(f"http://127.0.0.1:{port}", attempts=1)
    with pytest.raises(DomainAPIUnreachableError, match=r"domain_apis\.sec_files: .*unreachable"):
        api.probe(("sec_files",))
    api.close()


def test_drsearch_dev_domain_apis_serves_until_terminated(tmp_path: Path) -> None:
    """The CLI entry point: prints its URL, answers the documented paths, a bad --fixtures is exit 2."""
    import os
    import subprocess
    import urllib.request

    from ....helpers import REPO
    from .kgserver import CLI

    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    proc = subprocess.Popen([*CLI, "dev", "domain-apis", "--port", "0"], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        with urllib.request.urlopen(f"{url}/rest/json/cves/2.0?cveId=CVE-2021-44228", timeout=10) as r:
            assert r.headers["content-type"] == "application/json"
            assert b'"baseScore": 10.0' in r.read()
    finally:
        proc.terminate()
        proc.wait(10)
    bad = subprocess.run([*CLI, "dev", "domain-apis", "--fixtures", str(tmp_path / "nope.json")], env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--fixtures" in bad.stderr
