"""The scripted agent of ``drsearch dev model --script bioagent``: it calls every biomedical tool.

Per question (a request's turn is the number of assistant messages in it):

- turn 0: five native calls at once: pubmed, clinicaltrialsgov, openfda, opentargets, chembl
  (one of them, when the question asks for it, with arguments outside the schema);
- turn 1: five more: uniprot, pubchem, kegg, ncbi_datasets, biomcp;
- turn 2 on: the answer: the PMIDs and NCT numbers the tool answers named, in order of first
  appearance (``I do not know.`` when none).

A pure function of the request (the tool answers are in it), so a run against it is
byte-identical when repeated, and its calls reach the fixture records of ``drsearch dev apis``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .chat import Completion, completion

ROUNDS: tuple[tuple[tuple[str, dict[str, Any]], ...], ...] = (
    (
        ("pubmed", {"max_results": 3, "query": "BNT162b2 vaccine efficacy"}),
        ("clinicaltrialsgov", {"nct_id": "NCT04368728"}),
        ("openfda", {"endpoint": "drug/label", "search": 'openfda.generic_name:"aspirin"'}),
        (
            "opentargets",
            {"query": 'query { target(ensemblId: "ENSG00000141510") { id approvedSymbol approvedName } }'},
        ),
        ("chembl", {"chembl_id": "CHEMBL25", "resource": "molecule"}),
    ),
    (
        ("uniprot", {"accession": "P04637"}),
        ("pubchem", {"identifier": "aspirin", "namespace": "name", "operation": "property"}),
        ("kegg", {"database": "genes", "operation": "find", "query": "tp53"}),
        ("ncbi_datasets", {"gene_ids": [7157]}),
        ("biomcp", {"action": "fetch", "domain": "article", "id": "33301246"}),
    ),
)
BAD_CALL = ("chembl", {"chembl_id": "aspirin"})  # outside the schema: a tool error, never sent
_IDS = re.compile(r"\b(?:PMID:? ?\d{6,9}|NCT\d{8})\b")


def _call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    return {
        "function": {"arguments": json.dumps(arguments, sort_keys=True), "name": name},
        "id": call_id,
        "type": "function",
    }


class BioToolAgent:
    """The responder of ``--script bioagent`` (see the module)."""

    def list_models(self) -> tuple[int, dict[str, Any]]:
        return 200, {"data": [{"id": "scripted-bioagent", "object": "model"}], "object": "list"}

    def respond(self, body: dict[str, Any]) -> tuple[int, Completion]:
        model = str(body.get("model", "scripted-bioagent"))
        if "seed" not in body:  # drsearch run's endpoint probe
            return 200, completion("OK", model)
        messages: list[dict[str, Any]] = list(body.get("messages", []))
        turn = sum(m.get("role") == "assistant" for m in messages)
        prompt = "\n".join(str(m.get("content") or "") for m in messages)
        if turn < len(ROUNDS):
            calls = list(ROUNDS[turn])
            if turn == 0 and "invalid" in prompt.split("\n")[0].casefold():
                calls[-1] = BAD_CALL
            return 200, completion(
                None, model, [_call(n, a, f"c{turn}-{i}") for i, (n, a) in enumerate(calls)], prompt
            )
        read = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "tool")
        ids = list(
            dict.fromkeys(m.replace("PMID: ", "PMID ").replace("PMID:", "PMID ") for m in _IDS.findall(read))
        )
        return 200, completion(", ".join(ids) if ids else "I do not know.", model, prompt=prompt)


__all__ = ["BAD_CALL", "ROUNDS", "BioToolAgent"]
