"""The agents layer's public surface changes only on purpose; the DR-256 preset is pinned."""

from __future__ import annotations

import json
from pathlib import Path

import drsearch.agents as agents
from drsearch.agents import DR256, PRESETS, Preset, load_preset


def test_public_api() -> None:
    assert set(agents.__all__) == {
        "CACHE_MODES", "CLOSED_BOOK", "DR256", "FINAL_STATUSES", "INFRA_STATUS", "PRESETS", "STATUSES",
        "TOOL_NAMES", "Accounting", "AgentError", "CacheMode", "CachedChat", "CachedPython", "CachedSearcher",
        "ChatClient", "ChatOutcome", "CorpusInfo", "EndpointError", "EndpointProbeError", "EngineSearcher",
        "Episode", "HttpSearcher", "InfrastructureError", "LLMError", "LocalIOError", "LocalPython", "ParsedCall",
        "Preset", "PythonRunner", "Question", "ReplayCache", "ReplayMissError",
        "RetryPolicy", "RunSpec", "RunStore", "RunStoreError", "Searcher", "SearcherError", "ToolResponse",
        "TransientLLMError", "code_version", "execute", "execute_run", "TOOL_DIALECTS", "ToolResult", "load_preset", "parse_tool_calls", "read_questions",
        "run_episode", "tool_schema_sha256", "tool_schemas",
        "CacheCheck", "CacheError", "CorruptCacheError", "UnsignedCacheError", "upgrade_cache", "verify_cache"}
    for name in agents.__all__:
        assert getattr(agents, name) is not None


def test_dr256_preset() -> None:
    assert PRESETS["dr256"] is DR256
    assert DR256.sampling(7) == {"seed": 20260818, "temperature": 0.6, "top_k": 20, "top_p": 0.95}
    assert DR256.max_turns == 20
    other = Preset(**{**DR256.model_dump(), "name": "greedy", "temperature": 0.0})  # presets are data
    assert other.sampling(0)["temperature"] == 0.0


def test_a_preset_is_a_name_or_a_json_file(tmp_path: Path) -> None:
    assert load_preset("dr256") is DR256
    whole = tmp_path / "greedy.json"  # every field given: no base needed; named after the file
    fields = {k: v for k, v in DR256.model_dump().items() if k != "name"}
    whole.write_text(json.dumps({**fields, "temperature": 0.0}))
    greedy = load_preset(str(whole))
    assert greedy.name == "greedy" and greedy.temperature == 0.0 and greedy.extra_body == {"top_k": 20}
    short = tmp_path / "short.json"
    short.write_text(json.dumps({"base": "dr256", "name": "dr256-8", "max_turns": 8}))
    assert load_preset(str(short)) == DR256.model_copy(update={"name": "dr256-8", "max_turns": 8})
