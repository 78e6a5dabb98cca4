"""Prices and cost: a user's price file turns a run's (or a judge's) usage into US dollars.

The price file (JSON, or TOML by its ``.toml`` suffix; docs/AGENTS.md, "Cost")::

    {"currency": "USD",
     "models": {"MODEL": {"input_usd_per_mtok": 0.15, "output_usd_per_mtok": 0.60}},
     "tools": {"search": {"usd_per_call": 0.001}},
     "source": "where these prices come from, and when"}

Token prices are per million tokens; ``output`` is billed on ``completion_tokens`` as the
endpoint reports them (reasoning tokens included, as OpenAI-compatible APIs count them). A
tool absent from ``tools`` costs nothing (a local corpus's search is free); a *model*
absent from ``models`` is an error (:meth:`PriceTable.require`), never a silent 0.

Numbers are read as decimals and summed exactly, so the same usage and prices give the same
bytes; they are written as JSON numbers rounded to 1e-9 USD.
"""

from __future__ import annotations

import hashlib
import json
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from ..contract import InvalidInputError

MTOK = Decimal(1_000_000)
_MODEL_KEYS = {"input_usd_per_mtok", "output_usd_per_mtok"}
_TOP_KEYS = {"currency", "models", "tools", "source", "as_of", "note"}


@dataclass(frozen=True)
class ModelPrice:
    input_usd_per_mtok: Decimal
    output_usd_per_mtok: Decimal


@dataclass(frozen=True)
class PriceTable:
    """A parsed price file: where it is, its SHA-256 (recorded beside every cost), the prices."""

    path: Path
    sha256: str
    models: Mapping[str, ModelPrice]
    tools: Mapping[str, Decimal]

    def require(self, model: str, role: str) -> ModelPrice:
        """The prices of ``model``; InvalidInputError (exit 2) naming the file when it has none."""
        price = self.models.get(model)
        if price is None:
            known = ", ".join(sorted(self.models)) or "none"
            raise InvalidInputError(f"--prices {self.path}: no price for the {role} model {model!r} "
                                    f"(priced: {known}); add it under \"models\"")
        return price

    def provenance(self) -> dict[str, str]:
        return {"path": str(self.path), "sha256": self.sha256}


