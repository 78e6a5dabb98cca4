"""The LLM stages: Clues, Compose, Validate, then Export (docs/GENERATE.md).

Model calls go through the toolkit (``ctx.reply_text``: the OpenAI-compatible client behind
the replay cache); the gold never comes from a model — Compose gets it as a reference only
and Validate re-executes the template.

- **clues** → ``clues.jsonl``, ``support.sqlite3``: the articles are built into a drsearch
  corpus (the grounding store). Per candidate the generator writes one fact per chain
  citing (subject, property, object); a fact is grounded iff its triple is the hop it
  claims of the chain it cites (``hops`` 1: (entity, p1, mid); 2: (mid, p2, obj)) **and** a
  second call judges the entity's article (opened from the corpus) to support it. Checks:
  ``no_article``, ``unparseable_reply``, ``too_few_grounded_facts`` (fewer than 3 distinct
  (subject, predicate, object) facts grounded, each from a distinct chain: one triple stated
  through three chains is one fact).
- **compose** → ``composed.jsonl``: one call describes the unnamed entity with the grounded
  clues and poses the computation. Check: ``unparseable_reply``.

A two-entity template's partner (E = 2) is described as the answer is: its own chains (gold
stage), its own clues grounded in its own article (a reason about it ends ``(partner QID)``),
its clues in the compose prompt, and validate's flattening, uniqueness and relation checks.
- **validate** → ``validated.jsonl``: the checks in order, the first failure rejects:
  ``gold_not_reproduced``, ``entity_named``, ``value_leak``, ``gold_in_question`` (a number the
  numeric grader would accept as the gold, or a text gold as whole words, unless the task or its
  parameters state it and it is not the gold itself), ``multi_hop_flattening``,
  ``not_unique`` (a SPARQL count of the entities, of any type, satisfying every grounded
  fact as the question states it is not exactly 1; an entity the question does not name is
  relaxed to any entity sharing its type or the type's direct superclass, so the count is an
  upper bound), ``unmapped_relation``
  (a model check that every relation phrase maps to a used fact), ``unparseable_reply``.
- **export** (after the diversity filter, :mod:`.filters`) → ``questions.jsonl`` (DR-256
  rows with ``metadata.drbencher``) and
  ``support_docs.jsonl`` (the articles, buildable with ``drsearch build``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ....contract.errors import DocumentNotFoundError
from ....index import Engine
from ....index.build import build as build_index
from ....index.build import read_jsonl
from ..stages import Keep, ModelEndpoint, Outcome, Reject, StageContext
from .checks import flattened, leaked_values, mentions, names_entity, states_gold
from .kgstages import sparql_of
from .llm import CluesReply, ComposeReply, RelationsReply, SupportReply, parse_reply
from .queries import PREFIXES
from .templates import TEMPLATES, values_from_json, verify_gold

CLUES_PROMPT = (
    "Write clues about an entity for a puzzle. For each numbered chain below, write ONE fact about the "
    "entity (call it \"it\", never by name) that uses the first hop (hops 1) or both hops (hops 2) of the "
    "chain. Cite the triple the fact states: for hops 1 the chain's first hop [entity, p1, mid], for hops 2 "
    "its second hop [mid, p2, obj]. Reply with one JSON object only: {{\"facts\": [{{\"chain\": N, "
    "\"hops\": 1 or 2, \"text\": \"...\", \"triple\": [\"Q..\", \"P..\", \"Q..\"]}}]}}.\n"
    "Entity: {label} ({qid})\nChains:\n{chains}\nCHAINS_JSON: {chains_json}")

SUPPORT_PROMPT = (
    "Does the article support the fact? Reply with one JSON object only: {{\"supported\": true}} or "
    "{{\"supported\": false}}.\nArticle ({docid}): {article}\nFact about {label}: {fact}")

COMPOSE_PROMPT = (
    "Write one question. Describe the unnamed entity only through these clues (do not name it, do not state "
    "any of its numeric values), then ask to compute {task}.{params} The answer must be a number in {unit}. "
    "Reply with one JSON object only: {{\"question\": \"...\"}}.\nClues:\n{clues}\n"
    "Reference answer (do not reveal): {gold}")

PARTNER_CLUES = ("Clues about the second entity (unnamed too; the computation involves both, so describe "
                 "each through its own clues):")

RELATIONS_PROMPT = (
    "Check a question against the facts it was built from. Does every relation phrase in the question map to "
    "one of these facts (same relation, not a different one)? Reply with one JSON object only: "
    "{{\"ok\": true}} or {{\"ok\": false, \"unmapped\": [\"phrase\", ...]}}.\nQuestion: {question}\n"
    "Facts:\n{facts}")

UNIQUENESS_LIST = 10
"""Matching entities named in a ``not_unique`` reason (the query asks for one more)."""
SYSTEM = ("Answer the question. Identify the entity it describes, retrieve the values you need, compute, and "
          "give the final answer as a number with its unit.")


def _endpoint(ctx: StageContext) -> ModelEndpoint:
    return ctx.stage.models[0]


def _body(ctx: StageContext, prompt: str, reply: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A stage's request. With ``generator.structured_output`` it also asks for the reply's
    JSON schema (``reply``: its name and schema) the OpenAI way, ``response_format`` of type
    ``json_schema``, strict: a server that constrains decoding (llama.cpp, vLLM) then cannot
    send a reply the stage fails to parse. Off (the default), the body is as it always was."""
    gen = ctx.settings["generator"]
    body: dict[str, Any] = {"messages": [{"content": prompt, "role": "user"}], "seed": gen["seed"],
                            "temperature": gen["temperature"]}
    if gen.get("structured_output"):
        name, schema = reply
        body["response_format"] = {"json_schema": {"name": name, "schema": schema, "strict": True},
                                   "type": "json_schema"}
    return body


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    """A strict JSON-schema object: every property required, no other."""
    return {"additionalProperties": False, "properties": properties, "required": sorted(properties),
            "type": "object"}


