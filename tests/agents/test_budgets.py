"""Tool-call, token and time budgets end an episode with status ``budget`` and the reason."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from drsearch.agents import ChatClient, RetryPolicy
from drsearch.agents.llm import CachedChat
from drsearch.agents.loop import run_episode
from drsearch.agents.preset import DR256
from drsearch.agents.questions import read_questions
from drsearch.agents.replay import ReplayCache
from drsearch.agents.searcher import EngineSearcher
from drsearch.index import Engine

from ..helpers import DATA


def searching_model(tokens_per_call: int) -> CachedChat:
    """A model that never answers: every reply is one search call, with usage reported."""
    calls = [0]

    def handler(request: httpx.Request) -> httpx.Response:
        calls[0] += 1
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"c{calls[0]}", "type": "function",
            "function": {"name": "search", "arguments": json.dumps({"query": f"stadia {calls[0]}", "k": 3})}}]}
        return httpx.Response(200, json={
            "choices": [{"finish_reason": "tool_calls", "index": 0, "message": message}],
            "usage": {"prompt_tokens": tokens_per_call, "completion_tokens": 10, "total_tokens": tokens_per_call + 10}})

    http = httpx.Client(base_url="http://llm.test/v1", transport=httpx.MockTransport(handler))
    return CachedChat(ChatClient(http, RetryPolicy()), ReplayCache(None, "off"))


@pytest.mark.parametrize(
    ("budget", "status", "reason"),
    [
        ({"max_tool_calls": 3}, "budget", "tool-call budget of 3 spent"),
        ({"max_total_tokens": 250}, "budget", "token budget of 250 spent"),
        ({"max_episode_seconds": 1e-9}, "budget", "time budget"),
        ({}, "turn_cap", "no final answer within 5 turns"),
    ],
)
def test_budgets_end_the_episode(sample_index: Path, budget: dict[str, float], status: str,
                                 reason: str) -> None:
    preset = DR256.model_copy(update={"max_turns": 5, **budget})
    questions, _ = read_questions(DATA / "sample/questions.jsonl")
    with Engine.open(sample_index) as engine:
        episode = run_episode(questions[0], preset, "fake", searching_model(100), EngineSearcher(engine))
    record = episode.record
    assert record["status"] == status
    assert reason in record["reason"]
    if "max_tool_calls" in budget:
        assert len(record["tool_calls"]) == 3
    if "max_total_tokens" in budget:
        assert record["accounting"]["prompt_tokens"] + record["accounting"]["completion_tokens"] >= 250
