"""The DrBencher generator's scripted model (``drsearch dev model --script drbencher``; the tests'
fixture model): rule-based replies (:class:`drsearch.dev.chat.Rule`) that are
pure functions of the prompt, with the failure cases the tests pin built in:

- clues: one fact per chain, naming the chain's intermediate entity (hops 1), or, when an earlier
  fact stated that first hop already, the second hop naming both entities (hops 2); except
  - Austria-Hungary (Q28513): "It is linked to Vienna." for every chain (one triple, repeated);
  - Munich (Q1726): the Isar → Danube chain as a hop-2 fact that names only the Danube
    (multi-hop flattening);
  - Tokyo (Q1490) and Innsbruck (Q1735): "hosted the 1964 Olympic Games", "twinned with a
    city" — facts that do not name their objects, true of both cities (not unique);
  - Vienna (Q1741): its first fact rendered with "produced by" (an unmapped relation);
  - K2 (Q43512): a reply without JSON (unparseable_reply);
- support: a fact is supported iff each of its capitalised words (after the first) is in the
  article, or, with none, a word of six letters or more is;
- compose: the clues, then the task, as one question;
- relations: "produced by" maps to no fact;
- the V1 solver (closed-book) answers the Mount Everest pendulum question right, nothing else.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .chat import Rule

MODEL = "generator"


def _prompt(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content") or "") for m in body["messages"])


def clues(body: dict[str, Any]) -> str:
    text = _prompt(body)
    qid = re.search(r"^Entity: .* \((Q\d+)\)$", text, re.M).group(1)  # type: ignore[union-attr]
    chains = json.loads(text.split("CHAINS_JSON: ", 1)[1])
    if qid == "Q43512":
        return "Sorry, I cannot write clues about mountains."
    facts = []
    stated: set[tuple[str, str]] = set()
    for i, c in enumerate(chains):
        fact = {"chain": i, "hops": 1, "text": f"It is linked to {c['mid_label']}.",
                "triple": [qid, c["p1"], c["mid"]]}
        if qid == "Q1726" and c["mid"] == "Q106588" and c["obj"] == "Q1653":
            fact = {"chain": i, "hops": 2, "text": "It lies on a river that flows into the Danube.",
                    "triple": [c["mid"], c["p2"], c["obj"]]}
        elif qid in ("Q1490", "Q1735") and c["p1"] == "P793":
            fact = {**fact, "text": "It hosted the 1964 Olympic Games."}
        elif qid in ("Q1490", "Q1735") and c["p1"] == "P190":
            fact = {**fact, "text": "It is twinned with a city."}
        elif qid == "Q1741" and i == 0:
            fact = {**fact, "text": f"It is produced by the {c['mid_label']}."}
        elif (c["p1"], c["mid"]) in stated and qid != "Q28513":
            text = f"It is linked to {c['mid_label']}, which is linked to {c['obj_label']}."
            fact = {"chain": i, "hops": 2, "text": text, "triple": [c["mid"], c["p2"], c["obj"]]}
        stated.add((c["p1"], c["mid"]))
        facts.append(fact)
    return "Here are the facts:\n```json\n" + json.dumps({"facts": facts}) + "\n```"


def support(body: dict[str, Any]) -> str:
    text = _prompt(body)
    article = text.split("): ", 1)[1].split("\nFact about ", 1)[0]
    fact = text.rsplit(": ", 1)[1]
    words = [w.strip(".,;:") for w in fact.split()[1:]]
    names = [w for w in words if w[:1].isupper()]
    ok = all(n in article for n in names) if names else any(len(w) >= 6 and w in article for w in words)
    return json.dumps({"supported": ok})


def compose(body: dict[str, Any]) -> str:
    text = _prompt(body)
    clue_block = text.split("Clues:\n", 1)[1].split("\nReference answer", 1)[0]
    blocks = re.split(r"\nClues about the second entity[^\n]*\n", clue_block)
    task = text.split("then ask to compute ", 1)[1].split(" The answer must be", 1)[0]
    described = " ".join(c[2:].replace("It ", "The entity " if i == 0 else "The second entity ", 1)
                         for i, block in enumerate(blocks) for c in block.splitlines())
    return json.dumps({"question": f"{described} Compute {task.rstrip('.')}."})


def relations(body: dict[str, Any]) -> str:
    question = _prompt(body).split("Question: ", 1)[1].split("\nFacts:", 1)[0]
    if "produced by" in question:
        return json.dumps({"ok": False, "unmapped": ["produced by"]})
    return json.dumps({"ok": True})


SOLVER = "solver"
"""The V1 model: knows the Mount Everest pendulum answer from memory, nothing else."""

SOLVER2 = "solver2"
"""The V2 model: searches the support corpus, then answers the Mount Everest pendulum question
right (from the elevation it read), nothing else."""


def tool_solver(body: dict[str, Any]) -> dict[str, Any] | str:
    messages = body["messages"]
    turn = sum(m["role"] == "assistant" for m in messages)
    question = next(m["content"] for m in messages if m["role"] == "user")
    if turn == 0:
        args = json.dumps({"k": 3, "query": "Himalayas highest mountain elevation"})
        return {"content": None, "role": "assistant", "tool_calls": [
            {"function": {"arguments": args, "name": "search"}, "id": "s0", "type": "function"}]}
    read = str(messages[-1].get("content") or "")
    if "pendulum clock" in question and "Himalayas" in question and "8,848.86 metres" in read:
        return "drift = 86400 × (6379848.86 / 6371000 − 1) s/day\nFinal answer: 120.00 s/day"
    return "I do not know."


SOLVER_DOMAIN = "solver-domain"
"""A V2 model of the API domains: asks the first domain tool offered about a fixed record
(Log4Shell's EPSS, Apple's CIK, aspirin's properties), then answers with the number it read
(a scripted agent: it does not read the question)."""

DOMAIN_CALLS = (("epss", {"cve_id": "CVE-2021-44228"}), ("sec_tickers", {"ticker": "AAPL"}),
                ("pubchem", {"identifier": "2244", "namespace": "cid"}))


def domain_tool_solver(body: dict[str, Any]) -> dict[str, Any] | str:
    messages = body["messages"]
    if not any(m["role"] == "tool" for m in messages):
        offered = {t["function"]["name"] for t in body.get("tools", [])}
        for name, args in DOMAIN_CALLS:
            if name in offered:
                call = {"function": {"arguments": json.dumps(args), "name": name}, "id": "d0",
                        "type": "function"}
                return {"content": None, "role": "assistant", "tool_calls": [call]}
        return "I do not know."
    read = str(messages[-1].get("content") or "")
    found = re.search(r'"(?:epss|cik_str|MolecularWeight)": ?"?([0-9.]+)', read)
    return f"Final answer: {found.group(1)}" if found else "I do not know."


RULES = [
    Rule(SOLVER2, (), tool_solver),
    Rule(SOLVER_DOMAIN, (), domain_tool_solver),
    Rule(SOLVER, ("Himalayas", "pendulum clock"), "About 120.00 s/day."),
    Rule(SOLVER, (), "I do not know."),
    Rule(MODEL, "Write clues about an entity", clues),
    Rule(MODEL, "Does the article support the fact?", support),
    Rule(MODEL, "Write one question.", compose),
    Rule(MODEL, "Check a question against the facts", relations),
]
