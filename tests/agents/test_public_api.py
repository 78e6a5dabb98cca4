"""The agents layer's public surface changes only on purpose; the DR-256 preset is pinned."""

from __future__ import annotations

import drsearch.agents as agents
from drsearch.agents import DR256, PRESETS, Preset


def test_public_api() -> None:
    assert set(agents.__all__) == {
        "CACHE_MODES", "DR256", "PRESETS", "STATUSES", "Accounting", "AgentError", "CacheMode", "CachedChat",
        "CachedSearcher", "ChatClient", "ChatOutcome", "CorpusInfo", "EngineSearcher", "Episode",
        "HttpSearcher", "LLMError", "ParsedCall", "Preset", "Question", "ReplayCache", "ReplayMissError",
        "RetryPolicy", "RunSpec", "RunStore", "RunStoreError", "Searcher", "SearcherError", "ToolResponse",
        "TransientLLMError", "code_version", "execute_run", "parse_tool_calls", "read_questions",
        "run_episode", "tool_schema_sha256", "tool_schemas"}
    for name in agents.__all__:
        assert getattr(agents, name) is not None


def test_dr256_preset() -> None:
    assert PRESETS["dr256"] is DR256
    assert DR256.sampling(7) == {"seed": 20260818, "temperature": 0.6, "top_k": 20, "top_p": 0.95}
    assert DR256.max_turns == 20
    other = Preset(**{**DR256.model_dump(), "name": "greedy", "temperature": 0.0})  # presets are data
    assert other.sampling(0)["temperature"] == 0.0
