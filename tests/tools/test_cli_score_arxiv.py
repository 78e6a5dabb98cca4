"""arXiv citations through the real ``drsearch score --dataset openbiorq``: the behaviour
metrics' wrong-paper rate of arXiv-sourced items, and the citation audit resolving arXiv ids
against a loopback record service in the shape of arXiv's abstract pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from drsearch.dev.judge import serve_judge

from ..benchmark.record_server import serve_records
from .test_cli_score import BIO_CHECKLIST, cli, episode_record, write_run

ANSWERS = {
    # the source itself, cited by link (the source id's version suffix is not part of the paper)
    "arXiv:2301.00005v2#0": "Predicted aligned error does not yet predict affinity (arxiv.org/abs/2301.00005).",
    # another arXiv paper (a record that exists, judged not to support the claim) and one that does not exist
    "arXiv:2302.00006#0": "Federated training matches pooled training (https://arxiv.org/pdf/2301.00005v1.pdf).\n"
                          "See also arXiv:2399.99999v1.",
    # no arXiv id cited: not counted in the arXiv wrong-paper rate
    "arXiv:2302.00006#1": "Label quality decides it (PMID: 31000001).",
    "PMID:31000002#0": "No sources for this one.",
}
WRONG_CLAIM = "Federated training matches pooled training"
"""The claim line the support judge (scripted) finds unsupported by the record it cites."""


def _questions(tmp_path: Path) -> Path:
    questions = tmp_path / "bio.jsonl"
    questions.write_text("".join(json.dumps({"task_id": q, "question": f"Is {q} settled?", "track": "computational",
                                             "checklist": BIO_CHECKLIST}) + "\n" for q in ANSWERS))
    return questions


def _score(run: Path, questions: Path, out: Path, *record_urls: str) -> tuple[dict[str, Any], list[str]]:
    """``scores.json`` and the judge's user messages."""
    audit = ["--audit-citations", *(a for url in record_urls for a in ("--record-url", url))] if record_urls else []
    with serve_judge([(WRONG_CLAIM, ['{"support": "no", "reasoning": "about another study"}'])]) as judge:
        rc, text = cli("score", str(run), "--dataset", "openbiorq", "--questions", str(questions),
                       "--judge-model", "judge-m", "--base-url", judge.url, "--backoff", "0", *audit,
                       "--judge-cache", str(out.with_suffix(".cache.sqlite3")), "--out", str(out))
    assert rc == 0, text
    return json.loads(out.read_text()), [r["messages"][-1]["content"] for r in judge.requests]


def test_arxiv_wrong_paper_rate_and_citation_audit(tmp_path: Path) -> None:
    questions = _questions(tmp_path)
    run = write_run(tmp_path / "run", [episode_record(q, i, "answered", a) for i, (q, a) in enumerate(ANSWERS.items())])
    with serve_records() as records:
        scores, asked = _score(run, questions, tmp_path / "scores.json", f"arxiv={records.url}/abs/{{id}}")
    # behaviour: 2 arXiv-sourced answers cite arXiv ids; the one citing another paper is the wrong paper
    wrong = scores["behaviour"]["source_not_cited"]
    assert (wrong["arxiv"]["count"], wrong["arxiv"]["n"]) == (1, 2)
    assert (wrong["pmid"]["count"], wrong["pmid"]["n"]) == (0, 0)
    # the audit: ids requested in their normalised form (no version, no .pdf)
    assert sorted(records.log) == ["/abs/2301.00005", "/abs/2301.00005", "/abs/2399.99999"]
    citations = scores["citations"]
    assert citations["by_kind"] == {"arxiv": 3, "doi": 0, "docid": 0, "nct": 0, "pmid": 1, "url": 0}
    assert {k: citations["existence"][k] for k in ("found", "notfound", "transient")} == \
        {"found": 2, "notfound": 1, "transient": 1}
    assert citations["existence"]["rate"]["n"] == 3  # the PMID without a resolver is left out, and counted
    assert citations["no_resolver"] == {"arxiv": 0, "doi": 0, "docid": 0, "nct": 0, "pmid": 1, "url": 0}
    assert (citations["wrong_paper"]["count"], citations["wrong_paper"]["n"]) == (1, 2)
    graded = {g["question_id"]: g["judge"]["citations"]
              for g in map(json.loads, (tmp_path / "scores.graded.jsonl").read_text().splitlines())}
    assert [(c["kind"], c["value"], c["existence"], c["wrong_paper"]) for c in graded["arXiv:2302.00006#0"]] == [
        ("arxiv", "2301.00005", "found", True), ("arxiv", "2399.99999", "notfound", False)]
    # the support judge read the abstract page the record service answered, with the line citing it
    support = [m for m in asked if "arxiv:2301.00005" in m]
    assert len(support) == 2 and all("predicts measured binding affinity" in m for m in support)
    assert any(WRONG_CLAIM in m for m in support)
    (pmid,) = graded["arXiv:2302.00006#1"]
    assert (pmid["kind"], pmid["existence"], pmid["attempts"], pmid["detail"]) == \
        ("pmid", "transient", 1, "no resolver for pmid")


def test_arxiv_ids_without_a_record_url_are_transient_never_found(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A kind with no resolver is counted as transient (not retried, left out of the existence
    rate) and says why: never a silent found or notfound."""
    questions = _questions(tmp_path)
    run = write_run(tmp_path / "run", [episode_record(q, i, "answered", a) for i, (q, a) in enumerate(ANSWERS.items())])
    with serve_records() as records:
        scores, _ = _score(run, questions, tmp_path / "scores.json", f"pmid={records.url}/pmid/{{id}}")
    assert records.log == ["/pmid/31000001"]
    citations = scores["citations"]
    assert citations["by_kind"]["arxiv"] == 3 and citations["no_resolver"]["arxiv"] == 3
    assert {k: citations["existence"][k] for k in ("found", "notfound", "transient")} == \
        {"found": 1, "notfound": 0, "transient": 3}
    graded = [c for line in (tmp_path / "scores.graded.jsonl").read_text().splitlines()
              for c in json.loads(line)["judge"]["citations"] if c["kind"] == "arxiv"]
    assert {(c["existence"], c["attempts"], c["detail"]) for c in graded} == {("transient", 1, "no resolver for arxiv")}
    assert scores["behaviour"]["source_not_cited"]["arxiv"]["n"] == 2  # behaviour needs no resolver
    warnings = [line for line in capsys.readouterr().err.splitlines() if "no resolver" in line]
    assert warnings == ["drsearch: warning: citation audit: 3 citation(s) of a kind with no resolver (3 arxiv): "
                        "transient, left out of the existence rate (--record-url KIND=URL for pmid|doi|nct|arxiv; "
                        "--database or --search for docids and URLs)"]


def test_a_bad_record_url_names_arxiv_among_the_kinds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", [episode_record("arXiv:2301.00005v2#0", 0, "answered", "x")])
    rc, _ = cli("score", str(run), "--dataset", "openbiorq", "--questions", str(_questions(tmp_path)),
                "--judge-model", "j", "--base-url", "http://127.0.0.1:9", "--audit-citations",
                "--record-url", "arxv=http://x/{id}")
    err = capsys.readouterr().err
    assert rc == 2 and "expected pmid|doi|nct|arxiv=URL with {id} in it" in err and "Traceback" not in err, err
