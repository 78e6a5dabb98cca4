"""The quantitative properties templates may use: id → label, value kind, the unit templates
take, and for quantities the units table: every Wikidata unit item a statement may state the
value in, with its exact factor into the template unit.

Wikidata states a quantity in the unit its editors entered (an elevation may be in feet);
the truthy ``wdt:`` value is that bare number. So quantities are read from the best-rank
statement's value node (``p:P/psv:P`` → ``wikibase:quantityAmount``,
``wikibase:quantityUnit``) and converted here; a unit missing from the table rejects the
entity (``unknown_unit``), never a number in the wrong unit. Wikidata's own normalised value
(``psn:``) is not used: it is SI (m² for an area, nothing for a population), so a table
would be needed anyway, and it does not tell which unit was stated.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Literal


@dataclass(frozen=True)
class Unit:
    """A Wikidata unit item: its label and the exact factor into the property's unit."""

    label: str
    factor: Decimal


@dataclass(frozen=True)
class Property:
    pid: str
    label: str
    kind: Literal["quantity", "coordinates", "date"]
    unit: str
    units: Mapping[str, Unit] = field(default_factory=dict)
    """Quantities: unit QID → :class:`Unit` (exact factors: 1 ft = 0.3048 m, 1 mi = 1,609.344 m,
    1 acre = 4,046.8564224 m²)."""


METRE, FOOT, KILOMETRE = "Q11573", "Q3710", "Q828224"
SQUARE_KILOMETRE, SQUARE_METRE, HECTARE = "Q712226", "Q25343", "Q35852"
SQUARE_MILE, ACRE = "Q232291", "Q81292"
ONE = "Q199"
"""Wikidata's unit of a plain count ("1"), as a population is stated."""

PROPERTIES: dict[str, Property] = {p.pid: p for p in (
    Property("P2044", "elevation above sea level", "quantity", "m", {
        METRE: Unit("metre", Decimal(1)), FOOT: Unit("foot", Decimal("0.3048")),
        KILOMETRE: Unit("kilometre", Decimal(1000))}),
    Property("P625", "coordinate location", "coordinates", "degrees"),
    Property("P1082", "population", "quantity", "people", {ONE: Unit("1", Decimal(1))}),
    Property("P2046", "area", "quantity", "km²", {
        SQUARE_KILOMETRE: Unit("square kilometre", Decimal(1)),
        SQUARE_METRE: Unit("square metre", Decimal("0.000001")), HECTARE: Unit("hectare", Decimal("0.01")),
        SQUARE_MILE: Unit("square mile", Decimal("2.589988110336")),
        ACRE: Unit("acre", Decimal("0.0040468564224"))}),
    Property("P571", "inception", "date", "day"),
    Property("P576", "dissolved, abolished or demolished date", "date", "day"),
)}

GENERIC_PREDICATES: tuple[str, ...] = (
    "P31", "P279", "P30", "P361", "P910", "P373", "P1343", "P5008", "P6104")
"""Predicates that make no identifying clue (type, continent, part of, categories, ...):
excluded from chains unless the config lists its own."""

__all__ = ["GENERIC_PREDICATES", "PROPERTIES", "Property", "Unit"]
