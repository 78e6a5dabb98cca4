"""The rule-based models of the OpenBioRQ-style pipeline tests (served by drsearch.dev.chat).

They play the writer (extractor, refiner, rubric writer) and the judge (self-containment,
rubric criteria) over data/openbiorq/sources.jsonl, whose sources state their open questions
as "It remains unknown whether …" / "It is unclear whether …" sentences. Some replies are
wrong on purpose, so every rejection path runs (the counts are in FIXTURE_COUNTS):

- arXiv:2302.00006: the extractor answers prose, not JSON → the source is dropped (unparseable);
- PMID:31000007#1: the refiner labels it with a class outside the taxonomy → dropped;
- PMID:31000001#0 and PMID:31000002#0 raise the same question → the second is a near-duplicate;
- DOC:guideline-2024-08#0: the first rubric draft has no must_avoid → redrafted once;
- DOC:guideline-2024-08#1: the first draft has a criterion the judge finds unspecific → redrafted once;
- PMID:31000009#0: every draft holds a vague phrase → dropped after 3 redrafts.
"""

from __future__ import annotations

import json
import re
from typing import Any

from drsearch.dev.chat import Rule

OPEN = re.compile(r"It (?:remains unknown|is unclear) whether ([^.]+)\.")
FIXTURE_COUNTS = {"sources": 10, "extracted": 14, "refined": 13, "deduped": 12, "rubrics": 11}


def _prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


def _field(prompt: str, name: str) -> str:
    match = re.search(rf"^{name}: (.*)$", prompt, re.M)
    assert match, f"no {name} in the prompt"
    return match.group(1)


def extractor(body: dict[str, Any]) -> str:
    prompt = _prompt(body)
    if _field(prompt, "Source id") == "arXiv:2302.00006":
        return "This preprint raises one question about federated training; I would rather describe it in prose."
    clauses = OPEN.findall(_field(prompt, "Text"))
    return json.dumps({"questions": [f"Whether {c}?" for c in clauses]})


def _clause(question: str) -> str:
    return question.removeprefix("Whether ").rstrip("?")


def refiner(body: dict[str, Any]) -> str:
    prompt = _prompt(body)
    clause = _clause(_field(prompt, "Extracted question"))
    title = _field(prompt, "Source title")
    if re.search(r"\b(this|these)\b", clause):
        clause = re.sub(r"\b(this|these)\b", "the", clause)
        question = f"In the setting of '{title}', is it known whether {clause}?"
    else:
        question = f"Is it known whether {clause}?"
    label = "pharmacology" if "safe" in clause else "medical_ai_informatics" if "predict" in clause \
        else "clinical_medicine"
    if _field(prompt, "Source id") == "PMID:31000007" and "persists" in clause:
        label = "longevity"  # not a class of the taxonomy
    return json.dumps({"difficulty_hints": ["few trials", "heterogeneous outcomes", "long follow-up"],
                       "initial_status": "open", "self_contained_question": question,
                       "status_reasoning": "The source says it is unknown.", "taxonomy": label,
                       "tool_hints": ["literature search", "trial registry"]})


def self_contained(body: dict[str, Any]) -> str:
    question = _field(_prompt(body), "Question")
    vague = re.search(r"\b(this|these)\b", question, re.I)
    return json.dumps({"reason": "refers to 'this'" if vague else "names what it asks",
                       "self_contained": "no" if vague else "yes"})


def _criteria(clause: str) -> list[dict[str, Any]]:
    return [{"text": f"Names at least one study that tested whether {clause}", "type": "must_mention", "weight": 3},
            {"text": f"States that no completed trial has settled whether {clause}", "type": "must_acknowledge",
             "weight": 2},
            {"text": f"Cites a source for each finding it reports on whether {clause}", "type": "must_ground",
             "weight": 2},
            {"text": f"Names the outcome measure used when asking whether {clause}", "type": "must_mention",
             "weight": 1},
            {"text": f"Claims that it is established that {clause}", "type": "must_avoid", "weight": 3}]


