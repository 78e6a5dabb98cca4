"""The filters before export: **V1** (:func:`v1`, closed-book difficulty through the
toolkit's calibration rule), **V2** (:func:`v2_stage`, tool-augmented difficulty over the
served corpus the config names, :mod:`.v2corpus`) and **diversity** (DrBencher's diversity filter, the
toolkit's :func:`~drsearch.benchmark.generate.diversity.diversify` over the int8
all-MiniLM-L6-v2 embeddings of the question texts).

Edges join questions with δ = 1 − cos < ``min_distance`` (0.30); the most-connected question
is removed first until no edge is left. Each removed question is rejected with check
``diversity`` and a reason naming its closest surviving-or-removed neighbour; the stage
records the embedding model (its SHA-256) and the removal order in ``diversity.json``.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Mapping
from contextlib import ExitStack
from fractions import Fraction
from pathlib import Path
from typing import Any

from ....agents import CLOSED_BOOK, DR256, Preset, Question, Searcher
from ....agents.questions import PromptMessage
from ....biotools import LiveBioTools
from ....contract import CorpusInfo
from ...numeric import NumericParseError, answer_quantity, compare
from ..calibrate import ItemStats, drbencher_bucket
from ..diversity import dissimilarity_matrix, diversify
from ..embed import Embedder
from ..errors import GenerateError
from ..stages import Keep, Outcome, Reject, StageContext
from .domainapi import DomainAPISettings, agent_services
from .serving import RecordedCorpus, drsearch_serve, probe_search_server, served_searcher
from .textstages import SYSTEM
from .v2corpus import (
    CORPUS_DB,
    CORPUS_REPORT,
    Fetcher,
    build_default_corpus,
    corpus_from,
    identity_of,
    named_corpus,
    read_rows,
)
from .wikipedia import fetch_articles


def diversity(ctx: StageContext) -> None:
    items = ctx.read_jsonl("v2.jsonl")
    tau = float(ctx.settings["min_distance"])
    ids = [c["cid"] for c in items]
    ctx.count_in(len(items))
    report: dict[str, Any] = {"embedding": None, "min_distance": tau, "removed": [], "survivors": ids}
    kept = items
    if items:
        embedder = Embedder()
        vectors = embedder.embed([c["question"] for c in items])
        result = diversify(ids, vectors, tau_d=tau)
        delta = dissimilarity_matrix(vectors)
        index = {cid: i for i, cid in enumerate(ids)}
        removed = set(result.removed)
        for cid in result.removed:  # in removal order
            i = index[cid]
            j = min((k for k in range(len(ids)) if k != i), key=lambda k: (float(delta[i, k]), ids[k]))
            ctx.reject(cid, {"cid": cid, "question": items[i]["question"]}, "diversity",
                       f"δ = {float(delta[i, j]):.4f} < {tau:g} to {ids[j]}")
        kept = [c for c in items if c["cid"] not in removed]
        report = {"embedding": embedder.describe(), **result.as_dict(), "min_distance": tau}
    ctx.count_out(len(kept))
    ctx.write_jsonl("diverse.jsonl", kept)
    ctx.write_json("diversity.json", report)




def _graded(answer: str, gold: str, tolerance: str) -> bool:
    """The numeric grader's verdict (an answer without a single number is a miss)."""
    try:
        ok, _, _ = compare(answer_quantity(answer), answer_quantity(gold), tolerance=Fraction(tolerance))
    except NumericParseError:
        return False
    return ok