CLUE_CHARS = 160
"""A clue is one sentence: its length in a clues schema (a reply of three clues then fits a
small model's token budget instead of being cut off mid-JSON)."""


def clues_schema(qid: str, chains: Sequence[Mapping[str, Any]]) -> tuple[str, dict[str, Any]]:
    """The clues reply as the prompt asks for it: one fact per chain, in the chains' order, each
    citing one hop of its chain (hops 1 with the first hop's triple, or 2 with the second's); the
    text is one sentence (``CLUE_CHARS``) that names the chain's intermediate entity: a 2-hop
    fact goes through it (validation's multi-hop rule), and a 1-hop fact's triple points at it
    (validation's uniqueness count fixes only the entities a question names: "it lies on a river"
    fits every city on one). A hop whose triple an earlier chain offers is not offered again
    when the chain has another (two chains through Austria to Italy state one fact)."""
    per_chain = []
    offered: list[list[str]] = []
    for i, ch in enumerate(chains):
        text = {"pattern": _naming(str(ch["mid_label"])), "type": "string"}
        hops = [(1, [qid, ch["p1"], ch["mid"]]), (2, [ch["mid"], ch["p2"], ch["obj"]])]
        # a triple an earlier chain offers already would be one fact counted once (grounding's
        # distinct facts): offer the other hop, unless both are taken
        fresh = [(n, t) for n, t in hops if t not in offered] or hops
        offered += [t for _, t in hops]
        per_chain.append({"anyOf": [_object({"chain": {"const": i}, "hops": {"const": n}, "text": text,
                                             "triple": {"const": t}}) for n, t in fresh]})
    # "For each numbered chain below, write ONE fact": fact i cites chain i, one per chain
    facts = {"items": False, "maxItems": len(chains), "minItems": len(chains), "prefixItems": per_chain,
             "type": "array"}
    return "clues", _object({"facts": facts})


