"""The filters before export: **V1** (:func:`v1`, closed-book difficulty through the
toolkit's calibration rule), **V2** (:func:`v2_stage`, tool-augmented difficulty over the
served support corpus) and **diversity** (DrBencher's diversity filter, the
toolkit's :func:`~drsearch.benchmark.generate.diversity.diversify` over the int8
all-MiniLM-L6-v2 embeddings of the question texts).

Edges join questions with δ = 1 − cos < ``min_distance`` (0.30); the most-connected question
is removed first until no edge is left. Each removed question is rejected with check
``diversity`` and a reason naming its closest surviving-or-removed neighbour; the stage
records the embedding model (its SHA-256) and the removal order in ``diversity.json``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import ExitStack
from fractions import Fraction
from typing import Any

from ....agents import CLOSED_BOOK, DR256, Preset, Question, Searcher
from ....agents.questions import PromptMessage
from ....biotools import LiveBioTools
from ...numeric import NumericParseError, answer_quantity, compare
from ..calibrate import ItemStats, drbencher_bucket
from ..diversity import dissimilarity_matrix, diversify
from ..embed import Embedder
from ..errors import GenerateError
from ..stages import Keep, Outcome, Reject, StageContext
from .serving import RecordedCorpus, drsearch_serve, served_searcher, support_corpus
from .textstages import SYSTEM


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


def v2_stage(search_url: str | None,
             tools: Mapping[str, str] | None = None) -> Callable[[StageContext], None]:
    """The V2 stage searching ``search_url`` (a ``drsearch serve`` of ``support.sqlite3``), or,
    with None, a ``drsearch serve`` the stage starts on 127.0.0.1 for its duration; ``tools``:
    ``{domain tool: base URL}`` (:func:`.domainapi.agent_tools`) offered beside search, open
    and python, as the paper's tool-augmented filter offers the domain APIs.

    Where the corpus is served is not part of the stage's settings: the identity check
    (:func:`.serving.served_searcher`) guarantees that it is this run's support corpus, so the
    answers, and the replay cache's keys, do not depend on the URL."""
    endpoints = dict(tools or {})
    # validated again: the tools in TOOL_NAMES order, one spelling per set
    preset = Preset.model_validate({**V2_PRESET.model_dump(), "tools": (*V2_PRESET.tools, *endpoints)})

    def v2(ctx: StageContext) -> None:
        """V2, the tool-augmented filter: k episodes of the V2 model per question with
        search, open and python over the support corpus served over HTTP (``drsearch
        serve``, through the agents' HttpSearcher as ``drsearch run --search URL``) and the
        domain tools (:mod:`drsearch.biotools.domains`, PubChem, UniProt) at the config's
        ``domain_apis``; tool calls through the replay cache like the model's (a replay asks
        no server). Check ``v2_tool_augmented_solved``."""
        if not ctx.settings["v2"]["enabled"]:
            _difficulty(ctx, "v2", "v1.jsonl", "v2_tool_augmented_solved", preset, None)
            return
        support = support_corpus(ctx.path("support.sqlite3"))
        if ctx.cache.mode == "replay":  # offline: the cache answers, keyed by the support corpus
            _difficulty(ctx, "v2", "v1.jsonl", "v2_tool_augmented_solved", preset, RecordedCorpus(support))
            return
        with ExitStack() as stack:
            url = search_url or stack.enter_context(drsearch_serve(ctx.path("support.sqlite3")))
            searcher = stack.enter_context(served_searcher(url, support))
            services = LiveBioTools(endpoints) if endpoints else None
            if services is not None:
                stack.callback(services.close)
            _difficulty(ctx, "v2", "v1.jsonl", "v2_tool_augmented_solved", preset, searcher, services)

    return v2


__all__ = ["V2_PRESET", "diversity", "v1", "v2_stage"]
