"""Evaluation presets: sampling parameters, budgets and tool limits as data.

A preset is a frozen pydantic object; ``PRESETS["dr256"]`` is docs/DESIGN.md's evaluation
protocol. New presets are new values (``Preset(**overrides)``), not code: a user's own is a
JSON file of :class:`Preset` fields, optionally ``"base": "dr256"`` to start from a named
one (:func:`load_preset`; ``drsearch run --preset FILE.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..biotools import BIOTOOL_NAMES, DOMAIN_TOOL_NAMES
from ..contract import DEFAULT_K, MAX_K, InvalidInputError
from .errors import describe_validation_error

ATTEMPT_SEED_STRIDE = 1_000_000  # > any benchmark index: attempts never share a seed

TOOL_NAMES = ("search", "open", "python", *BIOTOOL_NAMES, *DOMAIN_TOOL_NAMES)
"""Every tool a preset may list, in the order their schemas are sent (and hashed): the
corpus tools, python, the ten biomedical tools of :mod:`drsearch.biotools`, then DrBencher's
financial and security tools."""


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
    - ``tools``: the tools the model is offered, any subset of :data:`TOOL_NAMES` (kept in
      that order); ``[]`` is closed-book: requests carry neither ``tools`` nor
      ``tool_choice`` and the episode ends at the first reply.
    - ``python_cpu_s``/``python_memory_mb``/``python_wall_s``: resource limits of one
      ``python`` tool call (CPU seconds, address space, wall clock).
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
    search_k_default: int = Field(default=DEFAULT_K, ge=1, le=MAX_K)
    search_k_max: int = Field(default=20, ge=1, le=MAX_K)
    max_tool_response_chars: int = Field(default=12_000, ge=500)
    open_page_chars: int = Field(default=8_000, ge=200)
    tools: tuple[str, ...] = ("search", "open")
    python_cpu_s: int = Field(default=10, ge=1, le=3600)
    python_memory_mb: int = Field(default=1024, ge=64, le=65536)
    python_wall_s: float = Field(default=30.0, gt=0, le=3600)

    @field_validator("tools")
    @classmethod
    def _known_tools(cls, tools: tuple[str, ...]) -> tuple[str, ...]:
        unknown = [t for t in tools if t not in TOOL_NAMES]
        if unknown:
            raise ValueError(f"unknown tool {unknown[0]!r} (tools: {', '.join(TOOL_NAMES)})")
        if len(set(tools)) != len(tools):
            raise ValueError("a tool is listed twice")
        return tuple(t for t in TOOL_NAMES if t in tools)  # one spelling per set: one schema hash

    @property
    def closed_book(self) -> bool:
        """No tools: one model call, its reply is the answer."""
        return not self.tools

    @model_validator(mode="after")
    def _limits(self) -> Preset:
        if self.search_k_default > self.search_k_max:
            raise ValueError("search_k_default must not exceed search_k_max")
        if self.open_page_chars > self.max_tool_response_chars:
            raise ValueError("open_page_chars must not exceed max_tool_response_chars (a page must fit)")
        return self

    def for_attempt(self, attempt: int) -> Preset:
        """This preset for repeated attempt ``attempt`` (0: itself): the same fields, seeds
        moved by ``attempt * ATTEMPT_SEED_STRIDE`` so no two attempts of any question share
        a seed, and ``-attemptN`` appended to the name."""
        if attempt < 0:
            raise ValueError("attempt must be >= 0")
        if attempt == 0:
            return self
        return self.model_copy(update={"name": f"{self.name}-attempt{attempt}",
                                       "seed_base": self.seed_base + attempt * ATTEMPT_SEED_STRIDE})

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

CLOSED_BOOK = DR256.model_copy(update={"name": "closed-book", "max_turns": 1, "tools": ()})
"""DR-256 sampling, one turn, no tools: what a model answers from its own knowledge."""

OPENBIORQ = Preset(name="openbiorq", temperature=0.0, top_p=1.0, seed_base=20260812, max_turns=10,
                   tools=BIOTOOL_NAMES)
"""OpenBioRQ's harness: see PRESET_DESCRIPTIONS["openbiorq"]."""

OPENBIORQ_WEB = OPENBIORQ.model_copy(update={"name": "openbiorq-web",
                                              "tools": ("search", "open", *BIOTOOL_NAMES)})
"""OpenBioRQ's settings with the frozen web corpus's search and open beside the ten tools."""

PRESET_DESCRIPTIONS: dict[str, str] = {
    "closed-book": "DR-256 sampling, one turn, no tools.",
    "dr256": "DR-256's evaluation protocol (docs/DESIGN.md): search and open over the frozen corpus.",
    "openbiorq": ("The agent harness of \"OpenBioRQ: Unsolved Biomedical Research Questions for Agents\" "
                  "(§4): ten biomedical tools wrapping public APIs (pubmed, clinicaltrialsgov, openfda, "
                  "opentargets, chembl, uniprot, pubchem, kegg, ncbi_datasets, biomcp), up to ten rounds, "
                  "deterministic decoding (temperature 0, one attempt)."),
    "openbiorq-web": "openbiorq's settings with the frozen corpus's search and open beside the ten tools.",
}
"""One line per named preset (``drsearch run --help``, docs/AGENTS.md)."""

PRESETS: dict[str, Preset] = {"closed-book": CLOSED_BOOK, "dr256": DR256, "openbiorq": OPENBIORQ,
                              "openbiorq-web": OPENBIORQ_WEB}


def load_preset(ref: str) -> Preset:
    """The preset named ``ref`` in :data:`PRESETS`, else the JSON file at path ``ref``.

    The file holds one object of :class:`Preset` fields; with ``"base": NAME`` the fields
    given override that named preset's (so ``{"base": "dr256", "name": "dr256-8turns",
    "max_turns": 8}`` is complete); ``name`` defaults to the file's stem. Raises
    InvalidInputError, in one line, for an unknown name, an unreadable or non-JSON file, an
    unknown base, or invalid fields.
    """
    if ref in PRESETS:
        return PRESETS[ref]
    path = Path(ref)
    if not path.is_file():
        raise InvalidInputError(f"unknown preset {ref!r}: not a known name ({', '.join(sorted(PRESETS))}) "
                                "nor a JSON file of preset fields")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise InvalidInputError(f"preset file {path}: not readable JSON ({e})") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"preset file {path}: expected a JSON object of preset fields")
    fields = {"name": path.stem, **data}  # a file that names no preset is named after itself
    base = fields.pop("base", None)
    if base is not None:
        if base not in PRESETS:
            raise InvalidInputError(f"preset file {path}: unknown base {base!r} "
                                    f"(known: {', '.join(sorted(PRESETS))})")
        fields = {**PRESETS[base].model_dump(), **fields}
    try:
        return Preset.model_validate(fields)
    except ValidationError as e:
        raise InvalidInputError(f"preset file {path}: {describe_validation_error(e)}") from None


__all__ = ["ATTEMPT_SEED_STRIDE", "CLOSED_BOOK", "DR256", "OPENBIORQ", "OPENBIORQ_WEB", "PRESETS",
           "PRESET_DESCRIPTIONS", "TOOL_NAMES", "Preset", "load_preset"]
