"""Question templates: typed pure functions from knowledge-graph values to a gold number.

The gold is computed by code from KG values *before* any question text exists; no model
output is ever a gold. Each :class:`Template` declares the properties it needs (per entity),
its unit, its rounding and tolerance, how its scenario parameters are drawn (from a
``random.Random`` the caller seeds with (seed, candidate id)) and a readable formula.
:func:`compute_gold` runs one and :func:`verify_gold` re-runs it (the Validate stage's
``gold_reproduces`` check).

Constants are the textbook ones: Earth radius R = 6,371,000 m (6,371 km for great-circle
distances), g0 = 9.81 m/s², the International Standard Atmosphere for pressure, the Antoine
equation for water (1–100 °C) for the boiling point.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

Coordinates = tuple[float, float]
"""(latitude, longitude) in degrees."""
Value = Decimal | Coordinates | date
"""One property value: a quantity, coordinates or a day."""
EntityValues = Mapping[str, Value]
"""An entity's values by property id (``P2044`` ...)."""
Params = Mapping[str, float | int]

EARTH_RADIUS_M = 6_371_000.0
G0 = 9.81
ISA_P0_PA = 101_325.0
ISA_T0_K = 288.15
ISA_LAPSE_K_PER_M = 0.0065
ISA_G = 9.80665
ISA_M = 0.0289644  # molar mass of dry air, kg/mol
ISA_R = 8.3144598  # universal gas constant, J/(mol·K)
ANTOINE_WATER = (8.07131, 1730.63, 233.426)  # mmHg, °C, valid 1–100 °C
PA_PER_MMHG = 133.322387415


class TemplateError(ValueError):
    """A template applied to values it cannot use (a missing property, a zero area)."""


@dataclass(frozen=True)
class Template:
    """One computation. ``properties[i]`` are the property ids entity i must have."""

    name: str
    domains: tuple[str, ...]
    properties: tuple[tuple[str, ...], ...]
    unit: str
    """The gold's unit as the question states it (``''``: a pure number)."""
    label_unit: str
    """The unit written after the number in the gold label (one the numeric grader reads, or '')."""
    decimals: int
    tolerance: str
    """Relative tolerance, as a decimal string: the V1 filter grades with it. It is what
    ``drsearch score --judge numeric`` applies to the template's domain: the default 2 %,
    and ``"0"`` (exact match) for history, the DrBencher paper's rule and the grader's
    ``exact_domains`` -- a template with another tolerance would be graded differently there."""
    task: str
    """What the question asks to compute (for the Compose prompt)."""
    draw: Callable[[random.Random], dict[str, float | int]]
    compute: Callable[[Sequence[EntityValues], Params], float]
    formula: Callable[[Sequence[EntityValues], Params], str]
    derive: Callable[[Sequence[EntityValues]], dict[str, float | int]] = lambda v: {}
    """Scenario parameters that follow from the values (the fiscal years a growth spans), merged
    into the drawn ones so the question states them."""
    stated: tuple[str, ...] = ()
    """Properties whose values the question states through ``derive`` (not a value leak)."""

    @property
    def entities(self) -> int:
        return len(self.properties)


@dataclass(frozen=True)
class Gold:
    value: Decimal
    """Rounded to the template's decimals (half up)."""
    label: str
    """The gold as the DR-256 ``label``: the number (and the unit the grader reads)."""
    formula: str
    unit: str
    tolerance: str


def _num(values: EntityValues, pid: str) -> float:
    v = values.get(pid)
    if not isinstance(v, Decimal):
        raise TemplateError(f"needs a number for {pid}, got {v!r}")
    return float(v)


def _coords(values: EntityValues, pid: str = "P625") -> Coordinates:
    v = values.get(pid)
    if not (isinstance(v, tuple) and len(v) == 2):
        raise TemplateError(f"needs coordinates for {pid}, got {v!r}")
    return v


def _day(values: EntityValues, pid: str) -> date:
    v = values.get(pid)
    if not isinstance(v, date):
        raise TemplateError(f"needs a date for {pid}, got {v!r}")
    return v


# -- the computations (pure) ---------------------------------------------------------------

def population_density(population: float, area_km2: float) -> float:
    """People per km²."""
    if area_km2 <= 0:
        raise TemplateError(f"area {area_km2} km² is not positive")
    return population / area_km2