def _amount(value: Any, where: str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise InvalidInputError(f"{where}: expected a number of USD, got {value!r}")
    try:
        amount = Decimal(str(value)) if not isinstance(value, Decimal) else value
    except InvalidOperation:
        raise InvalidInputError(f"{where}: not a number ({value!r})") from None
    if not amount.is_finite() or amount < 0:
        raise InvalidInputError(f"{where}: must be a finite number >= 0, got {value}")
    return amount


def _parse(path: Path, data: bytes) -> dict[str, Any]:
    try:
        if path.suffix == ".toml":
            return tomllib.loads(data.decode("utf-8"), parse_float=Decimal)
        parsed = json.loads(data, parse_float=Decimal)
    except (ValueError, UnicodeDecodeError) as e:
        raise InvalidInputError(f"--prices {path}: not valid {'TOML' if path.suffix == '.toml' else 'JSON'} "
                                f"({e})") from None
    if not isinstance(parsed, dict):
        raise InvalidInputError(f"--prices {path}: expected an object with \"models\"")
    return parsed


def load_prices(path: str | Path) -> PriceTable:
    """Read and check a price file; InvalidInputError (one line naming the file) when it is
    missing, not JSON/TOML, or holds an unknown key, a negative or non-numeric price."""
    where = Path(path)
    try:
        data = where.read_bytes()
    except OSError as e:
        raise InvalidInputError(f"--prices {where}: cannot read ({e.strerror or e})") from None
    raw = _parse(where, data)
    if unknown := sorted(set(raw) - _TOP_KEYS):
        raise InvalidInputError(f"--prices {where}: unknown key(s) {', '.join(unknown)} "
                                f"(expected {', '.join(sorted(_TOP_KEYS))})")
    if raw.get("currency", "USD") != "USD":
        raise InvalidInputError(f"--prices {where}: currency must be USD, got {raw['currency']!r}")
    models_raw, tools_raw = raw.get("models"), raw.get("tools", {})
    if not isinstance(models_raw, dict) or not isinstance(tools_raw, dict):
        raise InvalidInputError(f"--prices {where}: \"models\" (and \"tools\", if given) must be objects")
    models = {}
    for name, entry in models_raw.items():
        if not isinstance(entry, dict) or set(entry) != _MODEL_KEYS:
            raise InvalidInputError(f"--prices {where}: models.{name} must have exactly "
                                    f"{' and '.join(sorted(_MODEL_KEYS))}")
        models[str(name)] = ModelPrice(*(_amount(entry[k], f"--prices {where}: models.{name}.{k}")
                                         for k in ("input_usd_per_mtok", "output_usd_per_mtok")))
    tools = {}
    for name, entry in tools_raw.items():
        if not isinstance(entry, dict) or set(entry) != {"usd_per_call"}:
            raise InvalidInputError(f"--prices {where}: tools.{name} must be {{\"usd_per_call\": N}}")
        tools[str(name)] = _amount(entry["usd_per_call"], f"--prices {where}: tools.{name}.usd_per_call")
    return PriceTable(where, hashlib.sha256(data).hexdigest(), models, tools)


def usd(amount: Decimal) -> float:
    """A JSON number of USD, rounded to 1e-9 (exact sums, one rounding at the end)."""
    return float(amount.quantize(Decimal("1e-9")))


def tokens_usd(price: ModelPrice, input_tokens: int, output_tokens: int) -> tuple[Decimal, Decimal]:
    return (price.input_usd_per_mtok * input_tokens / MTOK, price.output_usd_per_mtok * output_tokens / MTOK)


def episode_usd(table: PriceTable, model: str, accounting: Mapping[str, Any]) -> Decimal:
    """The cost of one episode's accounting (its tokens and its priced tool calls)."""
    inp, out = tokens_usd(table.require(model, "agent"), int(accounting.get("prompt_tokens") or 0),
                          int(accounting.get("completion_tokens") or 0))
    calls = accounting.get("tool_calls") or {}
    tools = sum((table.tools.get(t, Decimal(0)) * int(n) for t, n in calls.items()), Decimal(0))
    return inp + out + tools


def cost_object(table: PriceTable, usage: Mapping[str, tuple[int, int]], tool_calls: Mapping[str, int],
                role: str, episodes: int) -> dict[str, Any]:
    """The ``cost`` object of run.json and scores.json (docs/AGENTS.md, "Cost"): per model its
    tokens and USD, per tool its calls and USD (``usd_per_call`` null: the file prices it not,
    so it is free), the total, and the price file's path and SHA-256."""
    total = Decimal(0)
    models: dict[str, Any] = {}
    for model, (inp_tokens, out_tokens) in sorted(usage.items()):
        price = table.require(model, role)
        inp, out = tokens_usd(price, inp_tokens, out_tokens)
        total += inp + out
        models[model] = {"input_tokens": inp_tokens, "input_usd": usd(inp),
                         "input_usd_per_mtok": usd(price.input_usd_per_mtok), "output_tokens": out_tokens,
                         "output_usd": usd(out), "output_usd_per_mtok": usd(price.output_usd_per_mtok),
                         "total_usd": usd(inp + out)}
    tools: dict[str, Any] = {}
    tools_total = Decimal(0)
    for tool, calls in sorted(tool_calls.items()):
        each = table.tools.get(tool)
        spent = Decimal(0) if each is None else each * calls
        tools_total += spent
        tools[tool] = {"calls": calls, "total_usd": usd(spent),
                       "usd_per_call": None if each is None else usd(each)}
    total += tools_total
    return {"currency": "USD", "episodes": episodes, "models": models, "prices": table.provenance(),
            "tool_calls_usd": usd(tools_total), "tools": tools, "total_usd": usd(total)}


def run_cost(table: PriceTable, model: str, records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The cost of a run's episodes (their ``accounting``), all by ``model``."""
    inp = out = episodes = 0
    calls: dict[str, int] = {}
    for r in records:
        acc = r.get("accounting") or {}
        if not acc:
            continue
        episodes += 1
        inp += int(acc.get("prompt_tokens") or 0)
        out += int(acc.get("completion_tokens") or 0)
        for tool, n in (acc.get("tool_calls") or {}).items():
            calls[tool] = calls.get(tool, 0) + int(n)
    return cost_object(table, {model: (inp, out)}, calls, "agent", episodes)


__all__ = ["ModelPrice", "PriceTable", "cost_object", "episode_usd", "load_prices", "run_cost", "usd"]
