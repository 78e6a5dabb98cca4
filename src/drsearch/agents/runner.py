"""A whole run: questions × the episode loop, concurrent, resumable, replayable.

:func:`execute_run` wires a :class:`RunSpec` to live or recorded backends, skips the
questions already in the run directory, runs the rest on ``concurrency`` threads, and
returns the summary (also written to ``summary.json``). Nothing is written before the
search backend and the model endpoint answered (:meth:`ChatClient.probe`). Every selected
question ends up with a line in trajectories.jsonl or, when even that write failed (disk
full), counted in the summary: an infrastructure failure, or an unexpected exception in an
episode (a bug, not the model's doing), is recorded as status ``infra_error``, never
dropped and never finished, so a rerun retries it. Ctrl-C (KeyboardInterrupt in the main
thread) cancels the model calls in flight (:meth:`CachedChat.cancel`), keeps the episodes
already appended, writes none of the unfinished ones and re-raises; a rerun resumes.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .. import __version__
from ..biotools import BIOTOOLS, LiveBioTools, load_endpoints, signatures
from ..contract import InvalidInputError, check_http_url
from ..index import BlockList, Engine, ReleasePolicy, cached_sha256
from .biocalls import BioCalls
from .canonical import sha256_hex
from .cost import PriceTable, episode_usd, load_prices, run_cost, usd
from .errors import CacheError, LocalIOError, RunStoreError, SandboxUnavailableError
from .llm import CachedChat, CallCancelled, ChatClient, RetryPolicy, api_key_from_env
from .loop import INFRA_STATUS, NOT_RUN_STATUS, Episode, run_episode
from .preset import DR256, Preset, load_preset
from .pytool import CachedPython, Isolation, LocalPython, PythonRunner, probe_isolation
from .questions import Question, read_questions
from .qvectors import CachedQueryEmbedder, LateCache
from .replay import CachedSearcher, CacheMode, ReplayCache
from .runstore import RunStore
from .searcher import CorpusInfo, EngineSearcher, HttpSearcher, NoCorpus, Searcher
from .shards import parse_shard, shard_of, shard_record
from .snapshot import ToolSnapshot, freeze, load_snapshot
from .tools import tool_schema_sha256


class RunSpec(BaseModel):
    """Everything a run needs (``drsearch run``'s options). Frozen; validated once.

    Live runs need ``model``, ``base_url`` and one of ``search_url``/``database``. A
    ``replay_from`` run takes all of them from the recorded run.json when not given, and
    answers every call from that run's cache (mode ``replay``). ``preset`` is a name in
    PRESETS or a JSON file of preset fields (:func:`~drsearch.agents.preset.load_preset`);
    None means dr256, or with ``replay_from`` the preset recorded in that run.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    questions: Path
    out: Path
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None
    search_url: str | None = None
    database: Path | None = None
    # with --database: bm25|dense|hybrid[:rrf|:linear=W] (drsearch.dense.spec) and its sidecar
    retriever: str = "bm25"
    vectors: Path | None = None
    rerank: dict[str, Any] | None = None  # +rerank: drsearch.dense.RerankConfig's fields
    blocked_docids: Path | None = None
    release_blocklist: ReleasePolicy = "apply"  # drsearch.index.releases: none/override say otherwise
    allow_missing_blocked: bool = False
    # > 0: behind a gateway that strips x-drsearch-identity, check /health's identity after a
    # random gap of mean N answers instead of refusing header-less answers (docs/SCALING.md)
    identity_check_every: int = Field(default=0, ge=0, le=1_000_000)
    allow_unsandboxed_python: bool = False
    preset: str | None = None
    attempt: int = Field(default=0, ge=0, le=999)
    concurrency: int = Field(default=1, ge=1, le=1024)
    limit: int | None = Field(default=None, ge=1)
    ids: tuple[str, ...] = ()
    shard: str | None = None  # "I/N": only the selected questions shard_of puts in shard I (shards.py)
    cache_mode: CacheMode = "record"
    cache: Path | None = None
    replay_from: Path | None = None
    # the biomedical tools: a frozen snapshot answering their calls, and base URLs per tool
    tool_snapshot: Path | None = None
    tool_endpoints: Path | None = None
    retry: RetryPolicy = RetryPolicy()
    quiet: bool = False
    prices: Path | None = None  # a price file (drsearch.agents.cost): the run's cost in run.json
    # no episode starts once the run directory's episodes cost this much (USD; needs prices)
    max_cost_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    @field_validator("base_url", "search_url")
    @classmethod
    def _http_url(cls, url: str | None) -> str | None:
        return check_http_url(url)

    @field_validator("shard")
    @classmethod
    def _shard(cls, shard: str | None) -> str | None:
        if shard is not None:
            parse_shard(shard)  # ValueError: the one-line reason
        return shard

    @model_validator(mode="after")
    def _backends(self) -> RunSpec:
        if self.search_url and self.database:
            raise ValueError("give --search or --database, not both")
        if (self.retriever != "bm25" or self.vectors is not None or self.rerank) and self.database is None:
            raise ValueError("--retriever/--vectors go with --database (a server ranks with its own)")
        if self.blocked_docids is not None and self.database is None:
            raise ValueError("--blocked-docids goes with --database (a server applies its own blocklist)")
        if self.identity_check_every and not self.search_url:
            raise ValueError("--identity-check-every goes with --search (it checks a server's /health)")
        if self.release_blocklist != "apply" and self.database is None:
            raise ValueError("--blocked-docids none/--override-release-blocklist go with --database "
                             "(a server applies its own blocklist)")
        if self.tool_snapshot is not None and self.replay_from is None and \
                self.cache_mode not in ("replay", "replay-then-live"):
            raise ValueError("--tool-snapshot goes with --cache-mode replay or replay-then-live "
                             "(or --replay)")
        corpus_given = bool(self.search_url or self.database)
        if self.replay_from is None and not corpus_given and _offers_corpus(self.preset):
            raise ValueError("give --search URL or --database CORPUS (or --replay RUN_DIR)")
        if self.replay_from is None and not (self.model and self.base_url):
            raise ValueError("give --model and --base-url (or --replay RUN_DIR)")
        if self.max_cost_usd is not None and self.prices is None:
            raise ValueError("--max-cost needs --prices FILE (the prices that turn usage into USD)")
        return self


def _offers_corpus(ref: str | None) -> bool:
    """Whether the preset ``ref`` offers search or open (an unreadable one: assume so, and
    let resolving it say what is wrong)."""
    try:
        tools = DR256.tools if ref is None else load_preset(ref).tools
    except InvalidInputError:
        return True
    return "search" in tools or "open" in tools


def code_version() -> dict[str, str]:
    """drsearch's version and a hash of the agents layer's source (what makes trajectories)."""
    here = Path(__file__).parent
    digest = sha256_hex(b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in sorted(here.glob("*.py"))))
    return {"agents_sha256": digest, "drsearch": __version__}


