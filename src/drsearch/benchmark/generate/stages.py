"""Generators as named stages that resume, skip what is unchanged and regenerate byte-identically.

A :class:`Pipeline` is an ordered list of :class:`Stage` values. A stage reads declared input
files (external files by absolute path, or the outputs of earlier stages by their path inside
the output directory), writes its declared outputs there atomically (``contract.atomic``) and
may call models, only through :meth:`StageContext.complete` (the agents layer's
OpenAI-compatible client behind its replay cache). :func:`run_pipeline` then keeps, in
``OUT/``:

- ``manifest.json`` — deterministic: per finished stage, its code version, the SHA-256 of
  every input file, its settings and their SHA-256, the model ids and endpoints it declared,
  its counts (``in``, ``out``, ``rejected`` by check) and the SHA-256 of every output;
- ``candidates.jsonl`` — every rejected candidate of every finished stage, in stage order
  then item order, as ``{"candidate", "check", "key", "reason", "stage"}``: nothing is
  dropped without a reason;
- ``timings.json`` — the clock and cache facts of the last run of each stage (wall time,
  cache hits/misses/stored, cache mode, items resumed from a journal, the concurrency it ran
  at, and its model calls and the tokens their responses report under ``model``). They differ
  from run to run, so they are kept out of ``manifest.json``: every other file regenerates
  byte for byte;
- ``stages/<stage>.rejected.jsonl`` — a stage's rejections (an output of the stage);
  ``stages/<stage>.journal.jsonl`` — the per-item journal of a stage in progress.

Rerunning skips each stage whose recorded key (code version, input hashes, settings, models)
is unchanged and whose outputs still have their recorded hashes; the first stage that differs
runs, and so does every stage after it. A running stage writes its outputs into
``stages/<stage>.staging/``; only when it succeeds are they moved into place, its manifest
entry replaced, and every later stage forgotten with its outputs (derived from what was just
replaced; the replay cache regenerates them). A stage that fails (bad input, a failed call,
Ctrl-C, kill -9) therefore leaves the directory's earlier outputs and manifest byte for byte as
they were. ``until`` stops after the named stage. Ctrl-C or kill -9 loses only the unfinished
items of the stage that was running (see :mod:`.journal`).

``concurrency`` (``--concurrency N``) is how many items :meth:`StageContext.map` processes at
once when the stage names no concurrency of its own. It is a property of the run, not of a
stage: it is in no stage's settings, so changing it reruns nothing, and it changes no output
(kept rows and rejections are written in item order, whatever order the calls finish in).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ... import __version__
from ...agents import (
    BioCalls,
    CachedChat,
    CachedPython,
    CachedSearcher,
    CacheMode,
    ChatClient,
    ChatOutcome,
    CorpusInfo,
    LocalPython,
    Preset,
    PythonRunner,
    Question,
    ReplayCache,
    RetryPolicy,
    Searcher,
    ToolResponse,
    run_episode,
)
from ...agents.canonical import canonical_json, sha256_hex, sha256_json
from ...agents.llm import api_key_from_env
from ...biotools import BIOTOOLS, LiveBioTools
from ...contract import DrsearchError, json_object_lines
from ...contract.atomic import write_bytes_atomic, write_json_atomic
from ...contract.dirlock import lock_dir
from .errors import GenerateError, PipelineInputError
from .journal import Journal

RESERVED = ("manifest.json", "timings.json", "candidates.jsonl", "cache.sqlite3")
"""Names in the output directory that no stage may declare as an output."""

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")


class ModelEndpoint(BaseModel):
    """A model a stage calls: its id and OpenAI-compatible base URL (ending in ``/v1``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    model: str = Field(min_length=1)
    base_url: str

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, url: str) -> str:
        scheme, _, rest = url.partition("://")
        if not (scheme in ("http", "https") and rest.strip("/")):
            raise ValueError(f"{url!r} is not an http:// or https:// URL")
        return url


@dataclass(frozen=True)
class Keep:
    """A per-item result that goes on: ``row`` is what the stage emits for the item."""

    row: dict[str, Any]


@dataclass(frozen=True)
class Reject:
    """A per-item result that stops here: ``check`` names the filter, ``reason`` says why."""

    check: str
    reason: str