_TEXT = r'[^"\\\x00-\x1f]'
"""A character of free text in a pattern: no quote, backslash or control character (a JSON string
holds none of them unescaped; a small model's newline inside one made its reply unparseable)."""
_FREE = f"{_TEXT}{{0,{CLUE_CHARS // 2}}}"
"""Free text in a pattern: up to half a clue."""


def _label_pattern(label: str) -> str:
    return "".join(f"\\{c}" if c in ".^$*+?()[]{}|\\/" else c for c in label)


def _naming(label: str) -> str:
    """A pattern for one sentence (of ``CLUE_CHARS`` or so) about "it" (the prompt's word for the
    withheld entity: "It", "Its") that names ``label`` as a word of its own, as validation's
    ``mentions`` reads it: "It", text, a space, the label, a separator."""
    return f"^It{_FREE} {_label_pattern(label)}([ ,.;:]{_FREE})?$"


def compose_schema(labels: Sequence[str], stated: str) -> tuple[str, dict[str, Any]]:
    """The compose reply: a question that names, in the clues' order, each entity its grounded
    clues name (``labels``, distinct): validation's uniqueness count reads the question, and an
    entity it does not name is relaxed to any entity of its type (the count is then rarely 1).
    Between and after them free text (the description, then the computation asked for) whose
    only numbers are those ``stated`` (the task and its parameters as the prompt gives them):
    the prompt hands the model the reference answer, which the question must not give away, nor
    a withheld value (a label keeps its own digits)."""
    numbers = sorted(set(re.findall(r"\d+(?:[.,]\d+)*", stated)), key=lambda n: (-len(n), n))
    char = _TEXT[:-1] + "0-9]"
    if numbers:  # a number is one unit of the text, so digits never stand alone
        char = "(" + "|".join([char, *(re.escape(n) for n in numbers)]) + ")"
    named = "".join(f"{char}{{0,{CLUE_CHARS // 2}}} {_label_pattern(label)}[ ,.;:]" for label in labels)
    ask = f"{char}{{1,{CLUE_CHARS}}}"
    return "question", _object({"question": {"pattern": f"^{named}{ask}$", "type": "string"}})


SUPPORT_SCHEMA = ("support", _object({"supported": {"type": "boolean"}}))
RELATIONS_UNMAPPED = 8
"""At most this many phrases in a relations reply that says ``ok: false``."""
RELATIONS_SCHEMA = ("relations", {"anyOf": [
    # the prompt's two replies: ok with nothing unmapped, or not ok naming what is (bounded: a small
    # model listing phrases without end ran out of tokens mid-JSON)
    _object({"ok": {"const": True},
             "unmapped": {"items": {"type": "string"}, "maxItems": 0, "type": "array"}}),
    _object({"ok": {"const": False}, "unmapped": {
        "items": {"pattern": f"^{_TEXT}{{1,{CLUE_CHARS // 2}}}$", "type": "string"},
        "maxItems": RELATIONS_UNMAPPED, "minItems": 1, "type": "array"}})]})


def predicate_labels(ctx: StageContext, pids: Sequence[str], lang: str) -> dict[str, str]:
    """Labels of properties (``wd:P17 rdfs:label``), one cached query; a pid without one keeps its id."""
    if not pids:
        return {}
    values = " ".join(f"wd:{p}" for p in sorted(set(pids)))
    query = (PREFIXES + f"SELECT ?p ?l WHERE {{ VALUES ?p {{ {values} }} ?p rdfs:label ?l "
             f"FILTER(LANG(?l) = \"{lang}\") }}\nORDER BY ?p ?l\n")
    with sparql_of(ctx) as sparql:
        result = sparql.select(query, "predicate labels")
    labels = {b["p"]["value"].rsplit("/", 1)[1]: b["l"]["value"] for b in result.bindings}
    return {p: labels.get(p, p) for p in pids}