def select(questions: list[Question], spec: RunSpec) -> list[Question]:
    """``--ids`` (qids, in file order) then ``--limit`` (the first N), then ``--shard I/N``
    (those of the selection that :func:`~drsearch.agents.shards.shard_of` puts in shard I:
    the shards of one selection partition it)."""
    chosen = _select(questions, spec)
    if spec.shard is None:
        return chosen
    index, count = parse_shard(spec.shard)
    return [q for q in chosen if shard_of(q.qid, count) == index]


def _select(questions: list[Question], spec: RunSpec) -> list[Question]:
    chosen = questions
    if spec.ids:
        wanted = set(spec.ids)
        unknown = sorted(wanted - {q.qid for q in questions})
        if unknown:
            raise InvalidInputError(f"--ids: no such question(s): {', '.join(unknown)}")
        chosen = [q for q in questions if q.qid in wanted]
    return chosen[: spec.limit] if spec.limit else chosen


def _recorded(spec: RunSpec) -> dict[str, Any]:
    if spec.replay_from is None:
        return {}
    path = spec.replay_from / "run.json"
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError) as e:
        raise RunStoreError(f"--replay: cannot read {path} ({e})") from None


def _recorded_corpus(recorded: dict[str, Any]) -> CorpusInfo:
    """What an offline replay serves: the corpus and blocklist the recorded run.json names."""
    if not (recorded.get("corpus_identity") and recorded.get("blocklist_sha256")):
        raise RunStoreError("--replay: the recorded run.json lacks corpus_identity/blocklist_sha256")
    return CorpusInfo(recorded["corpus_identity"], recorded["blocklist_sha256"],
                      retriever=recorded.get("retriever"))