def rubric_writer(body: dict[str, Any]) -> str:
    prompt = _prompt(body)
    question = _field(prompt, "Question")
    clause = question.split("whether ", 1)[1].rstrip("?")
    criteria = _criteria(clause)
    redraft = "Problems with your previous draft" in prompt
    if "delivered remotely" in clause and not redraft:
        criteria[4] = {"text": f"Names the comparator used when asking whether {clause}", "type": "must_mention",
                       "weight": 1}
    if "cost-effective" in clause and not redraft:
        criteria[3] = {"text": "Names at least one published study", "type": "must_mention", "weight": 1}
    if "circulating tumour DNA" in clause:
        criteria[0] = {"text": "Discusses the evidence adequately", "type": "must_mention", "weight": 3}
    return json.dumps({"criteria": criteria})


def criteria_judge(body: dict[str, Any]) -> str:
    prompt = _prompt(body)
    words = {w for w in re.findall(r"[a-z-]{6,}", _field(prompt, "Question").lower())}
    listed = json.loads(_field(prompt, "Criteria"))
    return json.dumps({"criteria": [{"binary": True, "id": c["id"],
                                     "specific": bool(words & set(re.findall(r"[a-z-]{6,}", c["text"].lower())))}
                                    for c in listed]})


_WORD = re.compile(r"[a-z0-9-]{6,}")
_COMMON = {"whether", "patients", "adults", "people", "setting", "reported", "trial", "trials"}


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower())) - _COMMON


def openness_judge(body: dict[str, Any]) -> str:
    """Answered when a trial registration has posted results, or when a record that shares at
    least three content words with the question 'reported that'; open when related records
    exist; unknown when there is no evidence. For the cabotegravir question it cites an id that
    is not in the bundle (its verdict must become unknown)."""
    prompt = _prompt(body)
    question = _field(prompt, "Question")
    evidence = json.loads(_field(prompt, "Evidence"))
    if "cabotegravir" in question:
        return json.dumps({"evidence_ids": ["corpus:d-not-retrieved"], "reasoning": "I recall a 2024 report.",
                           "status": "answered"})
    posted = [e["id"] for e in evidence if e["id"].startswith("ctgov:") and "results posted: yes" in e["snippet"]]
    related = [e for e in evidence if len(_words(question) & _words(e["snippet"] + " " + e["title"])) >= 3]
    settled = [e["id"] for e in related if "reported that" in e["snippet"]]
    if posted or settled:
        return json.dumps({"evidence_ids": posted + settled, "reasoning": "results are out", "status": "answered"})
    if related or evidence:
        cited = [e["id"] for e in related] or [evidence[0]["id"]]
        return json.dumps({"evidence_ids": cited, "reasoning": "no result yet", "status": "open"})
    return json.dumps({"evidence_ids": [], "reasoning": "nothing retrieved", "status": "unknown"})


def gold_writer(body: dict[str, Any]) -> str:
    """The gold stage's model: a reference answer citing two PMIDs, one per line (the first a record
    the tests' record service has, the second one it does not); prose for one DOC item."""
    question = _field(_prompt(body), "Question")
    if "delivered remotely" in question:
        return "I would rather answer in prose: it is unsettled."
    clause = _clause(question.split("whether ", 1)[1]) if "whether " in question else question
    return json.dumps({"answer": f"No completed trial has settled whether {clause} (PMID: 31000001).\n"
                                 f"A cohort established that {clause} (PMID: 39999999)."})


RULES = [
    Rule("gold", "Task: write a reference answer.", gold_writer),
    Rule("writer", "Task: extract every open research question.", extractor),
    Rule("writer", "Task: refine an extracted open question.", refiner),
    Rule("writer", "Task: write a checklist rubric.", rubric_writer),
    Rule("judge", "Task: judge self-containment.", self_contained),
    Rule("judge", "Task: check rubric criteria.", criteria_judge),
    Rule("judge", "Task: judge openness from evidence.", openness_judge),
]