def _chain_lines(label: str, chains: Sequence[Mapping[str, Any]], plabels: Mapping[str, str]) -> str:
    return "\n".join(f"{i}. {label} -[{c['p1']} {plabels.get(c['p1'], c['p1'])}]-> {c['mid_label']} "
                     f"({c['mid']}) -[{c['p2']} {plabels.get(c['p2'], c['p2'])}]-> {c['obj_label']} "
                     f"({c['obj']})" for i, c in enumerate(chains))


def clues(ctx: StageContext) -> None:
    s = ctx.settings
    articles = ctx.stage.inputs[1]
    support = ctx.path("support.sqlite3")
    support.unlink(missing_ok=True)
    build_index(read_jsonl(articles), support)
    by_qid = {str(r["qid"]): str(r["docid"]) for r in ctx.read_jsonl(articles) if "qid" in r}
    items = ctx.read_jsonl("gold.jsonl")
    plabels = predicate_labels(ctx, [p for c in items for ch in all_chains(c) for p in (ch["p1"], ch["p2"])],
                               s["language"])
    endpoint = _endpoint(ctx)
    with Engine.open(support) as engine:
        def article(qid: str) -> tuple[str, str] | None:
            docid = by_qid.get(qid)
            if docid is None:
                return None
            try:
                return docid, engine.open_document(docid=docid).text
            except DocumentNotFoundError:
                return None

        def entity_clues(c: dict[str, Any], entity: dict[str, Any], chains: list[dict[str, Any]],
                         who: str) -> Reject | tuple[str, list[dict[str, Any]]]:
            """(article docid, verdicts) of one withheld entity's clues, or why not."""
            qid, cid = entity["qid"], c["cid"] + who
            found = article(qid)
            if found is None:
                return Reject("no_article", f"no article about {qid}{who} in the support corpus")
            docid, text = found
            prompt = CLUES_PROMPT.format(label=entity["label"], qid=qid,
                                         chains=_chain_lines(entity["label"], chains, plabels),
                                         chains_json=json.dumps(chains, sort_keys=True))
            reply = parse_reply(ctx.reply_text(endpoint, _body(ctx, prompt, clues_schema(qid, chains)),
                                               f"clues {cid}"), CluesReply)
            if reply is None:
                return Reject("unparseable_reply", f"the clues reply for {cid} holds no facts object")
            verdicts = []
            for f in reply.facts:
                verdict = {"chain": f.chain, "hops": f.hops, "text": f.text, "triple": list(f.triple)}
                if f.chain >= len(chains):
                    verdicts.append({**verdict, "verdict": "no_such_chain"})
                    continue
                ch = chains[f.chain]
                hop = [qid, ch["p1"], ch["mid"]] if f.hops == 1 else [ch["mid"], ch["p2"], ch["obj"]]
                if list(f.triple) != hop:
                    verdicts.append({**verdict, "verdict": "triple_not_in_chain"})
                    continue
                judged = parse_reply(ctx.reply_text(endpoint, _body(ctx, SUPPORT_PROMPT.format(
                    docid=docid, article=text, label=entity["label"], fact=f.text), SUPPORT_SCHEMA),
                    f"support {cid} fact {f.chain}"), SupportReply)
                if judged is None:
                    return Reject("unparseable_reply", f"the support verdict for {cid} fact {f.chain} "
                                                       "holds no verdict object")
                verdicts.append({**verdict, "verdict": "grounded" if judged.supported else "unsupported"})
            distinct = len(grounded_facts({"clues": verdicts}))
            if distinct < 3:
                return Reject("too_few_grounded_facts",
                              f"{distinct} distinct grounded fact(s) from distinct chains < 3 "
                              f"({len(verdicts)} facts written){who}")
            return docid, verdicts

        def process(c: dict[str, Any]) -> Outcome:
            got = entity_clues(c, c["entities"][0], c["chains"], "")
            if isinstance(got, Reject):
                return got
            docid, verdicts = got
            entities = list(c["entities"])
            for i, e in enumerate(entities[1:], 1):  # the partner: described (and withheld) as well
                more = entity_clues(c, e, e["chains"], f" (partner {e['qid']})")
                if isinstance(more, Reject):
                    return more
                entities[i] = {**e, "article_docid": more[0], "clues": more[1]}
            return Keep({**c, "article_docid": docid, "clues": verdicts, "entities": entities,
                         "predicate_labels": {p: plabels[p] for ch in all_chains(c)
                                              for p in (ch["p1"], ch["p2"])}})

        kept = ctx.map(items, lambda c: c["cid"], process)
    ctx.write_jsonl("clues.jsonl", kept)


