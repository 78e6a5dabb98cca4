"""Citation audit: extraction, L1 existence (tristate, retried), L2 support, wrong-paper rates."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from drsearch.agents import ChatClient, EngineSearcher, RetryPolicy
from drsearch.benchmark import (
    Citation,
    CitationAuditor,
    CorpusResolver,
    HttpRecordResolver,
    JudgeSettings,
    LLMJudge,
    Resolution,
    RoutingResolver,
    SupportJudge,
    citation_rates,
    extract_citations,
)
from drsearch.benchmark.citations import CITATION_KINDS, CitationCheck, arxiv_id
from drsearch.dev.judge import serve_judge
from drsearch.index import BlockList, Engine

from ..helpers import DATA
from .record_server import serve_records

DOC = "d-8b601c6f3f2c9567"
DOC_URL = "https://www.wsj.com/articles/google-stadia-microsoft-xcloud-apple-arcade-so-many-ways-to-playand-pay-11574168580"
BLOCKED_DOC = "d-57591aff7122c74f"  # the sample's Q&A leak artifact


def test_extracts_every_kind_once_in_order() -> None:
    answer = ("Aspirin helps (PMID: 12345678; see https://pubmed.ncbi.nlm.nih.gov/23456789/).\n"
              "Trial NCT01234567 and https://clinicaltrials.gov/study/NCT07654321 confirm it, doi:10.1000/XYZ.123.\n"
              f"Corpus page {DOC} and https://doi.org/10.1000/abc, also https://example.com/page.\n"
              "Repeated: PMID 12345678, nct01234567.")
    got = [(c.kind, c.value) for c in extract_citations(answer)]
    assert got == [("pmid", "12345678"), ("pmid", "23456789"), ("nct", "NCT01234567"), ("nct", "NCT07654321"),
                   ("doi", "10.1000/xyz.123"), ("docid", DOC), ("doi", "10.1000/abc"),
                   ("url", "https://example.com/page")]
    first = extract_citations(answer)[0]
    assert first.claim.startswith("Aspirin helps") and "\n" not in first.claim


@pytest.mark.parametrize(("answer", "expected"), [
    ("See arXiv:2101.01234.", [("arxiv", "2101.01234")]),
    ("See arXiv:2101.01234v3, then.", [("arxiv", "2101.01234")]),
    ("ARXIV: 2101.01234v12; and arXiv 0704.0001", [("arxiv", "2101.01234"), ("arxiv", "0704.0001")]),
    ("(arxiv.org/abs/2101.01234v2)", [("arxiv", "2101.01234")]),
    ("https://arxiv.org/abs/2101.01234v2.", [("arxiv", "2101.01234")]),
    ("www.arxiv.org/pdf/2101.01234.pdf", [("arxiv", "2101.01234")]),
    ("(https://arxiv.org/pdf/2101.01234v1.pdf).", [("arxiv", "2101.01234")]),
    ("https://export.arxiv.org/abs/2101.01234?context=cs", [("arxiv", "2101.01234")]),
    ("arXiv:hep-th/9901001", [("arxiv", "hep-th/9901001")]),
    ("ARXIV:HEP-TH/9901001v2.", [("arxiv", "hep-th/9901001")]),
    ("arxiv.org/abs/math.GT/0309136", [("arxiv", "math/0309136")]),  # the subject class is no part of the id
    ("[paper](https://arxiv.org/abs/math.GT/0309136v1)", [("arxiv", "math/0309136")]),
    # one paper however often and in whatever form it is cited: text, link, version, arXiv's own DOI
    ("[arXiv:2101.01234](https://arxiv.org/abs/2101.01234v2) (arXiv:2101.01234v1; doi:10.48550/arXiv.2101.01234, "
     "https://doi.org/10.48550/ARXIV.2101.01234)", [("arxiv", "2101.01234")]),
    ("Shown in (10.48550/arXiv.2302.00006v2).", [("arxiv", "2302.00006")]),
    # not arXiv ids: a longer number, a year, another arxiv.org page, an ordinary DOI, a bare number
    ("arXiv:2101.012345 and arXiv 2021", []),
    ("https://arxiv.org/list/cs.AI/recent", [("url", "https://arxiv.org/list/cs.AI/recent")]),
    ("doi:10.1000/arXiv.2101.01234", [("doi", "10.1000/arxiv.2101.01234")]),
    ("Version 2101.01234 of the data.", []),
])
def test_arxiv_forms(answer: str, expected: list[tuple[str, str]]) -> None:
    assert [(c.kind, c.value) for c in extract_citations(answer)] == expected


def test_arxiv_id_normalises_like_extraction() -> None:
    assert [arxiv_id(t) for t in ("2101.01234v2", "hep-th/9901001v1", "Math.GT/0309136", "1234", "hep-th/99")] == \
        ["2101.01234", "hep-th/9901001", "math/0309136", None, None]


def test_arxiv_among_other_kinds_in_order() -> None:
    answer = "PMID: 1 and arxiv.org/abs/2301.00005 agree; https://example.com/x; arXiv:2301.00005v2 again."
    assert [(c.kind, c.value) for c in extract_citations(answer)] == [
        ("pmid", "1"), ("arxiv", "2301.00005"), ("url", "https://example.com/x")]


def test_nothing_cited() -> None:
    assert extract_citations("No sources, just 42 and q-b1d4331f8b21052e.") == []


# -- L1 existence ---------------------------------------------------------------------------


@pytest.fixture()
def corpus(sample_index: Path) -> Iterator[CorpusResolver]:
    with Engine.open(sample_index, BlockList.from_file(DATA / "sample/blocked_docids.txt")) as engine:
        yield CorpusResolver(EngineSearcher(engine), max_chars=500)


def test_corpus_resolver(corpus: CorpusResolver) -> None:
    found = corpus.resolve(Citation("docid", DOC, "claim"))
    assert found.status == "found" and (found.record or "").startswith("Google Stadia")
    assert corpus.resolve(Citation("url", DOC_URL, "claim")).status == "found"
    assert corpus.resolve(Citation("docid", BLOCKED_DOC, "claim")).status == "notfound"  # blocked = absent
    assert corpus.resolve(Citation("docid", "d-0000000000000000", "claim")).status == "notfound"
    assert corpus.resolve(Citation("url", "https://nowhere.example/x", "claim")).status == "notfound"


def test_http_record_resolver_tristate() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        pmid = request.url.path.strip("/").split("/")[-1]
        if pmid == "timeout":
            raise httpx.ReadTimeout("slow", request=request)
        status = {"1": 200, "2": 404, "3": 410, "4": 503, "5": 429, "6": 400, "7": 403, "8": 401, "9": 422}[pmid]
        return httpx.Response(status, text=f"record {pmid}")

    client = httpx.Client(transport=httpx.MockTransport(handler))
    resolver = HttpRecordResolver(client, {"pmid": "https://records.test/pmid/{id}"})
    ids = ("1", "2", "3", "4", "5", "6", "7", "8", "9", "timeout")
    status = {p: resolver.resolve(Citation("pmid", p, "c")).status for p in ids}
    # a login wall or rate limiter (401/403) says nothing about the record: never "fabricated"
    assert status == {"1": "found", "2": "notfound", "3": "notfound", "4": "transient", "5": "transient",
                      "6": "notfound", "7": "transient", "8": "transient", "9": "notfound", "timeout": "transient"}
    assert resolver.resolve(Citation("pmid", "1", "c")).record == "record 1"
    assert resolver.resolve(Citation("doi", "10.1/x", "c")).status == "transient"  # no template: not judged


def test_http_record_resolver_fetches_arxiv_abstract_pages() -> None:
    """Through a real loopback server in the shape of arXiv's abstract pages: the normalised id
    (old-style ids keep their slash) goes into the template; an id arXiv lacks is a 404."""
    answer = "See arXiv:hep-th/9901001v2, https://arxiv.org/pdf/2301.00005v1.pdf and arXiv:2399.99999."
    with serve_records() as records, httpx.Client() as client:
        resolver = HttpRecordResolver(client, {"arxiv": f"{records.url}/abs/{{id}}"})
        got = {c.value: resolver.resolve(c) for c in extract_citations(answer)}
    assert {v: r.status for v, r in got.items()} == {"hep-th/9901001": "found", "2301.00005": "found",
                                                    "2399.99999": "notfound"}
    assert records.log == ["/abs/hep-th/9901001", "/abs/2301.00005", "/abs/2399.99999"]
    assert 'content="2301.00005"' in (got["2301.00005"].record or "") and got["2399.99999"].detail == "HTTP 404"


class Flaky:
    """Transient ``fails`` times per citation, then the scripted outcome."""

    def __init__(self, outcomes: dict[str, Resolution], fails: int) -> None:
        self.outcomes, self.fails, self.calls = outcomes, fails, 0

    def resolve(self, citation: Citation) -> Resolution:
        self.calls += 1
        if self.calls <= self.fails:
            return Resolution("transient", detail="HTTP 503")
        return self.outcomes.get(citation.value, Resolution("transient", detail="down"))


def test_transient_is_retried_then_excluded() -> None:
    waits: list[float] = []
    flaky = Flaky({"1": Resolution("found", "paper one")}, fails=2)
    auditor = CitationAuditor(RoutingResolver({"pmid": flaky}), max_attempts=3, backoff_s=0.1, sleep=waits.append)
    (check,) = auditor.audit("Shown in PMID 1.")
    assert check.existence == "found" and check.attempts == 3 and waits == [0.1, 0.2]
    (down,) = auditor.audit("Shown in PMID 9.")
    assert down.existence == "transient" and down.attempts == 3
    rates = citation_rates([check, down])
    assert rates["existence"]["transient"] == 1 and rates["existence"]["rate"]["n"] == 1
    assert rates["existence"]["rate"]["rate"] == 1.0
    assert not down.no_resolver and rates["no_resolver"]["pmid"] == 0  # down, not unresolvable


def test_a_resolvers_retry_after_is_honoured_up_to_a_minute() -> None:
    answers = iter([httpx.Response(429, headers={"retry-after": "7"}),
                    httpx.Response(503, headers={"retry-after": "86400"}), httpx.Response(200, text="record")])
    client = httpx.Client(transport=httpx.MockTransport(lambda r: next(answers)))
    waits: list[float] = []
    auditor = CitationAuditor(RoutingResolver({"pmid": HttpRecordResolver(client, {"pmid": "https://r.test/{id}"})}),
                              max_attempts=3, backoff_s=0.5, sleep=waits.append)
    (check,) = auditor.audit("Shown in PMID 1.")
    assert check.existence == "found" and check.attempts == 3 and waits == [7.0, 60.0]


def test_a_kind_without_resolver_is_not_retried() -> None:
    waits: list[float] = []
    auditor = CitationAuditor(RoutingResolver({}), max_attempts=3, backoff_s=0.5, sleep=waits.append)
    (check,) = auditor.audit("See https://example.org/page.")
    assert (check.kind, check.existence, check.attempts) == ("url", "transient", 1) and waits == []
    assert "no resolver" in check.detail and citation_rates([check])["existence"]["rate"]["n"] == 0
    assert check.no_resolver and check.as_dict()["no_resolver"] is True
    assert citation_rates([check])["no_resolver"] == {k: int(k == "url") for k in CITATION_KINDS}


# -- L2 support and wrong papers ------------------------------------------------------------


def test_support_judged_from_the_record_and_wrong_papers() -> None:
    records = {"1": Resolution("found", "Aspirin reduces fever."), "2": Resolution("found", "A study of knees."),
               "3": Resolution("found", "Aspirin reduces fever in adults only."), "4": Resolution("notfound")}
    rules = [("PMID 1", ['{"support": "yes", "reasoning": "states it"}']),
             ("PMID 2", ['{"support": "no", "reasoning": "different topic"}']),
             ("PMID 3", ['{"support": "partial", "reasoning": "adults only"}'])]
    answer = ("Aspirin reduces fever in children (PMID 1).\nIt also cures knees (PMID 2).\n"
              "Works at any age (PMID 3).\nSee also PMID 4.")
    with serve_judge(rules) as fake:
        client = ChatClient.connect(fake.url, retry=RetryPolicy(max_attempts=1))
        support = SupportJudge(LLMJudge(client, JudgeSettings(model="judge-m")))
        checks = CitationAuditor(RoutingResolver({"pmid": Flaky(records, 0)}), support).audit(answer)
        client.close()
    assert [(c.value, c.existence, c.support, c.wrong_paper) for c in checks] == [
        ("1", "found", "yes", False), ("2", "found", "no", True), ("3", "found", "partial", False),
        ("4", "notfound", None, False)]
    assert len(fake.requests) == 3  # a record that does not exist is not judged
    user = fake.requests[1]["messages"][-1]["content"]
    assert "pmid:2" in user and "A study of knees." in user and "It also cures knees (PMID 2)." in user
    assert [c.support_judge for c in checks][3] is None
    assert checks[0].support_judge == {"model": "judge-m", "prompt": "citation_support_v1",
                                       "prompt_sha256": support.prompt.sha256}
    assert checks[0].as_dict()["support_judge"]["prompt_sha256"] == support.prompt.sha256
    rates = citation_rates(checks)
    assert rates["existence"]["rate"]["rate"] == 0.75 and rates["support"]["judged"] == 3
    assert rates["support"]["rate_yes"]["count"] == 1 and rates["wrong_paper"]["count"] == 1
    assert rates["wrong_paper"]["rate"] == pytest.approx(1 / 3, abs=1e-6)


def test_rates_hand_computed_with_wilson_bounds() -> None:
    checks = [CitationCheck("pmid", str(i), "found", "yes", 1) for i in range(8)] + \
             [CitationCheck("doi", "d", "found", "no", 1), CitationCheck("nct", "n", "notfound", None, 1),
              CitationCheck("url", "u", "transient", None, 3), CitationCheck("docid", "x", "found", None, 1)]
    rates = citation_rates(checks)
    assert rates["cited"] == 12 and rates["by_kind"] == {"arxiv": 0, "doi": 1, "docid": 1, "nct": 1, "pmid": 8,
                                                     "url": 1}
    assert rates["existence"]["rate"]["count"] == 10 and rates["existence"]["rate"]["n"] == 11
    assert rates["support"]["unjudged_found"] == 1 and rates["support"]["judged"] == 9
    # Wilson 95% for 8/9, as statsmodels proportion_confint(8, 9, method="wilson") gives it
    assert rates["support"]["rate_yes"]["ci"] == pytest.approx([0.565000, 0.980109], abs=1e-5)
