"""Evaluation presets: sampling parameters, budgets and tool limits as data.

A preset is a frozen pydantic object; ``PRESETS["dr256"]`` is DESIGN.md's evaluation
protocol. New presets are new values (``Preset(**overrides)``), not code.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Preset(BaseModel):
    """What an episode sends and how long it may run.

    - ``temperature``/``top_p``/``max_tokens``: standard chat-completions fields.
    - ``extra_body``: server-specific sampling fields sent at the top level of the request
      (``top_k`` for vLLM/SGLang/llama.cpp).
    - ``seed_base``: every call of question *i* sends ``seed = seed_base + i``.
    - ``max_turns``: model calls per episode; ``None`` budgets are unlimited.
    - ``search_k_default``/``search_k_max``: the ``k`` the search tool uses / accepts.
    - ``max_tool_response_chars``: cap on one formatted tool response; ``open_page_chars``:
      characters of a document per ``open`` page.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    temperature: float = Field(ge=0, le=2)
    top_p: float = Field(gt=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    seed_base: int = Field(ge=0)
    max_turns: int = Field(ge=1, le=1000)
    max_tool_calls: int | None = Field(default=None, ge=1)
    max_total_tokens: int | None = Field(default=None, ge=1)
    max_episode_seconds: float | None = Field(default=None, gt=0)
    search_k_default: int = Field(default=10, ge=1, le=100)
    search_k_max: int = Field(default=20, ge=1, le=100)
    max_tool_response_chars: int = Field(default=12_000, ge=500)
    open_page_chars: int = Field(default=8_000, ge=200)

    def seed_for(self, index: int) -> int:
        """The seed of every call of the question with benchmark index ``index``."""
        return self.seed_base + index

    def sampling(self, index: int) -> dict[str, Any]:
        """The sampling fields of a request body for question ``index``."""
        body: dict[str, Any] = {"temperature": self.temperature, "top_p": self.top_p,
                                "seed": self.seed_for(index), **self.extra_body}
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body


DR256 = Preset(name="dr256", temperature=0.6, top_p=0.95, extra_body={"top_k": 20},
               seed_base=20260811, max_turns=20)

PRESETS: dict[str, Preset] = {"dr256": DR256}

__all__ = ["DR256", "PRESETS", "Preset"]