Outcome = Keep | Reject


@dataclass(frozen=True)
class Stage:
    """One named step. ``run(ctx)`` does the work; everything it reads, writes or asks for
    is declared here so the manifest can record it and a rerun can tell whether it changed.

    ``inputs``: absolute paths (external files) or paths inside the output directory (an
    earlier stage's outputs). ``outputs``: paths inside the output directory. ``settings``:
    JSON values (hashed). ``models``: every endpoint the stage may call. ``fresh``: asked
    (with the output directory) before a stage whose key and outputs are unchanged is
    skipped, for what no file records (an external service's answers): False reruns it and
    every later stage.
    """

    name: str
    run: Callable[[StageContext], None]
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    models: tuple[ModelEndpoint, ...] = ()
    fresh: Callable[[Path], bool] | None = field(default=None, compare=False)

    def code_sha256(self) -> str:
        """SHA-256 of the source file that defines ``run`` (a changed stage reruns)."""
        try:
            source = inspect.getsourcefile(self.run)
        except TypeError:  # a partial or a callable object: no source file to hash
            source = None
        if source is None:
            raise PipelineInputError(f"stage {self.name}: cannot find the source of its run function")
        return sha256_hex(Path(source).read_bytes())


class Pipeline:
    """A generator: a name and its stages in order (checked to fit together)."""

    def __init__(self, name: str, stages: Sequence[Stage], *, order: Sequence[str] | None = None) -> None:
        """``order``: the stage names a generator declares (its ``STAGES``, which its command
        line offers to ``--until``); the stages given must be exactly those, in that order,
        so the declaration and the stage list cannot drift apart."""
        if not _NAME.fullmatch(name):
            raise PipelineInputError(f"generator name {name!r}: use lower-case letters, digits, '-' and '_'")
        if not stages:
            raise PipelineInputError(f"generator {name}: no stages")
        if order is not None and tuple(s.name for s in stages) != tuple(order):
            raise PipelineInputError(f"generator {name}: stages {[s.name for s in stages]} are not "
                                     f"the declared {list(order)}")
        produced: dict[str, str] = {}
        for i, stage in enumerate(stages):
            if not _NAME.fullmatch(stage.name):
                raise PipelineInputError(f"stage name {stage.name!r}: use lower-case letters, digits, "
                                         "'-' and '_'")
            if stage.name in {s.name for s in stages[:i]}:
                raise PipelineInputError(f"stage {stage.name} is defined twice")
            for inp in stage.inputs:
                if not Path(inp).is_absolute() and inp not in produced:
                    raise PipelineInputError(f"stage {stage.name}: input {inp} is neither an absolute "
                                             "path nor an output of an earlier stage")
            for out in stage.outputs:
                if Path(out).is_absolute() or ".." in Path(out).parts or out in RESERVED or \
                        Path(out).parts[0] == "stages":
                    raise PipelineInputError(f"stage {stage.name}: output {out} must be a relative path in "
                                             f"the output directory, not {', '.join(RESERVED)} nor under "
                                             "stages/")
                if out in produced:
                    raise PipelineInputError(f"stage {stage.name}: output {out} is written by stage "
                                             f"{produced[out]} already")
                produced[out] = stage.name
            try:
                canonical_json(dict(stage.settings))
            except (TypeError, ValueError) as e:
                raise PipelineInputError(f"stage {stage.name}: settings are not JSON values ({e})") from None
        self.name = name
        self.stages = tuple(stages)

    def stage_names(self) -> list[str]:
        return [s.name for s in self.stages]


class GenerateSettings(BaseModel):
    """How :func:`run_pipeline` runs (the options of a generator's command line)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    out: Path
    until: str | None = None
    cache_mode: CacheMode = "record"
    cache: Path | None = None
    api_key_env: str | None = None
    retry: RetryPolicy = RetryPolicy()
    concurrency: int = Field(default=1, ge=1, le=64)
    """Items a stage's :meth:`StageContext.map` processes at once (no stage setting: see above)."""


class StageProgress(Protocol):
    """Told, after each item a stage's :meth:`StageContext.map` finishes, how far it is
    (``done`` of ``total``, items resumed from a journal counted as done) and how many model
    calls the stage has made; the command line draws a bar from it."""

    def __call__(self, stage: str, done: int, total: int, calls: int) -> None: ...