def _live_searcher(spec: RunSpec, stack: ExitStack, embedder: CachedQueryEmbedder | None = None,
                   rerank_cache: LateCache | None = None, replaying: bool = False) -> Searcher:
    if spec.search_url:
        http = HttpSearcher.connect(spec.search_url, health_check_every=spec.identity_check_every)
        stack.callback(http.close)
        if not spec.allow_missing_blocked:
            http.corpus().check_blocklist_complete(spec.search_url)
        return http
    assert spec.database is not None
    blocklist = BlockList.from_file(spec.blocked_docids) if spec.blocked_docids else None
    engine = stack.enter_context(Engine.open(spec.database, blocklist,
                                             release_blocklist=spec.release_blocklist))
    if not spec.allow_missing_blocked:
        engine.check_blocklist_complete()
    if embedder is None and spec.rerank is None:
        return EngineSearcher(engine)
    from ..dense import RerankConfig, open_retriever
    # +rerank: its requests through the run's cache; replaying, the endpoint is not probed
    retriever = open_retriever(spec.database, blocklist, spec.retriever, vectors=spec.vectors,
                               embedder=embedder, release_blocklist=spec.release_blocklist,
                               rerank=None if spec.rerank is None else RerankConfig(**spec.rerank),
                               rerank_cache=rerank_cache, probe=not replaying)
    stack.callback(retriever.close)
    return EngineSearcher(retriever)


def _query_embedder(spec: RunSpec, replaying: bool) -> CachedQueryEmbedder | None:
    """The query embedder of a ``--database`` run with a dense or hybrid retriever (None:
    BM25, or a server's). Replaying, the model loads only for a vector the cache lacks;
    otherwise it loads now (a missing model: exit 2 before anything is written)."""
    from ..dense import Embedder, parse_retriever
    from ..dense.embed import LazyEmbedder

    if spec.database is None or parse_retriever(spec.retriever).kind == "bm25":
        return None
    return CachedQueryEmbedder(LazyEmbedder() if replaying else Embedder())


def _cache_file(spec: RunSpec) -> tuple[Path, CacheMode]:
    """The cache file and mode; InvalidInputError if a replaying mode has no file to read."""
    path: Path
    mode: CacheMode
    if spec.replay_from is not None:
        path, mode = spec.cache or spec.replay_from / "cache.sqlite3", "replay"
    else:
        path, mode = spec.cache or spec.out / "cache.sqlite3", spec.cache_mode
    if mode == "replay" and not path.is_file():
        raise InvalidInputError(f"{path}: no replay cache there (cache mode replay reads a recorded one)")
    return path, mode


def resolve_preset(spec: RunSpec, recorded: dict[str, Any]) -> Preset:
    """``--preset`` (a name or a JSON file); else the replayed run's recorded preset; else
    dr256. ``--attempt N`` then moves the seeds (:meth:`Preset.for_attempt`)."""
    if spec.preset is not None:
        return load_preset(spec.preset).for_attempt(spec.attempt)
    if recorded.get("preset") is None:
        return DR256.for_attempt(spec.attempt)
    try:
        return Preset.model_validate(recorded["preset"])
    except ValueError as e:
        raise RunStoreError(f"--replay: the recorded preset is invalid ({e.__class__.__name__})") from None


def _manifest(spec: RunSpec, preset: Preset, model: str, base_url: str, corpus: CorpusInfo,
              questions: list[Question], questions_sha256: str, search: str) -> dict[str, Any]:
    return {"base_url": base_url, "blocklist_sha256": corpus.blocklist_sha256,
            "blocklist_count": corpus.blocklist_count, "blocklist_matched": corpus.blocklist_matched,
            "cache_mode": "replay" if spec.replay_from else spec.cache_mode, "code_version": code_version(),
            "corpus_identity": corpus.identity, "model": model, "preset": preset.model_dump(mode="json"),
            "prompt_sha256": {q.qid: q.prompt_sha256 for q in questions}, "questions": str(spec.questions),
            "questions_sha256": questions_sha256,
            "replay_from": str(spec.replay_from) if spec.replay_from else None,
            "search": search, "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "tool_schema_sha256": tool_schema_sha256(preset), "tools": list(preset.tools),
            # a retriever other than BM25 (its configuration): a replay keys its searches by it
            **({"retriever": corpus.retriever} if corpus.retriever not in (None, "bm25") else {}),
            # only with biomedical tools, so every other run.json is as before
            **_biotool_facts(spec, preset)}