def compound_growth(start: float, rate_percent: float, years: int) -> float:
    """``start · (1 + rate/100)^years``."""
    return start * (1.0 + rate_percent / 100.0) ** years


def haversine_km(a: Coordinates, b: Coordinates, radius_km: float = EARTH_RADIUS_M / 1000.0) -> float:
    """Great-circle distance between two (lat, lon) points on a sphere of ``radius_km``."""
    lat1, lon1, lat2, lon2 = map(math.radians, (a[0], a[1], b[0], b[1]))
    h = math.sin((lat2 - lat1) / 2) ** 2 + math.cos(lat1) * math.cos(lat2) * math.sin((lon2 - lon1) / 2) ** 2
    return 2 * radius_km * math.asin(min(1.0, math.sqrt(h)))


def barometric_pressure_hpa(altitude_m: float) -> float:
    """ISA troposphere: ``p0 · (1 − L·h/T0)^(g·M/(R·L))``, in hPa (valid below 11 km)."""
    base = 1.0 - ISA_LAPSE_K_PER_M * altitude_m / ISA_T0_K
    if base <= 0:
        raise TemplateError(f"altitude {altitude_m} m is outside the troposphere formula")
    exponent = ISA_G * ISA_M / (ISA_R * ISA_LAPSE_K_PER_M)
    return ISA_P0_PA * math.pow(base, exponent) / 100.0


def boiling_point_c(altitude_m: float) -> float:
    """Water's boiling point at the ISA pressure of ``altitude_m`` (Antoine equation), °C."""
    a, b, c = ANTOINE_WATER
    mmhg = barometric_pressure_hpa(altitude_m) * 100.0 / PA_PER_MMHG
    return b / (a - math.log10(mmhg)) - c


def pendulum_drift_s_per_day(altitude_m: float, radius_m: float = EARTH_RADIUS_M, g0: float = G0) -> float:
    """Seconds a pendulum clock regulated at sea level loses per day at ``altitude_m``:
    g(h) = g0·(R/(R+h))², drift = 86,400·(√(g0/g(h)) − 1)."""
    g_h = g0 * (radius_m / (radius_m + altitude_m)) ** 2
    return 86_400.0 * (math.sqrt(g0 / g_h) - 1.0)


def moles_mmol(mass_g: float, molar_mass_g_per_mol: float) -> float:
    """Amount of substance in ``mass_g`` grams, in millimoles."""
    if molar_mass_g_per_mol <= 0:
        raise TemplateError(f"molar mass {molar_mass_g_per_mol} g/mol is not positive")
    return mass_g / molar_mass_g_per_mol * 1000.0


def molarity_mol_per_l(mass_g: float, molar_mass_g_per_mol: float, volume_l: float) -> float:
    """Concentration of ``mass_g`` grams dissolved to ``volume_l`` litres, mol/L."""
    return moles_mmol(mass_g, molar_mass_g_per_mol) / 1000.0 / volume_l


def mean_residue_mass(mass_da: float, length: float) -> float:
    """Average mass of one residue (sequence mass / length), Da."""
    if length <= 0:
        raise TemplateError(f"sequence length {length} is not positive")
    return mass_da / length


def cagr_percent(start: float, end: float, years: int) -> float:
    """Compound annual growth rate from ``start`` to ``end`` over ``years`` years, in %."""
    if start <= 0 or end <= 0 or years <= 0:
        raise TemplateError(f"CAGR needs positive values and years (start {start}, end {end}, years {years})")
    return float(((end / start) ** (1.0 / years) - 1.0) * 100.0)


def ratio_percent(part: float, whole: float) -> float:
    if whole == 0:
        raise TemplateError("the denominator is zero")
    return part / whole * 100.0


def days_between(start: date, end: date) -> int:
    if end < start:
        raise TemplateError(f"{end} is before {start}")
    return (end - start).days


# -- the templates -------------------------------------------------------------------------

def _fmt(x: float) -> str:
    return f"{x:,.10g}"


def _fiscal_years(v: Sequence[EntityValues]) -> dict[str, float | int]:
    fy = int(_num(v[0], "sec:fiscal_year"))
    return {"fiscal_year_end": fy, "fiscal_year_start": fy - 2}


def _fiscal_year(v: Sequence[EntityValues]) -> dict[str, float | int]:
    return {"fiscal_year": int(_num(v[0], "sec:fiscal_year"))}