class _Meter:
    """A stage's model calls and the tokens their responses report (``usage``; a cached
    response counts the tokens it reported when recorded)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.calls = 0
        self.cached = 0
        self.tokens = {"completion_tokens": 0, "prompt_tokens": 0, "total_tokens": 0}

    def observe(self, outcome: ChatOutcome) -> None:
        usage: Any = None
        if outcome.ok:
            try:
                usage = json.loads(outcome.body).get("usage")
            except (ValueError, AttributeError):
                usage = None
        with self.lock:
            self.calls += 1
            self.cached += outcome.cached
            if isinstance(usage, dict):
                for k in ("completion_tokens", "prompt_tokens"):
                    n = usage.get(k)
                    if isinstance(n, int) and not isinstance(n, bool):
                        self.tokens[k] += n
                total = usage.get("total_tokens")
                if not (isinstance(total, int) and not isinstance(total, bool)):
                    total = sum(n for k in ("completion_tokens", "prompt_tokens")
                                if isinstance(n := usage.get(k), int) and not isinstance(n, bool))
                self.tokens["total_tokens"] += total

    def record(self) -> dict[str, Any]:
        return {"cached": self.cached, "calls": self.calls, **self.tokens}


def generate_code_sha256() -> str:
    """SHA-256 over this package's sources (the toolkit's part of every stage's code version)."""
    here = Path(__file__).parent
    return sha256_hex(b"".join(p.name.encode() + b"\0" + p.read_bytes() for p in sorted(here.glob("*.py"))))


def file_sha256(path: Path) -> str:
    return sha256_hex(path.read_bytes())