def _biotool_facts(spec: RunSpec, preset: Preset) -> dict[str, Any]:
    """run.json's record of the biomedical tools: their services and endpoints, a hash of their
    clients' source (as ``code_version`` hashes the agents layer's), the base URLs asked, and
    the snapshot that answered them."""
    bio = [t for t in preset.tools if t in BIOTOOLS]
    if not bio:
        return {}
    live = LiveBioTools(load_endpoints(spec.tool_endpoints))
    source = Path(__file__).parent.parent / "biotools"  # its clients shape what the model reads
    files = sorted(source.glob("*.py"))
    digest = sha256_hex(b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in files))
    return {"biotools": signatures(bio), "biotools_sha256": digest,
            "biotool_endpoints": {t: live.endpoint(BIOTOOLS[t]) for t in bio},
            "tool_snapshot": None if spec.tool_snapshot is None else str(spec.tool_snapshot)}


def _corpus_file(live: Searcher | None, recorded: dict[str, Any]) -> dict[str, Any]:
    """What the run cites beside the content identity: the SQLite file's SHA-256 (computed
    once per file, cached by size+mtime: ``drsearch.index.filehash``), the release the file
    belongs to (name, revision) and where the blocklist came from. A server's file is not
    seen from here (``--search``: null); a replay repeats what the recorded run cited."""
    if live is None:
        return {k: recorded.get(k) for k in CORPUS_FILE_FIELDS}
    corpus = live.corpus()
    facts: dict[str, Any] = {"blocklist_origin": corpus.blocklist_origin, "database_bytes": None,
                             "database_sha256": None,
                             "release": None, "release_blocklist_sha256": corpus.release_blocklist_sha256}
    if isinstance(live, EngineSearcher):
        engine = live.engine
        facts["database_sha256"] = cached_sha256(engine.path)
        facts["database_bytes"] = engine.path.stat().st_size  # with the SHA-256: a pinned release's file
        release = engine.blocklist_choice.release
        if release is not None:
            facts["release"] = {"name": release.name, "revision": release.revision}
    return facts


CORPUS_FILE_FIELDS = ("blocklist_origin", "database_bytes", "database_sha256", "release",
                      "release_blocklist_sha256")


def _crashed(q: Question, preset: Preset, e: BaseException) -> Episode:
    """A bug in an episode, recorded as an infrastructure failure (not the model's outcome)."""
    record: dict[str, Any] = {"accounting": {}, "final_answer": None, "index": q.index, "messages": [],
              "prompt_sha256": q.prompt_sha256, "qid": q.qid,
              "reason": f"internal_error: {e.__class__.__name__}: {e}",
              "seed": preset.seed_for(q.index), "status": INFRA_STATUS, "tool_calls": [], "turns": []}
    return Episode(record, {"qid": q.qid, "wall_s": 0.0, "llm_calls": []})


def _not_run(q: Question, preset: Preset, reason: str) -> Episode:
    """A question left unstarted because the run's ``--max-cost`` was spent: no answer."""
    record: dict[str, Any] = {"accounting": {}, "final_answer": None, "index": q.index, "messages": [],
              "prompt_sha256": q.prompt_sha256, "qid": q.qid, "reason": reason,
              "seed": preset.seed_for(q.index), "status": NOT_RUN_STATUS, "tool_calls": [], "turns": []}
    return Episode(record, {"qid": q.qid, "wall_s": 0.0, "llm_calls": []})


class Budget:
    """``--max-cost``: the USD the run directory's episodes have cost, against the limit."""

    def __init__(self, table: PriceTable, model: str, limit_usd: float,
                 records: list[dict[str, Any]]) -> None:
        self.table, self.model = table, model
        self.limit = Decimal(str(limit_usd))
        self.spent = sum((episode_usd(table, model, r.get("accounting") or {}) for r in records), Decimal(0))

    def add(self, record: dict[str, Any]) -> None:
        self.spent += episode_usd(self.table, self.model, record.get("accounting") or {})

    @property
    def exhausted(self) -> bool:
        return self.spent >= self.limit

    def reason(self) -> str:
        return (f"not_run: --max-cost {usd(self.limit)} USD spent ({usd(self.spent)} USD) before this "
                "episode could start; rerun with a larger --max-cost to run it")


