"""The scripted chat-completions server of the agent tests: shipped as
``scripts/offline_recipe/chat.py`` (the construction recipe's offline reference agent runs on
it too); re-exported here for the tests."""

from __future__ import annotations

from offline_recipe.chat import (
    ATTEMPT_STRIDE,
    DEFAULT_SCRIPT,
    SEED_BASE,
    FakeLLM,
    Responder,
    Rule,
    RuleResponder,
    ScriptKey,
    attempt_and_index,
    serve_chat,
    serve_fake,
    serve_rules,
)

__all__ = ["ATTEMPT_STRIDE", "DEFAULT_SCRIPT", "SEED_BASE", "FakeLLM", "Responder", "Rule", "RuleResponder",
           "ScriptKey", "attempt_and_index", "serve_chat", "serve_fake", "serve_rules"]