class StageContext:
    """What a running stage may do: read its inputs, call its models, keep or reject items,
    write its outputs. Counts and rejections are recorded as it goes."""

    def __init__(self, stage: Stage, out_dir: Path, chats: Mapping[str, CachedChat],
                 journal: Journal, cache: ReplayCache, staging: Path | None = None, *,
                 concurrency: int = 1, progress: StageProgress | None = None) -> None:
        self.stage = stage
        self.out_dir = out_dir
        self.staging = out_dir if staging is None else staging
        self.meter = _Meter()
        self._chats = {url: chat.observed(self.meter.observe) for url, chat in chats.items()}
        self._cancel = list(chats.values())  # cancelling the shared chats reaches these views too
        self.concurrency = concurrency
        self._progress = progress
        self._cache = cache
        self._journal = journal
        self._lock = threading.Lock()
        self.counts_in = 0
        self.counts_out = 0
        self.rejections: list[dict[str, Any]] = []
        self.resumed = 0

    @property
    def settings(self) -> Mapping[str, Any]:
        return self.stage.settings

    @property
    def cache(self) -> ReplayCache:
        """The pipeline's replay cache, for a stage's own cached calls beside model calls
        (e.g. SPARQL queries, kind ``sparql``): in ``replay`` mode such a stage must make no
        live client, and a miss is ReplayMissError naming the call."""
        return self._cache

    def path(self, name: str) -> Path:
        """A declared input or output as a path. An output lives in the stage's staging
        directory while the stage runs (moved into the output directory when it succeeds), so
        a stage that reads back what it wrote uses this path too."""
        if name not in self.stage.inputs and name not in self.stage.outputs:
            raise GenerateError(f"stage {self.stage.name}: {name} is not a declared input or output")
        if Path(name).is_absolute():
            return Path(name)
        return (self.staging if name in self.stage.outputs else self.out_dir) / name

    def read_jsonl(self, name: str) -> list[dict[str, Any]]:
        """A declared input as JSON objects, one per non-blank line."""
        if name not in self.stage.inputs:
            raise GenerateError(f"stage {self.stage.name}: {name} is not a declared input")
        text = self.path(name).read_text(encoding="utf-8").split("\n")
        return [row for _, row in json_object_lines(text, self.path(name), error=PipelineInputError)]

    def write_jsonl(self, name: str, rows: Iterable[Mapping[str, Any]]) -> None:
        """A declared output, one canonical-JSON line per row, atomically."""
        self._output(name)
        write_bytes_atomic(self.path(name), b"".join((canonical_json(dict(r)) + "\n").encode("utf-8")
                                                     for r in rows))

    def write_json(self, name: str, value: Any) -> None:
        self._output(name)
        write_json_atomic(self.path(name), value)

    def _output(self, name: str) -> None:
        if name not in self.stage.outputs:
            raise GenerateError(f"stage {self.stage.name}: {name} is not a declared output")
        self.path(name).parent.mkdir(parents=True, exist_ok=True)

    def complete(self, endpoint: ModelEndpoint, body: Mapping[str, Any], describe: str) -> dict[str, Any]:
        """One chat completion through the replay cache: the parsed response.

        ``body`` is the request without ``model`` (added from ``endpoint``, which the stage
        must declare). A call that failed for good raises GenerateError naming it; a replay
        miss raises ReplayMissError.
        """
        if endpoint not in self.stage.models:
            raise GenerateError(f"stage {self.stage.name}: model {endpoint.model} at {endpoint.base_url} "
                                "is not declared in the stage's models")
        request = {**body, "model": endpoint.model}
        outcome = self._chats[endpoint.base_url].complete(endpoint.model, request,
                                                          f"{self.stage.name}: {describe}")
        response: dict[str, Any] = json.loads(outcome.body)
        if not outcome.ok:
            err = response.get("error", {})
            raise GenerateError(f"stage {self.stage.name}: {describe}: model call failed "
                                f"({err.get('type')}: {err.get('message')})")
        return response

    def reply_text(self, endpoint: ModelEndpoint, body: Mapping[str, Any], describe: str) -> str:
        """The text of the first choice of :meth:`complete` ('' when the message has none)."""
        content = self.complete(endpoint, body, describe)["choices"][0]["message"].get("content")
        return content if isinstance(content, str) else ""

    def episode(self, question: Question, preset: Preset, endpoint: ModelEndpoint,
                searcher: Searcher | None = None, services: LiveBioTools | None = None) -> dict[str, Any]:
        """One agent episode (the agents loop, as ``drsearch run`` runs it) of ``question``
        under ``preset`` against ``endpoint``: its trajectory record (``status``,
        ``final_answer``, ``messages``, ...).

        Model calls and tool calls go through the pipeline's replay cache: ``searcher`` (a
        live one, e.g. ``EngineSearcher`` over a local corpus; needed when the preset offers
        ``search`` or ``open``) is wrapped in a ``CachedSearcher``, and the python tool runs
        through ``CachedPython`` (offline in replay mode), and the tools over outside services
        the preset offers (:mod:`drsearch.biotools`: the biomedical and domain tools) through
        :class:`~drsearch.agents.BioCalls`, live from ``services`` (the cache answers in replay
        mode, where ``services`` is not asked), keyed by tool and canonical arguments as
        ``drsearch run`` keys them. A ``model_error`` or
        ``infra_error`` episode is returned as a record, like any other outcome: the stage
        decides what it means (an ``infra_error`` is never the model's answer).
        """
        if endpoint not in self.stage.models:
            raise GenerateError(f"stage {self.stage.name}: model {endpoint.model} at {endpoint.base_url} "
                                "is not declared in the stage's models")
        needs_corpus = bool({"search", "open"} & set(preset.tools))
        if needs_corpus and searcher is None:
            raise GenerateError(f"stage {self.stage.name}: preset {preset.name} offers "
                                f"{', '.join(preset.tools)}: give the episode a searcher")
        cached: Searcher = _NoCorpus()
        if searcher is not None:
            cached = searcher if self._cache.mode == "off" else CachedSearcher(self._cache, searcher)
        python: PythonRunner | None = None
        if "python" in preset.tools:
            python = LocalPython() if self._cache.mode == "off" else \
                CachedPython(self._cache, None if self._cache.mode == "replay" else LocalPython())
        biotools: BioCalls | None = None
        if any(t in BIOTOOLS for t in preset.tools):
            live = None if self._cache.mode == "replay" else services
            if live is None and self._cache.mode != "replay":
                offered = ", ".join(t for t in preset.tools if t in BIOTOOLS)
                raise GenerateError(f"stage {self.stage.name}: preset {preset.name} offers {offered}: "
                                    "give the episode the services")
            biotools = BioCalls(None if self._cache.mode == "off" else self._cache, live)
        return run_episode(question, preset, endpoint.model, self._chats[endpoint.base_url], cached,
                           python, biotools).record

    def fetch(self, kind: str, key: Any, describe: str,
              live: Callable[[], tuple[bool, bytes]]) -> tuple[bool, bytes]:
        """Any other outside call (an evidence API, a search server) through the replay cache:
        ``(ok, body)`` of ``live()``, stored under ``[kind, key]`` and answered from the cache as
        the cache mode says (``replay`` never calls ``live``; a miss is ReplayMissError).
        ``key`` must name everything the answer depends on (URL, parameters)."""
        if self._cache.mode == "off":
            return live()
        return self._cache.fetch(kind, key, f"{self.stage.name}: {describe}",
                                 None if self._cache.mode == "replay" else live)

    def count_in(self, n: int = 1) -> None:
        """Count candidates a stage considers outside :meth:`map`."""
        with self._lock:
            self.counts_in += n

    def count_out(self, n: int = 1) -> None:
        with self._lock:
            self.counts_out += n

    def reject(self, key: str, candidate: Any, check: str, reason: str) -> None:
        """Record a rejected candidate outside :meth:`map` (it goes to candidates.jsonl)."""
        with self._lock:
            self.rejections.append({"candidate": candidate, "check": check, "key": key, "reason": reason,
                                    "stage": self.stage.name})

    def map(self, items: Sequence[Any], key: Callable[[Any], str], process: Callable[[Any], Outcome],
            concurrency: int | None = None) -> list[dict[str, Any]]:
        """``process`` every item (at most ``concurrency`` at once; None: the run's
        ``--concurrency``); the kept rows, in item order, whatever order they finish in.

        Each finished item is journaled before the next is reported, so an interrupted stage
        resumes with the items it finished (``process`` is not called for them again).
        Rejected items are recorded with their check and reason. Counts: ``in`` += items,
        ``out`` += kept, rejected by check += the rest. Keys must be unique.
        """
        keys = [key(item) for item in items]
        if len(set(keys)) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            raise GenerateError(f"stage {self.stage.name}: item key {dup!r} is not unique")
        pending = [(k, item) for k, item in zip(keys, items, strict=True) if k not in self._journal.done]
        self.resumed += len(keys) - len(pending)
        if concurrency is None:
            concurrency = self.concurrency
        done = [len(keys) - len(pending)]
        self._report(done[0], len(keys))

        def one(k: str, item: Any) -> None:
            outcome = process(item)
            if isinstance(outcome, Keep):
                self._journal.append({"keep": outcome.row, "key": k})
            elif isinstance(outcome, Reject):
                self._journal.append({"candidate": item, "key": k,
                                      "reject": {"check": outcome.check, "reason": outcome.reason}})
            else:
                raise GenerateError(f"stage {self.stage.name}: item {k}: process returned "
                                    f"{type(outcome).__name__}, not Keep or Reject")
            with self._lock:
                done[0] += 1
                self._report(done[0], len(keys))

        if concurrency <= 1:
            for k, item in pending:
                one(k, item)
        else:  # an interrupt or a failed item abandons the model calls in flight; finished items stay
            with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix=self.stage.name) as pool:
                futures = [pool.submit(one, k, item) for k, item in pending]
                try:
                    for f in futures:
                        f.result()
                except BaseException:
                    for f in futures:
                        f.cancel()
                    for chat in self._cancel:
                        chat.cancel()
                    raise
        kept: list[dict[str, Any]] = []
        for k in keys:
            entry = self._journal.done[k]
            if "keep" in entry:
                kept.append(entry["keep"])
            else:
                self.reject(k, entry["candidate"], entry["reject"]["check"], entry["reject"]["reason"])
        with self._lock:
            self.counts_in += len(keys)
            self.counts_out += len(kept)
        return kept

    def _report(self, done: int, total: int) -> None:
        if self._progress is not None:
            self._progress(self.stage.name, done, total, self.meter.calls)

    def record(self) -> dict[str, Any]:
        rejected = Counter(r["check"] for r in self.rejections)
        return {"in": self.counts_in, "out": self.counts_out, "rejected": dict(sorted(rejected.items())),
                "rejected_total": sum(rejected.values())}


