"""Behaviour metrics: zero-tool, cite, non-attempt (written refusals included) and source-not-cited rates, by hand."""

from __future__ import annotations

from typing import Any

from drsearch.benchmark.behaviour import behaviour_metrics, is_refusal, read_behaviour
from drsearch.benchmark.stats import wilson_interval


def episode(answer: str | None, status: str = "answered", tools: int = 0) -> dict[str, Any]:
    return {"accounting": {"tool_calls": {"search": tools}}, "final_answer": answer, "status": status,
            "tool_calls": [{"name": "search"}] * tools}


def test_rates_by_hand() -> None:
    episodes = {
        "PMID:111#0": episode("See PMID: 111 and PMID 222.", tools=2),  # cites its own source: right paper
        "PMID:333#0": episode("PMID:444 settles it."),  # zero tools; cites another PMID: wrong paper
        "NCT01234567#0": episode("Trial nct01234567 is recruiting.", tools=1),  # its own registration
        "NCT07654321#0": episode("See NCT01111111.", tools=1),  # another registration: wrong paper
        "DOC:x#0": episode("No idea, sorry.", tools=1),  # no citation
        "DOC:y#0": episode("", tools=1),  # empty: a non-attempt
        "DOC:z#0": episode("half", status="turn_cap", tools=5),  # unfinished: a non-attempt
    }
    ids = [*episodes, "PMID:555#0"]  # no episode at all: a non-attempt
    m = behaviour_metrics(episodes, ids)
    assert (m["non_attempt"]["count"], m["non_attempt"]["n"]) == (3, 8)
    assert m["non_attempt"]["ci95"] == list(wilson_interval(3, 8))
    assert (m["zero_tool"]["count"], m["zero_tool"]["n"]) == (1, 5)
    assert (m["cite"]["count"], m["cite"]["n"]) == (4, 5)
    assert (m["source_not_cited"]["pmid"]["count"], m["source_not_cited"]["pmid"]["n"]) == (1, 2)
    assert (m["source_not_cited"]["nct"]["count"], m["source_not_cited"]["nct"]["n"]) == (1, 2)


def test_questions_without_a_source_id_have_no_source_not_cited_rate() -> None:
    m = behaviour_metrics({"q-1": episode("PMID: 1")}, ["q-1"])
    assert m["source_not_cited"]["pmid"] == {"ci95": [0.0, 1.0], "count": 0, "n": 0, "rate": 0.0}
    assert m["cite"]["count"] == 1


def test_source_not_cited_for_arxiv_sources() -> None:
    """The source id's version suffix and the citation's form do not matter: the paper does."""
    episodes = {
        "arXiv:2101.01234v2#0": episode("As shown in https://arxiv.org/abs/2101.01234.", tools=1),  # right paper
        "arXiv:2101.01234v2#1": episode("See arXiv:2101.01234v3 (and arXiv:1706.03762).", tools=1),  # right too
        "arXiv:hep-th/9901001#0": episode("[duality](https://arxiv.org/pdf/HEP-TH/9901001v1.pdf)", tools=1),
        "arXiv:2302.00006#0": episode("arxiv.org/abs/2301.00005 settles it.", tools=1),  # another paper: wrong
        "arXiv:2302.00006#1": episode("PMID: 31000001 settles it.", tools=1),  # no arXiv id cited: not counted
        "arXiv:2302.00006#2": episode("No idea.", tools=1),  # nothing cited: not counted
        "PMID:31000001#0": episode("arXiv:2302.00006 again.", tools=1),  # a PMID source citing arXiv: not counted
    }
    m = behaviour_metrics(episodes, list(episodes))
    assert (m["source_not_cited"]["arxiv"]["count"], m["source_not_cited"]["arxiv"]["n"]) == (1, 4)
    assert m["source_not_cited"]["arxiv"]["ci95"] == list(wilson_interval(1, 4))
    assert (m["source_not_cited"]["pmid"]["count"], m["source_not_cited"]["pmid"]["n"]) == (0, 0)
    assert m["cite"]["count"] == 6


def test_an_old_style_arxiv_source_matches_its_canonical_citation() -> None:
    """``math.GT/0309136`` and ``math/0309136`` are one paper (the subject class is no part of the id)."""
    episodes = {"arXiv:math.GT/0309136v1#0": episode("arxiv.org/abs/math/0309136v2", tools=1),
                "arXiv:math.GT/0309136v1#1": episode("arXiv:math/0309137", tools=1)}
    m = behaviour_metrics(episodes, list(episodes))
    assert (m["source_not_cited"]["arxiv"]["count"], m["source_not_cited"]["arxiv"]["n"]) == (1, 2)


def test_written_refusals_count_as_non_attempts_by_the_stated_rule() -> None:
    long_hedge = "I cannot be certain, but " + "the trials point one way. " * 20  # > 400 characters: an attempt
    episodes = {
        "DOC:a#0": episode("I cannot answer this question with the available tools."),  # refusal
        "DOC:b#0": episode("The evidence is thin. I\u2019m unable to say more.", tools=2),  # refusal, 2nd sentence
        "DOC:c#0": episode("I cannot answer fully; see PMID: 123 for the trial."),  # cites: an attempt
        "DOC:d#0": episode(long_hedge),  # too long: an attempt
        "DOC:e#0": episode("It remains unknown; no trial settles it."),  # hedges, does not decline
        "DOC:f#0": episode(None, status="turn_cap"),  # no answer
    }
    assert [is_refusal(str(e["final_answer"])) for e in list(episodes.values())[:5]] == [
        True, True, False, False, False]
    m = behaviour_metrics(episodes, list(episodes))
    assert (m["non_attempt"]["count"], m["non_attempt"]["n"]) == (3, 6)
    assert (m["non_attempt"]["no_answer"], m["non_attempt"]["refusal"]) == (1, 2)
    assert m["non_attempt"]["ci95"] == list(wilson_interval(3, 6))
    assert (m["zero_tool"]["count"], m["zero_tool"]["n"]) == (4, 5)  # a refusal without tools is collapse


def test_the_renamed_metric_reads_from_old_scores_files() -> None:
    old = {"behaviour": {"cite": {}, "non_attempt": {}, "wrong_paper": {"pmid": {"count": 1, "n": 3}},
                         "zero_tool": {}}}
    b = read_behaviour(old)
    assert b is not None and b["source_not_cited"] == {"pmid": {"count": 1, "n": 3}} and "wrong_paper" not in b
    assert b["renamed_from"] == {"source_not_cited": "wrong_paper"}
    new = behaviour_metrics({}, ["PMID:1#0"])
    assert "wrong_paper" not in new and read_behaviour({"behaviour": new}) == new
    assert read_behaviour({}) is None