OUTCOME_ROWS = ("answered", "empty_answer", "budget", "model_error", "infra_error", "not_run")
"""The rows of the run's status table: a final answer (non-empty, empty), out of turns or
budget (``turn_cap``, ``budget``), the endpoint refused (``model_error``), infrastructure,
and the questions a spent ``--max-cost`` left unstarted (``not_run``: no answer, no cost)."""


def _row(record: dict[str, Any]) -> str:
    status = str(record["status"])
    if status == "answered":
        return "answered" if str(record.get("final_answer") or "").strip() else "empty_answer"
    return "budget" if status in ("turn_cap", "budget") else status


def summarise(records: list[dict[str, Any]], cache: ReplayCache, wall_s: float,
              episode_wall_s: dict[str, float] | None = None) -> dict[str, Any]:
    """Totals over the selected questions' episodes (denominator: every selected question).

    ``outcomes``: per row of :data:`OUTCOME_ROWS`, episodes, tokens (prompt + completion as
    reported) and episode wall seconds (from ``episode_wall_s``); ``infra_failures``: the
    questions whose latest attempt failed for infrastructure, with the reason (index order).
    """
    totals: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    rows = {name: {"episodes": 0, "tokens": 0, "wall_s": 0.0} for name in OUTCOME_ROWS}
    clock = episode_wall_s or {}
    for r in records:
        acc = r.get("accounting", {})
        for key, value in acc.items():
            if key == "tool_calls":
                tools.update(value)
            else:
                totals[key] += value
        row = rows[_row(r)]
        row["episodes"] += 1
        row["tokens"] += int(acc.get("prompt_tokens", 0)) + int(acc.get("completion_tokens", 0))
        row["wall_s"] = round(row["wall_s"] + clock.get(r["qid"], 0.0), 6)
    ordered = sorted(records, key=lambda r: (r.get("index", 0), r["qid"]))
    failures = [{"qid": r["qid"], "reason": r.get("reason")} for r in ordered if r["status"] == INFRA_STATUS]
    return {"accounting": {**dict(sorted(totals.items())), "tool_calls": dict(sorted(tools.items()))},
            "cache": cache.stats(), "infra_failures": failures, "outcomes": rows, "questions": len(records),
            "statuses": dict(sorted(Counter(r["status"] for r in records).items())),
            "wall_s_this_invocation": round(wall_s, 3)}


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced by an object without isatty, or closed
        return False