class _NoCorpus:
    """The searcher of an episode whose preset offers no corpus tool (never called)."""

    def corpus(self) -> CorpusInfo:
        return CorpusInfo("none", "none")

    def search(self, query: str, k: int) -> ToolResponse:
        raise GenerateError("search called in an episode without a corpus")

    def open(self, *, docid: str | None, url: str | None, offset: int, length: int | None) -> ToolResponse:
        raise GenerateError("open called in an episode without a corpus")


def _fsync_dir(path: Path) -> None:
    """Make renames into ``path`` durable (as ``contract.atomic`` does for one file)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # not every platform or filesystem allows it
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _rejected_name(stage: Stage) -> str:
    return f"stages/{stage.name}.rejected.jsonl"


def _jsonl(rows: Iterable[Mapping[str, Any]]) -> bytes:
    return b"".join((canonical_json(dict(r)) + "\n").encode("utf-8") for r in rows)


class _Runner:
    """One invocation of :func:`run_pipeline` (state kept small and explicit)."""

    def __init__(self, pipeline: Pipeline, settings: GenerateSettings,
                 progress: StageProgress | None = None) -> None:
        self.p = pipeline
        self.s = settings
        self.progress = progress
        self.out = settings.out
        self.manifest_path = self.out / "manifest.json"
        self.timings_path = self.out / "timings.json"

    def check_inputs(self) -> None:
        """Refuse bad input before anything is written."""
        if self.s.until is not None and self.s.until not in self.p.stage_names():
            raise PipelineInputError(f"--until {self.s.until}: no such stage "
                                     f"(stages: {', '.join(self.p.stage_names())})")
        for stage in self.p.stages:
            for inp in stage.inputs:
                if Path(inp).is_absolute() and not Path(inp).is_file():
                    raise PipelineInputError(f"stage {stage.name}: input {inp}: no such file")
        if self.out.exists() and not self.out.is_dir():
            raise PipelineInputError(f"--out {self.out}: not a directory")
        if self.manifest_path.exists():
            try:
                stored = json.loads(self.manifest_path.read_text(encoding="utf-8"))
            except ValueError:
                raise PipelineInputError(f"{self.manifest_path}: not JSON; move the directory away") from None
            if stored.get("generator") != self.p.name:
                raise PipelineInputError(f"--out {self.out} holds generator {stored.get('generator')!r}, "
                                         f"not {self.p.name!r}; use another --out")
        if self.s.cache_mode == "replay" and not self.cache_path().is_file():
            raise PipelineInputError(f"{self.cache_path()}: no replay cache there (cache mode replay reads "
                                     "a recorded one)")

    def cache_path(self) -> Path:
        return self.s.cache or self.out / "cache.sqlite3"

    def load(self, path: Path, empty: dict[str, Any]) -> dict[str, Any]:
        if not path.exists():
            return empty
        return dict(json.loads(path.read_text(encoding="utf-8")))

    def stage_key(self, stage: Stage) -> dict[str, Any]:
        """What decides whether a stage must run again (inputs hashed now)."""
        inputs = {}
        for inp in stage.inputs:
            path = Path(inp) if Path(inp).is_absolute() else self.out / inp
            if not path.is_file():
                raise GenerateError(f"stage {stage.name}: input {inp} is missing (was an earlier stage's "
                                    "output deleted?)")
            inputs[inp] = file_sha256(path)
        settings = json.loads(canonical_json(dict(stage.settings)))  # as the manifest will read back
        return {"code_version": {"drsearch": __version__, "generate_sha256": generate_code_sha256(),
                                 "stage_sha256": stage.code_sha256()},
                "inputs": inputs, "models": [m.model_dump() for m in stage.models], "name": stage.name,
                "settings": settings, "settings_sha256": sha256_json(settings)}

    def up_to_date(self, stage: Stage, entry: dict[str, Any] | None, key: dict[str, Any]) -> bool:
        if entry is None or {k: entry.get(k) for k in key} != key:
            return False
        for name, digest in entry.get("outputs", {}).items():
            path = self.out / name
            if not path.is_file() or file_sha256(path) != digest:
                return False
        return stage.fresh is None or stage.fresh(self.out)

    def forget_from(self, manifest: dict[str, Any], index: int, keep: Iterable[str] = ()) -> None:
        """Drop stages ``index``… from ``manifest`` and delete their outputs (now stale), except
        the files named in ``keep`` (a stage's new outputs, just moved into place). Called only
        once a stage has succeeded: a failing stage must leave the earlier outputs as they were."""
        kept = set(keep)
        for stage in self.p.stages[index:]:
            entry = manifest["stages"].pop(stage.name, None)
            if entry is None:
                continue
            for name in entry.get("outputs", {}):
                if name not in kept:
                    (self.out / name).unlink(missing_ok=True)

    def staging_dir(self, stage: Stage) -> Path:
        return self.out / "stages" / f"{stage.name}.staging"

    def commit(self, manifest: dict[str, Any], index: int, entry: dict[str, Any]) -> None:
        """Stage ``index`` succeeded with ``entry``: move its outputs from the staging directory
        into place, forget it and every later stage (their outputs derive from what was just
        replaced), record ``entry`` and write the manifest. A crash part-way leaves outputs
        whose hashes the manifest does not list, so the next run reruns the stage."""
        stage = self.p.stages[index]
        staging = self.staging_dir(stage)
        for name in entry["outputs"]:
            target = self.out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / name, target)
        for parent in {(self.out / name).parent for name in entry["outputs"]}:
            _fsync_dir(parent)
        self.forget_from(manifest, index, keep=entry["outputs"])
        manifest["stages"][stage.name] = entry
        self.write_manifest(manifest)
        shutil.rmtree(staging, ignore_errors=True)

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        order = {name: i for i, name in enumerate(self.p.stage_names())}
        manifest["stages"] = dict(sorted(manifest["stages"].items(), key=lambda kv: order[kv[0]]))
        manifest["stage_order"] = list(manifest["stages"])  # the file's keys are sorted: keep the order here
        write_json_atomic(self.manifest_path, manifest)
        self.write_candidates(manifest)

    def write_candidates(self, manifest: dict[str, Any]) -> None:
        """candidates.jsonl: every finished stage's rejections, stage order then item order."""
        data = b"".join((self.out / _rejected_name(s)).read_bytes() for s in self.p.stages
                        if s.name in manifest["stages"] and (self.out / _rejected_name(s)).is_file())
        write_bytes_atomic(self.out / "candidates.jsonl", data)

    def run_stage(self, stage: Stage, key: dict[str, Any], chats: Mapping[str, CachedChat],
                  cache: ReplayCache) -> tuple[dict[str, Any], dict[str, Any], Journal]:
        """Run ``stage`` into its staging directory (left by a killed run: emptied first);
        ``(entry, timing, journal)`` on success, nothing moved yet. On failure the staging
        directory is removed and the output directory is untouched: only the journal of the
        items it finished stays, for the rerun (none finished: no journal either)."""
        journal = Journal(self.out / "stages" / f"{stage.name}.journal.jsonl", sha256_json(key))
        staging = self.staging_dir(stage)
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        before = cache.stats()
        t0 = time.monotonic()
        ctx = StageContext(stage, self.out, chats, journal, cache, staging, concurrency=self.s.concurrency,
                           progress=self.progress)
        try:
            self._run(stage, ctx)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            if not journal.done:  # nothing to resume: leave the directory exactly as it was
                journal.remove()
            raise
        (staging / _rejected_name(stage)).parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(staging / _rejected_name(stage), _jsonl(ctx.rejections))
        outputs = {name: file_sha256(staging / name) for name in (*stage.outputs, _rejected_name(stage))}
        entry = {**key, "counts": ctx.record(), "outputs": dict(sorted(outputs.items()))}
        after = cache.stats()
        used = {kind: {k: n - before.get(kind, {}).get(k, 0) for k, n in counts.items()}
                for kind, counts in after.items()}
        timing = {"cache": used, "cache_mode": cache.mode, "concurrency": self.s.concurrency,
                  "model": ctx.meter.record(), "resumed_items": ctx.resumed,
                  "wall_s": round(time.monotonic() - t0, 6)}
        return entry, timing, journal

    def _run(self, stage: Stage, ctx: StageContext) -> None:
        try:
            stage.run(ctx)
        except GenerateError as e:  # name the stage once, whoever raised it
            if e.message.startswith(f"stage {stage.name}"):
                raise
            raise GenerateError(f"stage {stage.name}: {e.message}") from e
        except (DrsearchError, KeyboardInterrupt):
            raise
        except Exception as e:  # a bug in a stage: one line naming it, not a traceback
            raise GenerateError(f"stage {stage.name} failed: {e.__class__.__name__}: {e}") from e
        missing = [o for o in stage.outputs if not ctx.path(o).is_file()]
        if missing:
            raise GenerateError(f"stage {stage.name} finished without writing {', '.join(missing)}")

    def run(self) -> dict[str, Any]:
        self.check_inputs()
        key_env = api_key_from_env(self.s.api_key_env) if self.s.cache_mode != "replay" else None
        ran: list[str] = []
        skipped: list[str] = []
        report: dict[str, Any] = {}
        with ExitStack() as stack:
            # one writer per output directory: a second generator on it is refused (exit 2)
            stack.enter_context(lock_dir(self.out, "generator output directory"))
            self.check_inputs()  # again, locked: the holder may have just written its manifest
            manifest = self.load(self.manifest_path, {"generator": self.p.name, "stages": {}})
            timings = self.load(self.timings_path, {"stages": {}})
            cache = ReplayCache(self.cache_path() if self.s.cache_mode != "off" else None, self.s.cache_mode)
            stack.callback(cache.close)
            chats: dict[str, CachedChat] = {}
            for stage in self.p.stages:
                for m in stage.models:
                    if m.base_url in chats:
                        continue
                    client = None
                    if self.s.cache_mode != "replay":  # replay is offline: no client at all
                        client = ChatClient.connect(m.base_url, key_env, retry=self.s.retry)
                        stack.callback(client.close)
                    chats[m.base_url] = CachedChat(client, cache)
            for i, stage in enumerate(self.p.stages):
                key = self.stage_key(stage)
                if not ran and self.up_to_date(stage, manifest["stages"].get(stage.name), key):
                    skipped.append(stage.name)
                else:
                    entry, timing, journal = self.run_stage(stage, key, chats, cache)
                    self.commit(manifest, i, entry)
                    journal.remove()  # only now: a crash before the commit resumes from it
                    timings["stages"][stage.name] = timing
                    write_json_atomic(self.timings_path, timings)
                    ran.append(stage.name)
                    report[stage.name] = {"model": timing["model"], "wall_s": timing["wall_s"]}
                if stage.name == self.s.until:
                    break
            timings["last_invocation"] = {"cache_mode": self.s.cache_mode, "concurrency": self.s.concurrency,
                                          "ran": ran, "skipped": skipped, "until": self.s.until}
            write_json_atomic(self.timings_path, timings)
        return {"generator": self.p.name, "out": str(self.out), "ran": ran, "skipped": skipped,
                "stopped_after": self.s.until,
                "counts": {name: e["counts"] for name, e in manifest["stages"].items()},
                "timings": report}


def run_pipeline(pipeline: Pipeline, settings: GenerateSettings,
                 progress: StageProgress | None = None) -> dict[str, Any]:
    """Run ``pipeline`` into ``settings.out`` (resuming, skipping unchanged stages); returns a
    summary ``{generator, out, ran, skipped, stopped_after, counts, timings}`` (``timings``:
    per stage run now, its model calls and tokens and its wall time, as in timings.json).
    ``progress`` is told how far each stage's items are.

    Raises PipelineInputError before writing anything for an unknown ``until`` stage, a
    missing external input, an output directory of another generator or a replay without a
    cache; GenerateError when a stage fails; ReplayMissError for a call replay cannot answer.
    """
    return _Runner(pipeline, settings, progress).run()


__all__ = ["RESERVED", "GenerateSettings", "Keep", "ModelEndpoint", "Outcome", "Pipeline", "Reject", "Stage",
           "StageContext", "StageProgress", "file_sha256", "generate_code_sha256", "run_pipeline"]