def all_chains(c: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The answer's chains, then each partner's."""
    return [*c["chains"], *(ch for e in c["entities"][1:] for ch in e.get("chains", []))]


def described(c: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Each withheld entity as validation checks it: ``{entity, chains, clues}``, answer first."""
    return [{"chains": c["chains"], "clues": c["clues"], "entity": c["entities"][0]},
            *({"chains": e["chains"], "clues": e["clues"], "entity": e} for e in c["entities"][1:])]


def grounded_facts(c: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The grounded facts, in the order written: at most one per chain and one per (subject,
    predicate, object) triple. Two chains can share their first hop (a country reached for its
    capital and for its neighbour), so counting chains would count one fact twice."""
    chains: set[int] = set()
    triples: set[tuple[str, ...]] = set()
    out = []
    for v in c["clues"]:
        triple = tuple(v["triple"])
        if v["verdict"] == "grounded" and v["chain"] not in chains and triple not in triples:
            chains.add(v["chain"])
            triples.add(triple)
            out.append(v)
    return out


def clue_entities(parts: Sequence[Mapping[str, Any]]) -> list[str]:
    """The labels of the entities the grounded clues state, once each, in the clues' order, answer
    first (``parts``: :func:`described`): each fact's intermediate entity, and a 2-hop fact's
    object too (validation's uniqueness count relaxes an unnamed one to its type, and an entity
    with no type in the KG then matches nothing)."""
    labels: list[str] = []
    for d in parts:
        for f in grounded_facts(d):
            ch = d["chains"][f["chain"]]
            for label in (ch["mid_label"], *((ch["obj_label"],) if f["hops"] == 2 else ())):
                if str(label) not in labels:
                    labels.append(str(label))
    return labels


def _params_text(params: Mapping[str, Any]) -> str:
    """The scenario parameters as the compose prompt states them (validation reads them too)."""
    return "".join(f" Use {k} = {v}." for k, v in sorted(params.items()))


def compose(ctx: StageContext) -> None:
    endpoint = _endpoint(ctx)

    def process(c: dict[str, Any]) -> Outcome:
        template = TEMPLATES[c["template"]]
        params = _params_text(c["params"])
        parts = described(c)
        clue_text = "\n".join(f"- {f['text']}" for f in grounded_facts(parts[0]))
        if len(parts) > 1:  # a two-entity template: the partner is described, never named, too
            for d in parts[1:]:
                clue_text += f"\n{PARTNER_CLUES}\n" + "\n".join(f"- {f['text']}" for f in grounded_facts(d))
        prompt = COMPOSE_PROMPT.format(task=template.task, params=params,
                                       unit=template.unit or "plain numbers", clues=clue_text,
                                       gold=c["gold"]["label"])
        body = _body(ctx, prompt, compose_schema(clue_entities(parts), template.task + params))
        reply = parse_reply(ctx.reply_text(endpoint, body, f"compose {c['cid']}"), ComposeReply)
        if reply is None:
            return Reject("unparseable_reply", f"the compose reply for {c['cid']} holds no question object")
        return Keep({**c, "question": reply.question.strip()})

    ctx.write_jsonl("composed.jsonl", ctx.map(ctx.read_jsonl("clues.jsonl"), lambda c: c["cid"], process))


def _term(name: str, qid: str, label: str, text: str, var: str, lines: list[str]) -> str:
    """``wd:QID`` when the text names it, else a variable sharing its type (or the type's superclass)."""
    if mentions(text, label):
        return f"wd:{qid}"
    lines.append(f"  ?{var} wdt:P31/wdt:P279? ?{var}_c . wd:{qid} wdt:P31/wdt:P279? ?{var}_c .")
    return f"?{var}"


def uniqueness_query(c: Mapping[str, Any]) -> str:
    """Entities satisfying every grounded fact, as the question states them. Of any type: the
    question does not state the topic's type, so a reader may take any entity the clues fit (a
    count within the type would call "its capital is Vienna" unique to Austria-Hungary)."""
    text = c["question"]
    lines: list[str] = []
    for i, f in enumerate(grounded_facts(c)):
        ch = c["chains"][f["chain"]]
        mid = _term("mid", ch["mid"], ch["mid_label"], text, f"m{i}", lines)
        lines.append(f"  ?x wdt:{ch['p1']} {mid} .")
        if f["hops"] == 2:
            obj = _term("obj", ch["obj"], ch["obj_label"], text, f"o{i}", lines)
            lines.append(f"  {mid} wdt:{ch['p2']} {obj} .")
    return PREFIXES + "SELECT DISTINCT ?x WHERE {\n" + "\n".join(lines) + \
        f"\n}}\nORDER BY ?x\nLIMIT {UNIQUENESS_LIST + 1}\n"


def _fact_line(c: Mapping[str, Any], d: Mapping[str, Any], f: Mapping[str, Any]) -> str:
    """A used fact of the described entity ``d`` as (subject, property label, object) labels."""
    ch = d["chains"][f["chain"]]
    if f["hops"] == 2:
        return f"- ({ch['mid_label']}, {c['predicate_labels'][ch['p2']]}, {ch['obj_label']})"
    return f"- ({d['entity']['label']}, {c['predicate_labels'][ch['p1']]}, {ch['mid_label']})"


def validate(ctx: StageContext) -> None:
    endpoint = _endpoint(ctx)
    items = ctx.read_jsonl("composed.jsonl")
    aliases = {e["qid"]: e["aliases"] for c in items for e in c["entities"]}
    with sparql_of(ctx) as sparql:
        def process(c: dict[str, Any]) -> Outcome:
            q = c["question"]
            template = TEMPLATES[c["template"]]
            values = [values_from_json(e["values"]) for e in c["entities"]]
            if not verify_gold(template, values, c["params"], c["gold"]["label"]):
                return Reject("gold_not_reproduced", f"re-executing {template.name} does not give "
                                                     f"{c['gold']['label']}")
            named = names_entity(q, c["entities"])
            if named:
                return Reject("entity_named", named)
            leaked = leaked_values(q, [(f"{e['qid']}:{p}", v)
                                       for e, vals in zip(c["entities"], values, strict=True)
                                       for p, v in sorted(vals.items()) if p not in template.stated])
            if leaked:
                return Reject("value_leak", leaked)
            # the compose prompt hands the model the gold as a reference: a plain reply can state it
            stated = states_gold(q, c["gold"]["label"], c["gold"]["tolerance"],
                                 template.task + _params_text(c["params"]))
            if stated:
                return Reject("gold_in_question", stated)
            parts = described(c)
            for i, d in enumerate(parts):  # each withheld entity must be identifiable from its clues
                who = "" if i == 0 else f" (partner {d['entity']['qid']})"
                flat = flattened(grounded_facts(d), d["chains"], aliases)
                if flat:
                    return Reject("multi_hop_flattening", flat + who)
                result = sparql.select(uniqueness_query({**d, "question": q}), f"uniqueness {c['cid']}{who}")
                matches = [v.rsplit("/", 1)[1] for v in result.values("x")]
                n = len(matches)
                if n != 1:
                    listed = ", ".join(matches[:UNIQUENESS_LIST]) + (", ..." if n > UNIQUENESS_LIST else "")
                    count = f"more than {UNIQUENESS_LIST}" if n > UNIQUENESS_LIST else str(n)
                    return Reject("not_unique", f"{count} entities satisfy the clues as the question states "
                                                f"them ({listed or 'none'}){who}")
            fact_lines = "\n".join(_fact_line(c, d, f) for d in parts for f in grounded_facts(d))
            reply = parse_reply(ctx.reply_text(endpoint, _body(ctx, RELATIONS_PROMPT.format(
                question=q, facts=fact_lines), RELATIONS_SCHEMA), f"relations {c['cid']}"), RelationsReply)
            if reply is None:
                return Reject("unparseable_reply",
                              f"the relation check for {c['cid']} holds no verdict object")
            if not reply.ok:
                return Reject("unmapped_relation", "relation phrase(s) without a used fact: " +
                              (", ".join(repr(p) for p in reply.unmapped) or "(not listed)"))
            partners = [{"count": 1, "query": uniqueness_query({**d, "question": q})} for d in parts[1:]]
            return Keep({**c, "uniqueness": {"count": 1, "query": uniqueness_query(c)},
                         **({"partner_uniqueness": partners} if partners else {})})

        kept = ctx.map(items, lambda c: c["cid"], process)
    ctx.write_jsonl("validated.jsonl", kept)


def export(ctx: StageContext) -> None:
    rows = []
    for i, c in enumerate(ctx.read_jsonl("diverse.jsonl")):
        facts = grounded_facts(c)
        v2 = c.get("v2")
        rows.append({
            "label": c["gold"]["label"],
            "metadata": {
                # the DR-256 row's required fields, filled from what the generator knows
                "benchmark": {"base_pilot": {"v1": c.get("v1"), "v2": v2}, "calibration_tier":
                              "challenge" if v2 is not None and v2["solved"] == 0 else "frontier",
                              "clean_provenance_answer_docids": [c["article_docid"]], "index": i,
                              "selection_bucket": "drbencher"},
                "category": c["domain"], "dataset_rows": {"candidate": c["cid"], "generator": "drbencher"},
                "difficulty": min(3, max(1, int(c["cci"]["total"]) - 1)), "question": c["question"],
                "qid": f"drbencher-{c['cid']}", "row_fingerprints": [c["cid"]], "teacher_correct": None,
                "drbencher": {
                    "article_docid": c["article_docid"], "cci": c["cci"], "chains": c["chains"],
                    "clues": c["clues"], "computation": c["gold"]["formula"],
                    "entities": [{"aliases": e["aliases"], "label": e["label"], "qid": e["qid"],
                                  "role": e["role"], **({"entry": e["entry"]} if "entry" in e else {}),
                                  **({"article_docid": e["article_docid"], "chains": e["chains"],
                                      "clues": e["clues"],
                                      "grounded_chains": [f["chain"] for f in grounded_facts(e)],
                                      "uniqueness": c["partner_uniqueness"][i - 1]} if i else {})}
                                 for i, e in enumerate(c["entities"])],
                    "grounded_chains": [f["chain"] for f in facts], "params": c["params"],
                    "properties": c["properties"], "template": c["template"],
                    "tolerance": c["gold"]["tolerance"], "topic": c["topic"],
                    "uniqueness": c["uniqueness"], "unit": c["gold"]["unit"], "v1": c.get("v1"),
                    "v2": c.get("v2")},
            },
            "prompt": [{"content": SYSTEM, "role": "system"},
                       {"content": f"Question: {c['question']}\nAnswer:", "role": "user"}],
        })
    ctx.count_in(len(rows))  # every candidate that reached export is written: in == out
    ctx.count_out(len(rows))
    ctx.write_jsonl("questions.jsonl", rows)
    ctx.write_jsonl("support_docs.jsonl", ctx.read_jsonl(ctx.stage.inputs[1]))


__all__ = ["RELATIONS_SCHEMA", "clue_entities", "clues", "clues_schema", "compose", "compose_schema",
           "described", "export", "grounded_facts", "predicate_labels", "uniqueness_query", "validate"]
