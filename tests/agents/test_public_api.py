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
        "CacheCheck", "CacheError", "CorruptCacheError", "UnsignedCacheError", "upgrade_cache", "verify_cache",
        "OPENBIORQ", "BioCalls", "SnapshotError", "ToolServiceError", "ToolSnapshot", "coverage", "freeze",
        "load_snapshot"}
    for name in agents.__all__:
        assert getattr(agents, name) is not None


def test_dr256_preset() -> None:
    assert PRESETS["dr256"] is DR256
    assert DR256.sampling(7) == {"seed": 20260818, "temperature": 0.6, "top_k": 20, "top_p": 0.95}
    assert DR256.max_turns == 20
    other = Preset(**{**DR256.model_dump(), "name": "greedy", "temperature": 0.0})  # presets are data
    assert other.sampling(0)["temperature"] == 0.0


def test_openbiorq_presets_are_the_papers_settings() -> None:
    """OpenBioRQ's harness: the ten tools, up to ten rounds, temperature 0; and the same with the
    corpus's search and open beside them. Their schemas go out in TOOL_NAMES order."""
    from drsearch.agents.preset import PRESET_DESCRIPTIONS
    from drsearch.biotools import BIOTOOL_NAMES

    p = PRESETS["openbiorq"]
    assert p is agents.OPENBIORQ and p.tools == BIOTOOL_NAMES and len(p.tools) == 10
    assert p.max_turns == 10 and p.temperature == 0.0 and p.sampling(0)["temperature"] == 0.0
    assert "OpenBioRQ: Unsolved Biomedical Research Questions for Agents" in PRESET_DESCRIPTIONS["openbiorq"]
    web = PRESETS["openbiorq-web"]
    assert web.tools == ("search", "open", *BIOTOOL_NAMES) and web.temperature == 0.0
    names = [t["function"]["name"] for t in agents.tool_schemas(web)]
    assert names == ["search", "open", *BIOTOOL_NAMES]
    assert set(PRESET_DESCRIPTIONS) == set(PRESETS)
    mixed = Preset(**{**DR256.model_dump(), "name": "m", "tools": ["kegg", "search", "pubmed"]})
    assert mixed.tools == ("search", "pubmed", "kegg")  # one spelling per set: one schema hash


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
