"""The agents layer: an LLM tool-calling loop over the search engine, with a run store
and a replay cache (contract in docs/DESIGN.md, usage in docs/AGENTS.md).

Public API (pinned by tests/agents/test_public_api.py)::

    Searcher (protocol): EngineSearcher(engine), HttpSearcher(client), CachedSearcher(cache, live)
    ChatClient(client, retry), CachedChat(client, cache), RetryPolicy
    Preset, PRESETS["dr256" | "closed-book"], load_preset(name | file); Question, read_questions
    LocalPython(), CachedPython(cache, live): the python tool's runners (a namespace sandbox)
    run_episode(question, preset, model, chat, searcher) -> Episode
    tool_schemas(preset, dialect="chat"|"responses"|"anthropic", strict=False); TOOL_DIALECTS
    execute(name, args, searcher, preset=DR256) -> ToolResult (.text for the model, .response)
    ReplayCache(path, mode); RunStore(dir); RunSpec; execute_run(spec) -> summary
    verify_cache(path) -> CacheCheck; upgrade_cache(path) -> rows signed
    BioCalls(cache, live, snapshot): the biomedical tools in a run (drsearch.biotools)
    load_snapshot(dir) -> ToolSnapshot; freeze(sources, out, base); coverage(snapshot, runs)
"""

from .biocalls import BioCalls
from .errors import (
    AgentError,
    CacheError,
    CorruptCacheError,
    EndpointError,
    EndpointProbeError,
    InfrastructureError,
    LLMError,
    LocalIOError,
    ReplayMissError,
    RunStoreError,
    SearcherError,
    SnapshotError,
    ToolServiceError,
    TransientLLMError,
    UnsignedCacheError,
)
from .llm import CachedChat, ChatClient, ChatOutcome, RetryPolicy
from .loop import FINAL_STATUSES, INFRA_STATUS, STATUSES, Accounting, Episode, run_episode
from .preset import CLOSED_BOOK, DR256, OPENBIORQ, PRESETS, TOOL_NAMES, Preset, load_preset
from .pytool import CachedPython, LocalPython, PythonRunner
from .questions import Question, read_questions
from .replay import (
    CACHE_MODES,
    CacheCheck,
    CachedSearcher,
    CacheMode,
    ReplayCache,
    upgrade_cache,
    verify_cache,
)
from .runner import RunSpec, code_version, execute_run
from .runstore import RunStore
from .searcher import CorpusInfo, EngineSearcher, HttpSearcher, Searcher, ToolResponse
from .snapshot import ToolSnapshot, coverage, freeze, load_snapshot
from .toolcalls import ParsedCall, parse_tool_calls
from .tools import TOOL_DIALECTS, ToolResult, execute, tool_schema_sha256, tool_schemas

__all__ = [
    "CACHE_MODES",
    "CLOSED_BOOK",
    "DR256",
    "FINAL_STATUSES",
    "INFRA_STATUS",
    "OPENBIORQ",
    "PRESETS",
    "STATUSES",
    "TOOL_DIALECTS",
    "TOOL_NAMES",
    "Accounting",
    "AgentError",
    "BioCalls",
    "CacheCheck",
    "CacheError",
    "CacheMode",
    "CachedChat",
    "CachedPython",
    "CachedSearcher",
    "ChatClient",
    "ChatOutcome",
    "CorpusInfo",
    "CorruptCacheError",
    "EndpointError",
    "EndpointProbeError",
    "EngineSearcher",
    "Episode",
    "HttpSearcher",
    "InfrastructureError",
    "LLMError",
    "LocalIOError",
    "LocalPython",
    "ParsedCall",
    "Preset",
    "PythonRunner",
    "Question",
    "ReplayCache",
    "ReplayMissError",
    "RetryPolicy",
    "RunSpec",
    "RunStore",
    "RunStoreError",
    "Searcher",
    "SearcherError",
    "SnapshotError",
    "ToolResponse",
    "ToolResult",
    "ToolServiceError",
    "ToolSnapshot",
    "TransientLLMError",
    "UnsignedCacheError",
    "code_version",
    "coverage",
    "execute",
    "execute_run",
    "freeze",
    "load_preset",
    "load_snapshot",
    "parse_tool_calls",
    "read_questions",
    "run_episode",
    "tool_schema_sha256",
    "tool_schemas",
    "upgrade_cache",
    "verify_cache",
]
