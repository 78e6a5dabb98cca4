"""``drsearch generate drbencher --config GEN.json --out GEN_DIR [--until STAGE] [--cache-mode M]
[--refresh-kg] [--concurrency N] [--quiet]``.

:func:`build` validates the config (ConfigError, ``file:line``, exit 2) and, unless the cache
mode is ``replay`` (offline: no client at all), probes the SPARQL endpoint once
(KGEndpointError, exit 2), the model endpoints, and the search server ``v2.search_url``
names when the run reaches V2 (exit 2; one of another corpus than ``v2.corpus`` too): all
before anything is written. The stages then run through the
toolkit (``generate.stages``): discover → chains → gold (:mod:`.kgstages`). The stages that
ask the graph record its answers (``kg.STAGE.jsonl``); a rerun reuses them with a warning, or,
with ``--refresh-kg``, asks again and reruns from the first stage whose answers changed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ....agents import ChatClient
from ....agents.llm import api_key_from_env
from ..embed import MODEL_SHA256
from ..stages import GenerateSettings, Pipeline, Stage
from .config import GenConfig, load_config
from .domainapi import SERVICES_OF, DomainAPI, agent_tools
from .filters import diversity, v1, v2_stage
from .kgstages import chains, discover, gold, kg_answers_name, kg_fresh, package_sha256, recording_kg
from .serving import check_served, probe_search_server
from .sparql import SparqlClient
from .textstages import clues, compose, export, validate
from .v2corpus import CORPUS_DB, CORPUS_REPORT, identity_of, named_corpus

GENERATOR = "drbencher"
KG_STAGES = ("discover", "chains", "gold")
ASKS_KG = (*KG_STAGES, "clues", "validate")
"""The stages that ask the knowledge graph: each records the answers it used (kg.STAGE.jsonl)."""
STAGES = (*KG_STAGES, "clues", "compose", "validate", "v1", "v2", "diversity", "export")


def pipeline_for(config: GenConfig, articles: Path,
                 fresh: Callable[[str], Callable[[Path], bool]] | None = None) -> Pipeline:
    """The stages of ``config`` (their settings are the config's parts each one reads).
    ``fresh(stage)``: the check a stage that asks the KG passes before it is skipped."""
    model = config.generator.endpoint()
    generator = config.generator.model_dump(mode="json")
    common: dict[str, Any] = {"code_sha256": package_sha256(), "kg": config.kg.model_dump(mode="json"),
                              "language": config.language, "seed": config.seed}
    # the domain tools V2 offers: those of the identifier kinds the topics start from
    tools = agent_tools({t.entry.kind for t in config.topics if t.entry}, config.domain_apis)
    stages = [
        Stage("discover", discover, outputs=("entities.jsonl", "discover.json"),
              settings={**common, "topics": [t.model_dump(mode="json") for t in config.topics],
                        # only where a topic asks a domain API (the KG-only configs keep their key)
                        **({"domain_apis": config.domain_apis.model_dump(mode="json")}
                           if any(t.entry for t in config.topics) else {})}),
        Stage("chains", chains, inputs=("entities.jsonl",), outputs=("chains.jsonl",),
              settings={**common, "chains": config.chains.model_dump(mode="json")}),
        Stage("gold", gold, inputs=("chains.jsonl",), outputs=("gold.jsonl",),
              settings={**common, "chains": config.chains.model_dump(mode="json"),
                        "max_per_entity": config.max_per_entity,
                        "templates": list(config.templates)}),
        Stage("clues", clues, inputs=("gold.jsonl", str(articles)),
              outputs=("clues.jsonl", "support.sqlite3"),
              settings={**common, "generator": generator}, models=(model,)),
        Stage("compose", compose, inputs=("clues.jsonl",), outputs=("composed.jsonl",),
              settings={**common, "generator": generator}, models=(model,)),
        Stage("validate", validate, inputs=("composed.jsonl",), outputs=("validated.jsonl",),
              settings={**common, "generator": generator,
                        "topics": [t.model_dump(mode="json") for t in config.topics]}, models=(model,)),
        Stage("v1", v1, inputs=("validated.jsonl",), outputs=("v1.jsonl",),
              settings={**common, "v1": config.v1.model_dump(mode="json")},
              models=(config.v1.model.endpoint(),) if config.v1.enabled and config.v1.model else ()),
        v2_stage_of(config, articles, common, tools),
        Stage("diversity", diversity, inputs=("v2.jsonl",),
              outputs=("diverse.jsonl", "diversity.json"),
              settings={**common, "embedding_sha256": MODEL_SHA256,
                        "min_distance": config.diversity.min_distance}),
        Stage("export", export, inputs=("diverse.jsonl", str(articles)),
              outputs=("questions.jsonl", "support_docs.jsonl"), settings=common),
    ]
    return Pipeline(GENERATOR, [
        replace(s, run=recording_kg(s.name, s.run), outputs=(*s.outputs, kg_answers_name(s.name)),
                fresh=fresh(s.name) if fresh else None) if s.name in ASKS_KG else s for s in stages],
        order=STAGES)


def v2_stage_of(config: GenConfig, articles: Path, common: dict[str, Any], tools: dict[str, str]) -> Stage:
    """The V2 stage of ``config``. Its settings name the corpus it searches (``corpus``: the
    default corpus's distractor count, a named database's identity, or the URL of a server
    named alone), never where a named database is served: the identity check guarantees it."""
    v2 = config.v2
    settings: dict[str, Any] = {**common, "v2": v2.model_dump(mode="json",
                                                             exclude={"search_url", "corpus", "distractors",
                                                                      "wikipedia_api"}),
                                # only where a topic asks a domain API (the KG-only configs keep their key)
                                **({"domain_tools": tools} if tools else {})}
    models = (v2.model.endpoint(),) if v2.enabled and v2.model else ()
    run = v2_stage(v2.search_url, tools, corpus=Path(v2.corpus) if v2.corpus else None, articles=articles,
                   domain_apis=config.domain_apis)
    if not v2.enabled:  # nothing is searched: the settings and files of a run before V2 had a corpus
        return Stage("v2", run, inputs=("v1.jsonl", "support.sqlite3"), outputs=("v2.jsonl",),
                     settings=settings, models=models)
    if v2.corpus is not None:
        settings["corpus"] = {"database": identity_of(named_corpus(Path(v2.corpus)))}
        return Stage("v2", run, inputs=("v1.jsonl",), outputs=("v2.jsonl", CORPUS_REPORT),
                     settings=settings, models=models)
    if v2.search_url is not None:
        settings["corpus"] = {"server": v2.search_url}
        return Stage("v2", run, inputs=("v1.jsonl",), outputs=("v2.jsonl", CORPUS_REPORT),
                     settings=settings, models=models)
    settings["corpus"] = {"distractors": v2.distractors,
                          **({"wikipedia_api": v2.wikipedia_api} if v2.wikipedia_api else {})}
    return Stage("v2", run, inputs=("v1.jsonl", "entities.jsonl", str(articles)),
                 outputs=("v2.jsonl", CORPUS_DB, CORPUS_REPORT), settings=settings, models=models)


def build(config_path: Path, settings: GenerateSettings, *, refresh_kg: bool = False,
          warn: Callable[[str], None] | None = None) -> Pipeline:
    """The pipeline of the config at ``config_path`` for a run with ``settings``, after the
    checks that need no output (config, endpoint probes: exit 2 before anything is written).
    ``refresh_kg``: ask the graph again every query the finished stages recorded; otherwise
    they are reused and ``warn`` is told so once (the CLI prints it on stderr)."""
    config, articles = load_config(config_path)
    if settings.cache_mode != "replay":  # replay is offline: neither endpoint is even asked
        client = SparqlClient(config.kg)
        try:
            client.probe()
        finally:
            client.close()
    services = sorted({s for t in config.topics if t.entry for s in SERVICES_OF[t.entry.kind]})
    if settings.cache_mode != "replay" and services:  # a domain API that cannot answer: exit 2
        api = DomainAPI(config.domain_apis, lambda kind, key, describe, live: live())
        try:
            api.probe(tuple(services))
        finally:
            api.close()
    if settings.cache_mode != "replay" and settings.until not in KG_STAGES:  # a KG-only run needs no model
        models = [("generator", config.generator),
                  *((f"{name}.model", f.model) for name, f in (("v1", config.v1), ("v2", config.v2))
                    if f.enabled and f.model)]
        # The stages' retries (--max-attempts, --backoff, Retry-After): an endpoint at its rate
        # limit when the run starts is busy, not dead; one that never answers still ends the run
        # here, before anything is written. A probe waits at most 30 s for one answer.
        probe_retry = settings.retry.model_copy(update={"timeout_s": min(settings.retry.timeout_s, 30.0)})
        for field, m in models:
            chat = ChatClient.connect(m.base_url, api_key_from_env(settings.api_key_env),
                                      retry=probe_retry)
            try:  # the endpoint comes from the config, not a flag: the error names its field
                chat.probe(m.model, option=f"{config_path.name}: {field}.base_url")
            finally:
                chat.close()
    reaches_v2 = settings.until is None or (settings.until in STAGES
                                            and STAGES.index(settings.until) >= STAGES.index("v2"))
    if settings.cache_mode != "replay" and config.v2.enabled and config.v2.search_url and reaches_v2:
        served = probe_search_server(config.v2.search_url)
        if config.v2.corpus is not None:  # a server of another corpus: exit 2 before anything is written
            check_served(config.v2.search_url, served, named_corpus(Path(config.v2.corpus)),
                         f"the named corpus v2.corpus {config.v2.corpus}")
    if settings.cache_mode == "replay":  # offline by definition: the recorded answers are the input
        return pipeline_for(config, articles)
    cache = None if settings.cache_mode == "off" else (settings.cache or settings.out / "cache.sqlite3")
    warned: list[str] = []

    def warn_once(message: str) -> None:
        if not warned and warn is not None:  # once per run: the first stage that would reuse answers
            warned.append(message)
            warn(message)

    return pipeline_for(config, articles, lambda stage: kg_fresh(stage, config.kg, cache,
                                                                 None if refresh_kg else warn_once))


__all__ = ["GENERATOR", "STAGES", "build", "pipeline_for"]