class _Progress:
    def __init__(self, total: int, initial: int, quiet: bool) -> None:
        self.errors = 0
        self.infra = 0
        self.bar: Any = None
        if not quiet and _stderr_is_terminal():  # a log or a pipe gets no \r or escape codes
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=initial, desc="episodes", unit="q", file=sys.stderr)

    def update(self, status: str) -> None:
        self.errors += status == "model_error"
        self.infra += status == INFRA_STATUS
        if self.bar is not None:
            self.bar.set_postfix(errors=self.errors, infra=self.infra, refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def python_isolation(spec: RunSpec, preset: Preset, offline: bool) -> Isolation | None:
    """How the python tool's programs will be isolated (recorded in run.json as
    ``python_isolation``): None when the preset does not offer it or an offline replay runs
    nothing; raises SandboxUnavailableError where the machine cannot sandbox it and
    ``allow_unsandboxed_python`` was not given."""
    if "python" not in preset.tools or offline:
        return None
    isolation, reason = probe_isolation()
    if isolation == "none" and not spec.allow_unsandboxed_python:
        why = " ".join(reason.split())[:300]
        raise SandboxUnavailableError(
            f"preset {preset.name!r} offers the python tool, but this machine cannot sandbox it ({why}); "
            "give --allow-unsandboxed-python to run it with resource limits only")
    return isolation


def _python_runner(preset: Preset, cache: ReplayCache, offline: bool,
                   isolation: Isolation | None) -> PythonRunner | None:
    """The python tool's runner when the preset offers it: through the cache like every tool
    (offline replay: the cache alone)."""
    if "python" not in preset.tools:
        return None
    live = None if offline or isolation is None else LocalPython(isolation=isolation)
    if cache.mode == "off":
        assert live is not None
        return live
    return CachedPython(cache, live)


def _tool_snapshot(spec: RunSpec, preset: Preset) -> ToolSnapshot | None:
    """``--tool-snapshot``, loaded and checked against the preset (SnapshotError: exit 2)."""
    if spec.tool_snapshot is None:
        return None
    snapshot = load_snapshot(spec.tool_snapshot)
    snapshot.check_preset(preset.tools)
    return snapshot


def _biocalls(spec: RunSpec, preset: Preset, cache: ReplayCache, snapshot: ToolSnapshot | None,
              offline: bool, stack: ExitStack) -> BioCalls | None:
    """The biomedical tools' caller when the preset offers any: through the snapshot and the
    cache; live services unless the run replays (a replay never calls a service)."""
    if not any(t in BIOTOOLS for t in preset.tools):
        return None
    replaying = spec.replay_from is not None or cache.mode == "replay"
    live = None
    if not replaying:
        # the model's --max-attempts/--backoff govern the services' retries too (30 s timeouts)
        r = spec.retry
        policy = RetryPolicy(max_attempts=r.max_attempts, backoff_s=r.backoff_s,
                             backoff_max_s=r.backoff_max_s, timeout_s=min(r.timeout_s, 30.0))
        live = LiveBioTools(load_endpoints(spec.tool_endpoints), policy=policy.policy())
        stack.callback(live.close)
    return BioCalls(None if cache.mode == "off" else cache, live, snapshot)


NEW_SNAPSHOT_DIR = "tool-snapshot"
"""Where a ``replay-then-live`` run with ``--tool-snapshot`` freezes its snapshot extended by
the calls it made live: ``OUT/tool-snapshot``."""


def _snapshot_summary(spec: RunSpec, snapshot: ToolSnapshot, cache: ReplayCache,
                      biotools: BioCalls | None, cache_path: Path) -> dict[str, Any]:
    """The snapshot's part of the summary; in mode replay-then-live with calls made live, the
    new snapshot (the old rows plus those) written to OUT/tool-snapshot."""
    hits = 0 if biotools is None else biotools.snapshot_hits
    out: dict[str, Any] = {"digest": snapshot.digest, "hits": hits, "path": str(snapshot.path),
                           "written": None}
    recorded = cache.stats().get("tool", {}).get("stored", 0)
    if cache.mode == "replay-then-live" and spec.replay_from is None and recorded:
        new = freeze([cache_path], spec.out / NEW_SNAPSHOT_DIR, snapshot, replace=True)
        out["written"] = {"digest": new.digest, "path": str(new.path), "rows": new.manifest["rows"]}
    return out


def _run_pending(pending: list[Question], spec: RunSpec, preset: Preset, model: str, chat: CachedChat,
                 searcher: Searcher, store: RunStore, progress: _Progress,
                 python: PythonRunner | None = None,
                 budget: Budget | None = None,
                 biotools: BioCalls | None = None) -> tuple[dict[str, dict[str, Any]], list[Question]]:
    """Run ``pending``, appending each episode; returns the episodes whose line could not be
    written (a local I/O failure: an ``infra_error`` record, kept in memory for the summary)
    and the questions never started because ``budget`` was spent (episodes start one at a
    time as others end, so the budget is checked before each; those running finish)."""
    unwritten: dict[str, dict[str, Any]] = {}
    queue: Iterator[Question] = iter(pending)
    futures: dict[Future[Episode], Question] = {}
    pool = ThreadPoolExecutor(max_workers=spec.concurrency, thread_name_prefix="episode")

    def start_more() -> None:
        while len(futures) < spec.concurrency and not (budget is not None and budget.exhausted):
            q = next(queue, None)
            if q is None:
                return
            futures[pool.submit(run_episode, q, preset, model, chat, searcher, python, biotools)] = q

    try:
        start_more()
        while futures:
            done, _ = wait(futures, return_when=FIRST_COMPLETED)
            for fut in done:
                q = futures.pop(fut)
                episode = _finished(fut, q, preset)
                if episode is None:  # cancelled: unfinished, a rerun does it again
                    continue
                if budget is not None:
                    budget.add(episode.record)
                try:
                    store.append(episode)
                except LocalIOError as e:  # not on disk, so not finished: the rerun asks again
                    unwritten[q.qid] = {"accounting": episode.record["accounting"], "index": q.index,
                                        "qid": q.qid, "reason": f"{e.error_type}: {e.message}",
                                        "status": INFRA_STATUS}
                progress.update(INFRA_STATUS if q.qid in unwritten else episode.record["status"])
            start_more()
    except BaseException:  # Ctrl-C: abandon the model calls in flight; their episodes stay unwritten
        chat.cancel()
        raise
    finally:  # drop queued questions (what is fsynced stays); running ones end at their next call
        pool.shutdown(wait=True, cancel_futures=True)
    return unwritten, list(queue)


def _finished(fut: Future[Episode], q: Question, preset: Preset) -> Episode | None:
    """The episode of a done future; None when it was cancelled; a bug is recorded as one."""
    try:
        return fut.result()
    except CallCancelled:
        return None
    except CacheError:  # an edited cache: stop the whole run (exit 2), record nothing for it
        raise
    except Exception as e:  # a bug must not lose the question: record it
        return _crashed(q, preset, e)


def _record_not_run(skipped: list[Question], preset: Preset, store: RunStore, budget: Budget | None,
                    progress: _Progress) -> None:
    """A ``not_run`` line for each question the spent budget left unstarted."""
    if not skipped:
        return
    assert budget is not None
    for q in skipped:
        try:
            store.append(_not_run(q, preset, budget.reason()))
        except LocalIOError:  # nothing is lost: the question is simply not there, still to run
            continue
        progress.update(NOT_RUN_STATUS)


def _prices(spec: RunSpec, model: str) -> PriceTable | None:
    """The price file, checked to price the run's model before anything runs (exit 2 if not)."""
    if spec.prices is None:
        return None
    table = load_prices(spec.prices)
    table.require(model, "agent")
    return table


def execute_run(spec: RunSpec) -> dict[str, Any]:
    """Run (or resume, or replay) ``spec``; returns the summary written to summary.json.

    Before anything is written: the questions, preset and cache options are checked, the
    search backend answers ``/health`` (or the engine opens), a resumed directory agrees
    with the run, and the model endpoint passes :meth:`ChatClient.probe`. The summary's
    ``infra_failures`` and ``io_errors`` list what a rerun must retry (the CLI exits 1).
    """
    t0 = time.monotonic()
    recorded = _recorded(spec)
    preset = resolve_preset(spec, recorded)
    model = spec.model or recorded.get("model")
    base_url = spec.base_url or recorded.get("base_url")
    if not model or not base_url:
        raise RunStoreError("--replay: the recorded run.json lacks model/base_url")
    table = _prices(spec, model)
    questions, questions_sha256 = read_questions(spec.questions)
    selected = select(questions, spec)
    key = None if spec.replay_from is not None else api_key_from_env(spec.api_key_env)
    cache_path, cache_mode = _cache_file(spec)
    offline = spec.replay_from is not None and not (spec.search_url or spec.database)
    snapshot = _tool_snapshot(spec, preset)
    no_corpus = not offline and not (spec.search_url or spec.database)  # the biomedical tools alone
    with ExitStack() as stack:  # backends first: a bad option leaves no run directory behind
        replaying = cache_mode in ("replay", "replay-then-live")
        embedder = None if offline or no_corpus else _query_embedder(spec, replaying)
        rerank_cache = LateCache()
        live = None if offline or no_corpus else _live_searcher(spec, stack, embedder, rerank_cache,
                                                                replaying)
        if no_corpus:
            live = NoCorpus()
        corpus = _recorded_corpus(recorded) if live is None else live.corpus()
        search = "replay" if live is None else "none" if no_corpus else spec.search_url or str(spec.database)
        isolation = python_isolation(spec, preset, offline)
        manifest = _manifest(spec, preset, model, base_url, corpus, questions, questions_sha256, search)
        manifest["python_isolation"] = isolation
        manifest |= _corpus_file(live, recorded)
        if spec.shard is not None:  # only then: an unsharded run.json is as before
            manifest["shard"] = shard_record(*parse_shard(spec.shard),
                                             {"ids": list(spec.ids), "limit": spec.limit},
                                             [q.qid for q in selected])
        store = RunStore(spec.out)
        store.check(manifest)
        client = None
        if spec.replay_from is None:
            client = ChatClient.connect(base_url, key, retry=spec.retry)
            stack.callback(client.close)
            # a dead, wrong or unauthorised endpoint: exit 2, nothing written; what the endpoint
            # says of the model (its /models entry: a server's settings, e.g. constrained
            # decoding) is part of what the run cites
            manifest["endpoint_model"] = client.probe(model)
        else:
            manifest["endpoint_model"] = recorded.get("endpoint_model")
        store.start(manifest)
        stack.callback(store.close)
        try:
            cache = ReplayCache(cache_path, cache_mode)
        except sqlite3.Error as e:
            raise LocalIOError(f"replay cache {cache_path}: cannot open ({e})") from None
        stack.callback(cache.close)
        rerank_cache.bind(cache)  # the reranker's requests are kept in (and replayed from) it
        if embedder is not None:
            embedder.bind(cache)  # query vectors are kept in (and replayed from) the run's cache
        if live is None:
            searcher: Searcher = CachedSearcher(cache, None, corpus)
        else:
            searcher = CachedSearcher(cache, live, corpus) if cache.mode != "off" else live
        done = store.finished()
        pending = [q for q in selected if q.qid not in done]
        budget = None if spec.max_cost_usd is None or table is None else \
            Budget(table, model, spec.max_cost_usd, list(store.latest().values()))
        progress = _Progress(len(selected), len(selected) - len(pending), spec.quiet)
        biotools = _biocalls(spec, preset, cache, snapshot, offline, stack)
        try:
            python = _python_runner(preset, cache, offline, isolation)
            unwritten, skipped = _run_pending(pending, spec, preset, model, CachedChat(client, cache),
                                              searcher, store, progress, python, budget,
                                              biotools)
            _record_not_run(skipped, preset, store, budget, progress)
        finally:
            progress.close()
        io_errors = []
        try:
            store.canonicalise()
        except OSError as e:  # the atomic rewrite left the appended file as it was
            io_errors.append(f"{store.trajectories}: not rewritten in index order ({e.strerror or e})")
        latest = {**store.latest(), **unwritten}
        never = {"accounting": {}, "reason": "no episode recorded", "status": INFRA_STATUS}
        records = [latest.get(q.qid) or {**never, "index": q.index, "qid": q.qid} for q in selected]
        summary = summarise(records, cache, time.monotonic() - t0, store.wall_s())
        summary["resumed"] = len(selected) - len(pending)
        cost = _cost(table, model, store, budget, summary["statuses"].get(NOT_RUN_STATUS, 0))
        summary["cost"] = cost
        try:
            store.set_cost(cost)
        except OSError as e:
            io_errors.append(f"{spec.out / 'run.json'}: cost not written ({e.strerror or e})")
        if store.timing_write_failures:
            io_errors.append(f"{store.timings}: {store.timing_write_failures} timing line(s) not written")
        summary["io_errors"] = io_errors
        if snapshot is not None:
            summary["tool_snapshot"] = _snapshot_summary(spec, snapshot, cache, biotools, cache_path)
        try:
            store.write_summary(summary)
        except OSError as e:
            lost = f"{spec.out / 'summary.json'}: not written ({e.strerror or e})"
            summary["io_errors"] = [*io_errors, lost]
    return summary


def _cost(table: PriceTable | None, model: str, store: RunStore, budget: Budget | None,
          not_run: int) -> dict[str, Any] | None:
    """run.json's ``cost``: every episode of the directory priced (None without a price file);
    with ``--max-cost``, the budget, what it left unstarted, and whether it is spent."""
    if table is None:
        return None
    cost = run_cost(table, model, store.latest().values())
    cost["budget"] = None if budget is None else {
        "exhausted": budget.exhausted, "max_cost_usd": usd(budget.limit), "not_run": not_run}
    return cost


__all__ = ["OUTCOME_ROWS", "Budget", "RunSpec", "code_version", "execute_run", "resolve_preset", "select",
           "summarise"]