TEMPLATES: dict[str, Template] = {t.name: t for t in (
    Template(
        "population_density", ("geography", "cities", "countries"), (("P1082", "P2046"),),
        "people per km²", "",
        1, "0.02", "its population density (inhabitants per square kilometre)",
        lambda rng: {},
        lambda v, p: population_density(_num(v[0], "P1082"), _num(v[0], "P2046")),
        lambda v, p: f"population {_fmt(_num(v[0], 'P1082'))} / area {_fmt(_num(v[0], 'P2046'))} km²"),
    Template(
        "compound_growth", ("geography", "cities", "countries"), (("P1082",),), "people", "",
        0, "0.02", "its population after the given number of years of compound growth at the given "
                   "annual rate",
        lambda rng: {"rate_percent": rng.choice((0.5, 1.0, 1.5, 2.0, 2.5, 3.0)), "years": rng.randint(5, 30)},
        lambda v, p: compound_growth(_num(v[0], "P1082"), float(p["rate_percent"]), int(p["years"])),
        lambda v, p: f"{_fmt(_num(v[0], 'P1082'))} × (1 + {p['rate_percent']}/100)^{p['years']}"),
    Template(
        "haversine_distance", ("geography", "cities", "mountains"), (("P625",), ("P625",)), "km", "km",
        1, "0.02", "the great-circle distance between the two entities (Earth radius 6,371 km)",
        lambda rng: {},
        lambda v, p: haversine_km(_coords(v[0]), _coords(v[1])),
        lambda v, p: f"haversine({_coords(v[0])}, {_coords(v[1])}), R = 6371 km"),
    Template(
        "barometric_pressure", ("mountains",), (("P2044",),), "hPa", "",
        1, "0.02", "the standard-atmosphere air pressure at its summit elevation, in hPa",
        lambda rng: {},
        lambda v, p: barometric_pressure_hpa(_num(v[0], "P2044")),
        lambda v, p: f"1013.25 hPa × (1 − 0.0065 × {_fmt(_num(v[0], 'P2044'))} / 288.15)^5.25588"),
    Template(
        "boiling_point", ("mountains",), (("P2044",),), "°C", "°C",
        1, "0.02", "the boiling point of water at its summit elevation (standard atmosphere, Antoine "
                   "equation)",
        lambda rng: {},
        lambda v, p: boiling_point_c(_num(v[0], "P2044")),
        lambda v, p: f"Antoine(water) at ISA pressure of {_fmt(_num(v[0], 'P2044'))} m"),
    Template(
        "pendulum_drift", ("mountains",), (("P2044",),), "s/day", "s/day",
        2, "0.02", "how many seconds per day a pendulum clock regulated at sea level loses at its summit "
                   "(g(h) = 9.81·(R/(R+h))², R = 6,371,000 m)",
        lambda rng: {},
        lambda v, p: pendulum_drift_s_per_day(_num(v[0], "P2044")),
        lambda v, p: f"86400 × (sqrt(9.81 / g(h)) − 1), g(h) = 9.81 × (6371000 / (6371000 + "
                     f"{_fmt(_num(v[0], 'P2044'))}))²"),
    Template(
        "date_difference", ("history",), (("P571", "P576"),), "days", "days",
        0, "0", "the number of days from its founding to its dissolution",
        lambda rng: {},
        lambda v, p: float(days_between(_day(v[0], "P571"), _day(v[0], "P576"))),
        lambda v, p: f"{_day(v[0], 'P576').isoformat()} − {_day(v[0], 'P571').isoformat()} in days"),
    # -- biochemistry (PubChem, UniProt) ---------------------------------------------------
    Template(
        "molar_amount", ("biochemistry",), (("pubchem:molecular_weight",),), "mmol", "",
        2, "0.02", "the amount of substance, in millimoles, in the given mass of the compound "
                   "(its molecular weight as PubChem lists it)",
        lambda rng: {"mass_g": rng.choice((0.1, 0.25, 0.5, 1, 2, 5, 10))},
        lambda v, p: moles_mmol(float(p["mass_g"]), _num(v[0], "pubchem:molecular_weight")),
        lambda v, p: f"{p['mass_g']} g / {_fmt(_num(v[0], 'pubchem:molecular_weight'))} g/mol × 1000"),
    Template(
        "molarity", ("biochemistry",), (("pubchem:molecular_weight",),), "mol/L", "",
        4, "0.02", "the molar concentration, in mol/L, of the given mass of the compound dissolved to the "
                   "given volume (its molecular weight as PubChem lists it)",
        lambda rng: {"mass_g": rng.choice((0.5, 1, 2, 5, 10)),
                     "volume_l": rng.choice((0.1, 0.25, 0.5, 1, 2))},
        lambda v, p: molarity_mol_per_l(float(p["mass_g"]), _num(v[0], "pubchem:molecular_weight"),
                                        float(p["volume_l"])),
        lambda v, p: f"({p['mass_g']} g / {_fmt(_num(v[0], 'pubchem:molecular_weight'))} g/mol) / "
                     f"{p['volume_l']} L"),
    Template(
        "mean_residue_mass", ("biochemistry",), (("uniprot:mass", "uniprot:length"),), "Da", "",
        2, "0.02", "the mean mass per residue, in daltons, of its canonical sequence (sequence mass over "
                   "length, as UniProt lists them)",
        lambda rng: {},
        lambda v, p: mean_residue_mass(_num(v[0], "uniprot:mass"), _num(v[0], "uniprot:length")),
        lambda v, p: f"{_fmt(_num(v[0], 'uniprot:mass'))} Da / "
                     f"{_fmt(_num(v[0], 'uniprot:length'))} residues"),
    # -- financial (SEC EDGAR XBRL) ------------------------------------------------------------
    Template(
        "revenue_cagr", ("financial",), (("sec:revenue_fy0", "sec:revenue_fy2"),), "%", "%",
        2, "0.02", "the compound annual growth rate of its revenue, in percent, from the given start fiscal "
                   "year to the given end fiscal year (annual revenue as reported in its 10-K filings)",
        lambda rng: {},
        lambda v, p: cagr_percent(_num(v[0], "sec:revenue_fy2"), _num(v[0], "sec:revenue_fy0"), 2),
        lambda v, p: f"(({_fmt(_num(v[0], 'sec:revenue_fy0'))} / "
                     f"{_fmt(_num(v[0], 'sec:revenue_fy2'))})^(1/2) − 1) × 100",
        _fiscal_years, ("sec:fiscal_year",)),
    Template(
        "net_margin", ("financial",), (("sec:net_income_fy0", "sec:revenue_fy0"),), "%", "%",
        2, "0.02", "its net profit margin, in percent, in the given fiscal year (net income over revenue, as "
                   "reported in its 10-K filing)",
        lambda rng: {},
        lambda v, p: ratio_percent(_num(v[0], "sec:net_income_fy0"), _num(v[0], "sec:revenue_fy0")),
        lambda v, p: f"{_fmt(_num(v[0], 'sec:net_income_fy0'))} / "
                     f"{_fmt(_num(v[0], 'sec:revenue_fy0'))} × 100",
        _fiscal_year, ("sec:fiscal_year",)),
    # -- security (NVD, FIRST EPSS, CISA KEV) -------------------------------------------------
    Template(
        "kev_remediation_window", ("security",), (("kev:date_added", "kev:due_date"),), "days", "days",
        0, "0.02", "the number of days CISA gave federal agencies to remediate it: from its addition to the "
                   "Known Exploited Vulnerabilities catalog to its due date",
        lambda rng: {},
        lambda v, p: float(days_between(_day(v[0], "kev:date_added"), _day(v[0], "kev:due_date"))),
        lambda v, p: f"{_day(v[0], 'kev:due_date').isoformat()} − {_day(v[0], 'kev:date_added').isoformat()} "
                     "in days"),
    Template(
        "days_to_kev", ("security",), (("nvd:published", "kev:date_added"),), "days", "days",
        0, "0.02", "the number of days from its publication in the NVD to its addition to CISA's Known "
                   "Exploited Vulnerabilities catalog",
        lambda rng: {},
        lambda v, p: float(days_between(_day(v[0], "nvd:published"), _day(v[0], "kev:date_added"))),
        lambda v, p: f"{_day(v[0], 'kev:date_added').isoformat()} − "
                     f"{_day(v[0], 'nvd:published').isoformat()} in days"),
    Template(
        "expected_exploited_hosts", ("security",), (("epss:probability",),), "hosts", "",
        1, "0.02", "the expected number of the given exposed hosts on which it is exploited within 30 days, "
                   "by its EPSS probability (FIRST)",
        lambda rng: {"hosts": rng.choice((200, 500, 1000, 2500, 10000))},
        lambda v, p: _num(v[0], "epss:probability") * int(p["hosts"]),
        lambda v, p: f"{_fmt(_num(v[0], 'epss:probability'))} × {p['hosts']}"),
    Template(
        "severity_weighted_exposure", ("security",), (("nvd:base_score", "epss:probability"),), "", "",
        2, "0.02", "its risk score: the CVSS v3.1 base score (NVD) times the EPSS probability (FIRST) "
                   "times the given number of exposed hosts",
        lambda rng: {"hosts": rng.choice((10, 50, 100, 500))},
        lambda v, p: _num(v[0], "nvd:base_score") * _num(v[0], "epss:probability") * int(p["hosts"]),
        lambda v, p: f"{_fmt(_num(v[0], 'nvd:base_score'))} × {_fmt(_num(v[0], 'epss:probability'))} × "
                     f"{p['hosts']}"),
)}
"""Every template by name."""