def _difficulty(ctx: StageContext, name: str, source: str, check: str, preset: Preset,
                searcher: Searcher | None, services: LiveBioTools | None = None) -> None:
    """k episodes of the filter's model per question under ``preset``, each graded by the
    numeric grader against the gold; ``drbencher_bucket`` decides (discarded iff accuracy > τ)."""
    s = ctx.settings[name]
    items = ctx.read_jsonl(source)
    if not s["enabled"]:
        ctx.count_in(len(items))
        ctx.count_out(len(items))
        ctx.write_jsonl(f"{name}.jsonl", items)
        return
    endpoint = ctx.stage.models[0]
    preset = preset.model_copy(update={"temperature": float(s["temperature"])})
    index = {c["cid"]: i for i, c in enumerate(items)}

    def process(c: dict[str, Any]) -> Outcome:
        question = Question(qid=c["cid"], index=index[c["cid"]], prompt=(
            PromptMessage(role="system", content=SYSTEM),
            PromptMessage(role="user", content=f"Question: {c['question']}\nAnswer:")))
        outcomes: list[str] = []
        statuses: list[str] = []
        answered = turns = 0
        for attempt in range(int(s["k"])):
            episode = ctx.episode(question, preset.for_attempt(attempt), endpoint, searcher, services)
            if episode["status"] == "infra_error":
                raise GenerateError(f"{name.upper()} episode {c['cid']} attempt {attempt}: "
                                    f"{episode.get('reason')}")
            answer = str(episode.get("final_answer") or "")
            ok = episode["status"] == "answered" and bool(answer) and _graded(answer, c["gold"]["label"],
                                                                             c["gold"]["tolerance"])
            outcomes.append("correct" if ok else "incorrect")
            statuses.append(str(episode["status"]))
            answered += episode["status"] == "answered" and bool(answer)
            turns += sum(1 for m in episode.get("messages", []) if m.get("role") == "assistant")
        stats = ItemStats(attempts=len(outcomes), solved=outcomes.count("correct"), answered=answered,
                          mean_turns=turns / len(outcomes), outcomes=tuple(outcomes),
                          statuses=tuple(statuses), scores=tuple(None for _ in outcomes))
        bucket, reason = drbencher_bucket(stats, tau=float(s["tau"]))
        record = {"bucket": bucket, "k": stats.attempts, "solved": stats.solved, "tau": float(s["tau"])}
        if bucket == "discarded":
            return Reject(check, f"{preset.name} {reason}")
        return Keep({**c, name: record})

    ctx.write_jsonl(f"{name}.jsonl", ctx.map(items, lambda c: c["cid"], process))


def v1(ctx: StageContext) -> None:
    """V1, the closed-book filter: k closed-book episodes of the V1 model per question
    (``ctx.episode`` under the ``closed-book`` preset, attempt n's seeds moved by n ×
    1,000,000). Check ``v1_closed_book_solved``. An attempt that ends without an answer
    counts as a miss; an ``infra_error`` stops the stage (exit 1). Disabled: every question
    passes, ``v1`` stays null."""
    _difficulty(ctx, "v1", "validated.jsonl", "v1_closed_book_solved", CLOSED_BOOK, None)


V2_PRESET = DR256.model_copy(update={"name": "drbencher-v2", "tools": ("search", "open", "python")})
"""The tool-augmented preset of V2: the DR-256 agent with search, open and python, plus the
domain tools of the config's API topics (:func:`v2_stage`)."""


def domain_services(tools: Mapping[str, str], settings: DomainAPISettings) -> LiveBioTools | None:
    """The live callers of V2's domain tools at the config's ``domain_apis`` politeness (None:
    no domain tool is offered)."""
    return agent_services(tools, settings) if tools else None


ANSWERED = ("no_article", "wrong_article", "robots_disallowed")
"""A Wikipedia fetch's reasons that are the site's answer (recorded); any other is a failure
(an HTTP error, a timeout) that a later run asks again."""


def wikipedia(ctx: StageContext, api: str, crawl: Path) -> Fetcher:
    """Distractors' articles from the MediaWiki Action API at ``api`` through
    :func:`.wikipedia.fetch_articles` (``drsearch corpus fetch``'s client: robots.txt, one
    request at a time, retries with Retry-After, its User-Agent; ``crawl`` its cache for the
    stage), each answer through the replay cache (kind ``wikipedia``, keyed by API, QID and
    title): a batch is fetched, as one crawl, only when the cache lacks one of its answers."""
    def fetch(pairs: list[tuple[str, str]]) -> list[tuple[dict[str, Any] | None, str]]:
        batch: dict[str, tuple[dict[str, Any] | None, str]] = {}

        def crawl_once() -> None:
            if batch:
                return
            out = crawl / "articles.jsonl"
            result = fetch_articles(pairs, api, out, crawl)
            found = {str(r["qid"]): r for r in read_rows(out)}
            for qid, _ in pairs:
                reason = "" if qid in found else str(result["skipped"].get(qid, "not_fetched"))
                batch[qid] = (found.get(qid), reason)

        answers: list[tuple[dict[str, Any] | None, str]] = []
        for qid, label in pairs:
            def live(qid: str = qid) -> tuple[bool, bytes]:
                crawl_once()
                article, reason = batch[qid]
                body = json.dumps({"article": article, "reason": reason}, sort_keys=True).encode()
                return article is not None or reason.startswith(ANSWERED), body

            _, body = ctx.fetch("wikipedia", {"api": api, "qid": qid, "title": label},
                                f"the Wikipedia article of {qid} ({label})", live)
            answer = json.loads(body)
            answers.append((answer["article"], str(answer["reason"])))
        return answers

    return fetch


