"""The quantitative properties templates may use: id → label, value kind, unit (as Wikidata's
truthy ``wdt:`` statements hold them in the shipped fixture)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class Property:
    pid: str
    label: str
    kind: Literal["quantity", "coordinates", "date"]
    unit: str


PROPERTIES: dict[str, Property] = {p.pid: p for p in (
    Property("P2044", "elevation above sea level", "quantity", "m"),
    Property("P625", "coordinate location", "coordinates", "degrees"),
    Property("P1082", "population", "quantity", "people"),
    Property("P2046", "area", "quantity", "km²"),
    Property("P571", "inception", "date", "day"),
    Property("P576", "dissolved, abolished or demolished date", "date", "day"),
)}

GENERIC_PREDICATES: tuple[str, ...] = (
    "P31", "P279", "P30", "P361", "P910", "P373", "P1343", "P5008", "P6104")
"""Predicates that make no identifying clue (type, continent, part of, categories, ...):
excluded from chains unless the config lists its own."""

__all__ = ["GENERIC_PREDICATES", "PROPERTIES", "Property"]