def compute_gold(template: Template, values: Sequence[EntityValues], params: Params) -> Gold:
    """Run ``template`` on the entities' values: the rounded gold. TemplateError if it cannot."""
    if len(values) != template.entities:
        raise TemplateError(f"{template.name} takes {template.entities} entities, got {len(values)}")
    for i, needed in enumerate(template.properties):
        missing = [p for p in needed if p not in values[i]]
        if missing:
            raise TemplateError(f"{template.name}: entity {i + 1} lacks {', '.join(missing)}")
    raw = template.compute(values, params)
    if not math.isfinite(raw):
        raise TemplateError(f"{template.name}: result {raw} is not finite")
    value = Decimal(repr(raw)).quantize(Decimal(1).scaleb(-template.decimals), rounding=ROUND_HALF_UP)
    label = f"{value:f}" + (f" {template.label_unit}" if template.label_unit else "")
    return Gold(value, label, template.formula(values, params), template.unit, template.tolerance)


def verify_gold(template: Template, values: Sequence[EntityValues], params: Params, gold: str) -> bool:
    """Re-execute the template: does it give exactly the recorded gold label?"""
    try:
        return compute_gold(template, values, params).label == gold
    except TemplateError:
        return False


def draw_params(template: Template, seed: int, candidate_id: str,
                values: Sequence[EntityValues] = ()) -> dict[str, float | int]:
    """The scenario parameters of one candidate: a RNG seeded by (seed, candidate id), plus
    those the template derives from the entities' ``values``."""
    drawn = template.draw(random.Random(f"{seed}:{candidate_id}"))
    return {**drawn, **template.derive(values)} if values else drawn