def v2_stage(search_url: str | None, tools: Mapping[str, str] | None = None, *, corpus: Path | None = None,
             articles: Path | None = None,
             domain_apis: DomainAPISettings | None = None) -> Callable[[StageContext], None]:
    """The V2 stage searching the corpus the config names (:mod:`.v2corpus`): ``corpus`` (a
    drsearch index) served at ``search_url`` or by a ``drsearch serve`` the stage starts on
    127.0.0.1 for its duration; ``search_url`` alone (any drsearch server); or neither, the
    default corpus the stage builds from the questions' grounding articles (``articles``) and
    distractor pages. ``tools``: ``{domain tool: base URL}`` (:func:`.domainapi.agent_tools`)
    offered beside search, open and python, as the paper's tool-augmented filter offers the
    domain APIs, asked at ``domain_apis``' rates and User-Agent.

    Where a named corpus is served is not part of the stage's settings (its identity is, and
    the check :func:`.serving.served_searcher` guarantees that the server has it), so the
    answers, and the replay cache's keys, do not depend on the URL."""
    endpoints = dict(tools or {})
    # validated again: the tools in TOOL_NAMES order, one spelling per set
    preset = Preset.model_validate({**V2_PRESET.model_dump(), "tools": (*V2_PRESET.tools, *endpoints)})

    def named(ctx: StageContext, items: list[dict[str, Any]]) -> tuple[CorpusInfo, str, Path | None]:
        """The corpus V2 searches: its identity, how errors name it, the database to serve."""
        if corpus is not None:
            info = named_corpus(corpus)
            ctx.write_json(CORPUS_REPORT, {"kind": "database", **identity_of(info)})
            return info, f"the named corpus v2.corpus {corpus}", corpus
        if search_url is not None:
            def live() -> tuple[bool, bytes]:
                return True, json.dumps(identity_of(probe_search_server(search_url)), sort_keys=True).encode()

            _, body = ctx.fetch("search_server", {"url": search_url}, f"the identity of {search_url}", live)
            info = corpus_from(json.loads(body))
            ctx.write_json(CORPUS_REPORT, {"kind": "server", **identity_of(info)})
            return info, f"the corpus recorded for {search_url}", None
        if articles is None:
            raise GenerateError("v2: the default corpus needs the config's articles")
        db = ctx.path(CORPUS_DB)
        wanted = ctx.settings["corpus"]
        api = wanted.get("wikipedia_api")
        with tempfile.TemporaryDirectory(prefix="drbencher-v2-wiki-") as crawl:  # the fetches' cache, per run
            report = build_default_corpus(items, ctx.read_jsonl("entities.jsonl"), read_rows(articles),
                                          int(wanted["distractors"]), int(ctx.settings["seed"]), db,
                                          wikipedia(ctx, str(api), Path(crawl)) if api else None)
        info = named_corpus(db, "v2 corpus")
        ctx.write_json(CORPUS_REPORT, {**report, **identity_of(info)})
        return info, f"this run's V2 corpus {db}", db

    def v2(ctx: StageContext) -> None:
        """V2, the tool-augmented filter: k episodes of the V2 model per question with
        search, open and python over the named corpus served over HTTP (``drsearch
        serve``, through the agents' HttpSearcher as ``drsearch run --search URL``) and the
        domain tools (:mod:`drsearch.biotools.domains`, PubChem, UniProt) at the config's
        ``domain_apis``; tool calls through the replay cache like the model's (a replay asks
        no server). Check ``v2_tool_augmented_solved``."""
        if not ctx.settings["v2"]["enabled"]:
            _difficulty(ctx, "v2", "v1.jsonl", "v2_tool_augmented_solved", preset, None)
            return
        info, what, database = named(ctx, ctx.read_jsonl("v1.jsonl"))
        if ctx.cache.mode == "replay":  # offline: the cache answers, keyed by the corpus's identity
            _difficulty(ctx, "v2", "v1.jsonl", "v2_tool_augmented_solved", preset, RecordedCorpus(info))
            return
        with ExitStack() as stack:
            if search_url is None:
                assert database is not None
                url = stack.enter_context(drsearch_serve(database))
            else:
                url = search_url
            searcher = stack.enter_context(served_searcher(url, info, what))
            services = domain_services(endpoints, domain_apis or DomainAPISettings())
            if services is not None:
                stack.callback(services.close)
            _difficulty(ctx, "v2", "v1.jsonl", "v2_tool_augmented_solved", preset, searcher, services)

    return v2


__all__ = ["V2_PRESET", "diversity", "domain_services", "v1", "v2_stage"]
