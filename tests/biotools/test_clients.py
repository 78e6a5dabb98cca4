"""Each biomedical tool as a client of its API: the documented requests it sends to a local
stand-in, the answer it returns under one provenance line, arguments outside its schema
refused before any request, and the service failures that are never answers."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from drsearch.biotools import (
    BIOTOOL_NAMES,
    BIOTOOLS,
    InvalidArgumentsError,
    LiveBioTools,
    RateLimiter,
    ServiceClient,
    ServiceError,
    render,
)
from drsearch.contract.retry import RetryPolicy
from drsearch.dev.apis import LocalApis

# (tool, arguments, the requests the stand-in must see, a string the answer must hold)
CASES: list[tuple[str, dict[str, Any], list[str], str]] = [
    ("pubmed", {"query": "BNT162b2 vaccine"},
     ["GET /entrez/eutils/esearch.fcgi", "GET /entrez/eutils/esummary.fcgi"],
     '"title":"Safety and Efficacy of the BNT162b2 mRNA Covid-19 Vaccine."'),
    ("pubmed", {"pmids": ["33301246"]}, ["GET /entrez/eutils/efetch.fcgi"], "NCT04368728"),
    ("clinicaltrialsgov", {"query": "BNT162b2"}, ["GET /api/v2/studies"], '"nctId":"NCT04368728"'),
    ("clinicaltrialsgov", {"nct_id": "NCT04368728"}, ["GET /api/v2/studies/NCT04368728"], "BioNTech SE"),
    ("openfda", {"search": 'openfda.generic_name:"aspirin"'}, ["GET /drug/label.json"], '"total":1'),
    ("opentargets", {"query": 'query { target(ensemblId: "ENSG00000141510") { id approvedSymbol } }'},
     ["POST /api/v4/graphql"], '"approvedSymbol":"TP53"'),
    ("opentargets", {"query": "query T($id: String!) { target(ensemblId: $id) { approvedName } }",
                     "variables": {"id": "ENSG00000141510"}}, ["POST /api/v4/graphql"], "tumor protein p53"),
    ("chembl", {"chembl_id": "CHEMBL25"}, ["GET /chembl/api/data/molecule/CHEMBL25.json"], '"pref_name":"ASPIRIN"'),
    ("chembl", {"query": "aspirin"}, ["GET /chembl/api/data/molecule/search.json"], '"molecules":['),
    ("chembl", {"filters": {"molecule_chembl_id": "CHEMBL25"}, "resource": "mechanism"},
     ["GET /chembl/api/data/mechanism.json"], "Cyclooxygenase inhibitor"),
    ("uniprot", {"accession": "P04637"}, ["GET /uniprotkb/P04637"], "Cellular tumor antigen p53"),
    ("uniprot", {"query": "gene:TP53 AND organism_id:9606"}, ["GET /uniprotkb/search"], '"primaryAccession":"P04637"'),
    ("pubchem", {"identifier": "aspirin"},
     ["GET /rest/pug/compound/name/aspirin/property/MolecularFormula,MolecularWeight,CanonicalSMILES,IUPACName,"
      "InChIKey,XLogP/JSON"], '"CID":2244'),
    ("pubchem", {"identifier": "2244", "namespace": "cid", "operation": "synonyms"},
     ["GET /rest/pug/compound/cid/2244/synonyms/JSON"], "50-78-2"),
    ("kegg", {"database": "genes", "operation": "find", "query": "tp53"}, ["GET /find/genes/tp53"],
     "hsa:7157\tTP53"),
    ("kegg", {"operation": "get", "query": "hsa:7157"}, ["GET /get/hsa:7157"], "PATHWAY     hsa04115"),
    ("kegg", {"database": "pathway", "operation": "link", "query": "hsa:7157"}, ["GET /link/pathway/hsa:7157"],
     "path:hsa04115"),
    ("ncbi_datasets", {"gene_ids": [7157]}, ["GET /datasets/v2/gene/id/7157"], '"symbol":"TP53"'),
    ("ncbi_datasets", {"symbol": "TP53"}, ["GET /datasets/v2/gene/symbol/TP53/taxon/9606"], '"gene_id":"7157"'),
    ("biomcp", {"action": "search", "query": "BNT162b2"}, [], "PMID 33301246"),
    ("biomcp", {"action": "fetch", "domain": "trial", "id": "NCT04368728"}, [], "BioNTech SE"),
]


@pytest.mark.parametrize(("tool", "args", "requests", "expect"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_tool_speaks_its_api(apis: LocalApis, tool: str, args: dict[str, Any], requests: list[str],
                                  expect: str) -> None:
    live = LiveBioTools(apis.endpoints, env={}, today=lambda: "2026-12-07")
    before = len(apis.requests)
    body = live.call(tool, BIOTOOLS[tool].check(args))
    assert apis.requests[before:] == requests
    envelope = json.loads(body)
    assert envelope["ok"] and envelope["biotool"] == tool and envelope["accessed"] == "2026-12-07"
    assert expect in envelope["content"]
    text = render(body, 12_000)
    head, _, content = text.partition("\n")
    assert head.startswith(f"[source: {BIOTOOLS[tool].service} · ") and head.endswith("accessed 2026-12-07]")
    assert expect in content


def test_the_ten_tools_are_the_papers() -> None:
    assert BIOTOOL_NAMES == ("pubmed", "clinicaltrialsgov", "openfda", "opentargets", "chembl", "uniprot",
                             "pubchem", "kegg", "ncbi_datasets", "biomcp")
    for tool in BIOTOOLS.values():
        assert tool.parameters["type"] == "object" and tool.parameters["additionalProperties"] is False
        assert tool.endpoints and tool.description


def test_a_services_refusal_is_an_answer_the_model_reads(apis: LocalApis) -> None:
    live = LiveBioTools(apis.endpoints, env={})
    body = live.call("pubchem", BIOTOOLS["pubchem"].check({"identifier": "no-such-compound"}))
    assert json.loads(body)["ok"] is False and json.loads(body)["status"] == 404
    text = render(body, 2000)
    error = json.loads(text)["error"]
    assert error["type"] == "service_refused" and "PUGREST.NotFound" in error["message"]


def test_answers_are_capped(apis: LocalApis) -> None:
    body = LiveBioTools(apis.endpoints, env={}).call("uniprot", BIOTOOLS["uniprot"].check({"accession": "P04637"}))
    assert len(render(body, 10_000)) > 300
    text = render(body, 300)
    assert len(text) == 300 and text.endswith("…[truncated]")


BAD_ARGUMENTS = [
    ("pubmed", {}, "give exactly one of query, pmids"),
    ("pubmed", {"query": "x", "pmids": ["1"]}, "give exactly one of query, pmids"),
    ("pubmed", {"pmids": ["abc"]}, "pmids[0]: does not match"),
    ("pubmed", {"query": "x", "max_results": 500}, "max_results: must be <= 20"),
    ("clinicaltrialsgov", {"nct_id": "NCT1"}, "nct_id: does not match"),
    ("openfda", {"endpoint": "food/event", "search": "x"}, "endpoint: must be one of"),
    ("openfda", {"search": ""}, "search: must not be empty"),
    ("opentargets", {"variables": {}}, "missing required argument 'query'"),
    ("chembl", {"chembl_id": "aspirin"}, "chembl_id: does not match"),
    ("chembl", {"filters": {"limit": 5}}, "'limit' is its own argument"),
    ("uniprot", {"accession": "TP53"}, "accession: does not match"),
    ("pubchem", {"identifier": "aspirin", "namespace": "formula"}, "namespace: must be one of"),
    ("kegg", {"operation": "get", "database": "genes"}, "operation 'get' takes query"),
    ("kegg", {"operation": "find", "database": "genes", "query": "a/b"}, "query: does not match"),
    ("ncbi_datasets", {"gene_ids": ["7157"]}, "gene_ids[0]: must be integer"),
    ("biomcp", {"action": "fetch", "id": "1"}, "fetch takes domain and id"),
    ("biomcp", {"action": "search", "query": "x", "extra": 1}, "unknown argument 'extra'"),
    ("kegg", "not an object", "arguments must be a JSON object"),
]


@pytest.mark.parametrize(("tool", "args", "message"), BAD_ARGUMENTS)
def test_arguments_outside_the_schema_are_refused(tool: str, args: Any, message: str) -> None:
    with pytest.raises(InvalidArgumentsError) as e:
        BIOTOOLS[tool].check(args)
    assert message in e.value.message and e.value.error_type == "invalid_arguments"


def test_canonical_arguments_one_key_per_call() -> None:
    a = BIOTOOLS["pubmed"].check({"query": "x", "pmids": None})
    b = BIOTOOLS["pubmed"].check({"max_results": 5, "query": "x"})
    assert a == b == {"max_results": 5, "query": "x"}


def _client(handler: Any, **kw: Any) -> ServiceClient:
    policy = RetryPolicy(max_attempts=3, backoff_s=0.0, backoff_max_s=5.0, timeout_s=5.0)
    return ServiceClient("svc", "http://svc.test", 1000.0, policy=policy, transport=httpx.MockTransport(handler), **kw)


def test_html_instead_of_json_is_a_service_failure() -> None:
    client = _client(lambda r: httpx.Response(200, headers={"content-type": "text/html"},
                                              text="<!DOCTYPE html><html>maintenance</html>"))
    with pytest.raises(ServiceError, match="HTML page instead of JSON"):
        client.request("GET", "/x", "json")
    # even without the content type, and even on a text endpoint
    client = _client(lambda r: httpx.Response(200, text="<html><body>login</body></html>"))
    with pytest.raises(ServiceError, match="HTML page instead of text"):
        client.request("GET", "/x", "text")


def test_garbage_instead_of_json_is_a_service_failure() -> None:
    client = _client(lambda r: httpx.Response(200, headers={"content-type": "application/json"}, text="{nope"))
    with pytest.raises(ServiceError, match="not JSON"):
        client.request("GET", "/x", "json")


def test_retry_after_is_honoured_then_the_answer_comes() -> None:
    waits: list[float] = []
    answers = iter([httpx.Response(429, headers={"retry-after": "2"}), httpx.Response(503),
                    httpx.Response(200, json={"ok": 1})])
    reply = _client(lambda r: next(answers), sleep=waits.append).request("GET", "/x", "json")
    assert reply.ok and json.loads(reply.text) == {"ok": 1}
    assert waits[0] >= 2.0 and len(waits) == 2


def test_5xx_after_the_retries_and_unreachable_are_service_failures() -> None:
    with pytest.raises(ServiceError, match=r"HTTP 502.*after 3 attempt"):
        _client(lambda r: httpx.Response(502), sleep=lambda s: None).request("GET", "/x", "json")

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(ServiceError, match="unreachable"):
        _client(refuse, sleep=lambda s: None).request("GET", "/x", "json")


def test_ncbi_rate_is_three_per_second_or_ten_with_a_key_which_is_sent_never_recorded() -> None:
    seen: list[httpx.URL] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.url)
        return httpx.Response(200, json={"esearchresult": {"count": "0", "idlist": []}})

    pubmed = BIOTOOLS["pubmed"]
    assert LiveBioTools(env={}).rate(pubmed) == 3.0
    keyed = LiveBioTools(env={"NCBI_API_KEY": "secret-key"}, transport=httpx.MockTransport(handler))
    assert keyed.rate(pubmed) == 10.0
    body = keyed.call("pubmed", pubmed.check({"query": "x"}))
    assert seen[0].params["api_key"] == "secret-key" and seen[0].host == "eutils.ncbi.nlm.nih.gov"
    assert b"secret-key" not in body
    # NCBI Datasets takes its key as a header, under its own limiter
    assert keyed.session(BIOTOOLS["ncbi_datasets"]).key_header == ("api-key", "secret-key")
    # a local stand-in is not a public service: no politeness owed
    assert LiveBioTools({"pubmed": "http://127.0.0.1:9"}, env={}).rate(pubmed) == 1000.0


def test_rate_limiter_spaces_request_starts() -> None:
    now = [0.0]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    limiter = RateLimiter(3.0, clock=lambda: now[0], sleep=sleep)
    for _ in range(4):
        limiter.wait()
    assert [round(s, 6) for s in slept] == [0.333333, 0.333333, 0.333333]


def test_an_unreachable_mcp_server_is_a_service_failure() -> None:
    live = LiveBioTools({"biomcp": "http://127.0.0.1:9/mcp"}, env={})
    with pytest.raises(ServiceError, match=r"biomcp at http://127\.0\.0\.1:9/mcp"):
        live.call("biomcp", BIOTOOLS["biomcp"].check({"action": "search", "query": "x"}))


@pytest.mark.slow  # a Python subprocess that imports the MCP SDK: seconds on a loaded machine
def test_biomcp_over_stdio_the_default_transport() -> None:
    """The endpoint as a command speaking MCP on stdio (BioMCP's own `biomcp run`): here the
    stand-in, started by the SDK's stdio client for the one call."""
    import shlex
    import sys

    from ..helpers import DATA

    code = f"from drsearch.dev.apis import run_biomcp_stdio; from pathlib import Path; " \
           f"run_biomcp_stdio(Path({str(DATA / 'biotools/fixtures.json')!r}))"
    live = LiveBioTools({"biomcp": f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"}, env={})
    body = json.loads(live.call("biomcp", BIOTOOLS["biomcp"].check({"action": "fetch", "domain": "trial",
                                                                    "id": "NCT04368728"})))
    assert body["ok"] and "BioNTech SE" in body["content"]
    assert body["requests"] == ['MCP tools/call fetch {"domain":"trial","id":"NCT04368728"}']


def test_biomcp_is_error_is_a_refusal_the_model_reads(apis: LocalApis) -> None:
    live = LiveBioTools(apis.endpoints, env={})
    body = live.call("biomcp", BIOTOOLS["biomcp"].check({"action": "fetch", "domain": "trial", "id": "NCT00000000"}))
    assert json.loads(body)["ok"] is False
    assert json.loads(render(body, 2000))["error"]["type"] == "service_refused"