def values_to_json(values: EntityValues) -> dict[str, Any]:
    """Values as JSON (Decimal as a string, coordinates as [lat, lon], dates as ISO)."""
    out: dict[str, Any] = {}
    for pid, v in sorted(values.items()):
        if isinstance(v, Decimal):
            out[pid] = {"type": "quantity", "value": str(v)}
        elif isinstance(v, date):
            out[pid] = {"type": "date", "value": v.isoformat()}
        else:
            out[pid] = {"type": "coordinates", "value": [v[0], v[1]]}
    return out


def values_from_json(data: Mapping[str, Any]) -> dict[str, Value]:
    out: dict[str, Value] = {}
    for pid, cell in data.items():
        if cell["type"] == "quantity":
            out[pid] = Decimal(cell["value"])
        elif cell["type"] == "date":
            out[pid] = date.fromisoformat(cell["value"])
        else:
            out[pid] = (float(cell["value"][0]), float(cell["value"][1]))
    return out


__all__ = [
    "TEMPLATES",
    "Coordinates",
    "EntityValues",
    "Gold",
    "Template",
    "TemplateError",
    "Value",
    "barometric_pressure_hpa",
    "boiling_point_c",
    "cagr_percent",
    "compound_growth",
    "compute_gold",
    "days_between",
    "draw_params",
    "haversine_km",
    "mean_residue_mass",
    "molarity_mol_per_l",
    "moles_mmol",
    "pendulum_drift_s_per_day",
    "population_density",
    "ratio_percent",
    "values_from_json",
    "values_to_json",
    "verify_gold",
]
