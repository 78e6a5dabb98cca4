"""A deterministic numeric grader: the ``numeric`` judge (docs/GRADING.md, "Numeric grader").

For answers that are numbers computed by code (DrBencher-style questions). An answer is
correct iff it holds exactly one quantity (or marks one as final) and that quantity is
within ``tolerance`` (default 2 %) relative error of the gold: ``|a - g| <= tol * |g|``,
boundary included, computed in exact rational arithmetic so the boundary does not depend
on floating point. Dates are always compared exactly; so is every answer when the
question's domain (its ``category``) is one of ``exact_domains`` (default: history, the
DrBencher paper's "exact match for history").

Parsing (:func:`quantities`):

- thousands separators ``2,962`` (groups of three after a comma; also thin and no-break
  spaces), decimals, a leading sign, scientific notation (``6.02e23``, ``6.02 × 10^23``,
  ``10⁻³``), scale words (thousand, million, billion, trillion);
- one unit after the number (``m``, ``km``, ``s``, ``h``, ``%``, ``kg``, …), or a ratio of
  two (``40.2 s/day``, ``km per hour``); units of one dimension are converted, so
  ``2.962 km`` equals ``2,962 m``. An unknown word after a number is no unit;
- hedges (``about``, ``approximately``, ``~``) are ignored: ``about 40 seconds`` is 40 s;
- dates: ``2019-11-17``, ``17 November 2019``, ``November 17, 2019``, ``November 2019``.

Which quantity is the answer (:func:`answer_quantity`): the only one; or, when there are
several, the only one in the text marked final (after the last ``Final answer:`` /
``Answer:`` on its line, or inside ``\\boxed{…}``). Several quantities and no marked single
one is wrong (reason ``several numbers``); two numbers joined by ``-``, ``–``, ``to`` or
``and`` is a range, which is wrong too (reason ``a range``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Literal

from ..agents.canonical import canonical_json, sha256_hex
from .datasets import GradingTask
from .judges import EMPTY_RESPONSE, JudgePrompt, Verdict, is_empty

NUMERIC_VERSION = "numeric-v2"
"""The grader's version: recorded in every verdict; a change of the rules is a new version."""
DEFAULT_TOLERANCE = Fraction(2, 100)
DEFAULT_EXACT_DOMAINS: tuple[str, ...] = ("history",)


class NumericParseError(ValueError):
    """No single quantity could be read from a text (the message says why)."""


# -- units ----------------------------------------------------------------------------------

def _units() -> dict[str, tuple[str, Fraction]]:
    table: dict[str, tuple[str, Fraction]] = {}

    def add(dim: str, factor: Fraction | int | str, *names: str) -> None:
        for name in names:
            table[name] = (dim, Fraction(factor))

    add("length", 1, "m", "metre", "metres", "meter", "meters")
    add("length", 1000, "km", "kilometre", "kilometres", "kilometer", "kilometers")
    add("length", Fraction(1, 100), "cm", "centimetre", "centimetres", "centimeter", "centimeters")
    add("length", Fraction(1, 1000), "mm", "millimetre", "millimetres", "millimeter", "millimeters")
    add("length", "1609.344", "mi", "mile", "miles")
    add("length", "0.3048", "ft", "foot", "feet")
    add("time", 1, "s", "sec", "secs", "second", "seconds")
    add("time", Fraction(1, 1000), "ms", "millisecond", "milliseconds")
    add("time", 60, "min", "mins", "minute", "minutes")
    add("time", 3600, "h", "hr", "hrs", "hour", "hours")
    add("time", 86400, "day", "days")
    add("time", 604800, "week", "weeks")
    add("time", 31557600, "yr", "yrs", "year", "years")  # Julian year
    add("mass", 1, "g", "gram", "grams")
    add("mass", 1000, "kg", "kilogram", "kilograms")
    add("mass", Fraction(1, 1000), "mg", "milligram", "milligrams")
    add("mass", 1000000, "t", "tonne", "tonnes")
    add("mass", "453.59237", "lb", "lbs")
    add("percent", 1, "%", "percent", "pct")
    add("degC", 1, "°c", "℃", "celsius")
    add("degF", 1, "°f", "℉", "fahrenheit")
    return table


UNITS = _units()
"""Unit name (lower case) → (dimension, factor to the dimension's base unit)."""
SCALES = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
MONTHS = {name: i for i, names in enumerate(
    [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",),
     ("june", "jun"), ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"),
     ("october", "oct"), ("november", "nov"), ("december", "dec")], 1) for name in names}


@dataclass(frozen=True)
class Quantity:
    """One quantity read from a text.

    ``kind`` ``number``: ``value`` in the base unit of ``dimension`` (None: no unit) and
    ``written``, the number as written (scale words applied, no unit conversion);
    ``kind`` ``date``: ``date`` = (year, month, day or None).
    """

    kind: Literal["number", "date"]
    start: int
    end: int
    value: Fraction = Fraction(0)
    written: Fraction = Fraction(0)
    dimension: str | None = None
    unit: str | None = None
    date: tuple[int, int, int | None] | None = None

    @property
    def text_value(self) -> str:
        if self.date is not None:
            y, m, d = self.date
            return f"{y:04d}-{m:02d}" + (f"-{d:02d}" if d is not None else "")
        return _fraction_text(self.value)

    def as_dict(self) -> dict[str, Any]:
        return {"dimension": self.dimension, "kind": self.kind, "unit": self.unit, "value": self.text_value,
                "written": None if self.kind == "date" else _fraction_text(self.written)}


def _fraction_text(value: Fraction) -> str:
    """A short exact-enough decimal text for records (never used for comparisons)."""
    if value.denominator == 1:
        return str(value.numerator)
    return repr(float(value))


# -- parsing --------------------------------------------------------------------------------

_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|" \
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_DATES = [
    ("ymd", re.compile(r"(?<!\d)(\d{4})-(\d{2})-(\d{2})(?!\d)")),
    ("dmy", re.compile(rf"(?<![\w.])(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH},?\s+(\d{{4}})(?!\d)",
                       re.I)),
    ("mdy", re.compile(rf"(?<![\w.]){_MONTH}\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})(?!\d)", re.I)),
    ("my", re.compile(rf"(?<![\w.]){_MONTH},?\s+(\d{{4}})(?!\d)", re.I)),
]
_SUPERSCRIPT = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺", "0123456789-+")
_NUMBER = re.compile(
    r"(?<![\w.,])(?<![A-Za-z]-)"
    r"(?P<sign>[-−+])?"
    r"(?P<num>\d{1,3}(?:(?:,\d{3})+|(?:[\u2009\u202f\u00a0]\d{3})+)(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?![\d,]\d)"
    r"(?:[eE](?P<exp>[-+]?\d+)"
    r"|\s*[×x*]\s*10(?:\^\s*(?P<exp2>[-−+]?\d+)|(?P<exp3>[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)))?")
_SCALE = re.compile(r"\s*(thousand|million|billion|trillion)\b", re.I)
_UNIT = re.compile(r"\s*(°\s?[cf]\b|[℃℉%]|[a-zA-Zµ]+)(?:\s*(?:/|\bper\s+)\s*([a-zA-Z]+))?", re.I)
_RANGE_JOIN = re.compile(r"\s*(?:-|–|—|to|and)\s*", re.I)
_FINAL = re.compile(r"(?:final\s+answer\s*(?:is\s*)?[:=]?|\banswer\s*[:=])", re.I)
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")


def _dates(text: str) -> list[Quantity]:
    found: list[Quantity] = []
    taken: list[tuple[int, int]] = []
    for form, pattern in _DATES:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e in taken):
                continue
            g = m.groups()
            if form == "ymd":
                y, mo, d = int(g[0]), int(g[1]), int(g[2])
            elif form == "dmy":
                d, mo, y = int(g[0]), MONTHS[g[1].casefold()], int(g[2])
            elif form == "mdy":
                mo, d, y = MONTHS[g[0].casefold()], int(g[1]), int(g[2])
            else:
                mo, d, y = MONTHS[g[0].casefold()], None, int(g[1])
            if not 1 <= mo <= 12 or (d is not None and not 1 <= d <= 31):
                continue
            taken.append((m.start(), m.end()))
            found.append(Quantity("date", m.start(), m.end(), date=(y, mo, d)))
    return found


def _unit_at(text: str, pos: int) -> tuple[str | None, Fraction, str | None, int]:
    """``(dimension, factor, unit text, end)`` of a unit right after ``pos`` (none: factor 1)."""
    m = _UNIT.match(text, pos)
    if m is None:
        return None, Fraction(1), None, pos
    first = m.group(1).replace(" ", "").casefold()
    if first not in UNITS:
        return None, Fraction(1), None, pos
    dim, factor = UNITS[first]
    if m.group(2) is not None:
        second = m.group(2).casefold()
        if second in UNITS:
            dim2, factor2 = UNITS[second]
            return f"{dim}/{dim2}", factor / factor2, f"{first}/{second}", m.end()
        return dim, factor, first, m.end(1)
    return dim, factor, first, m.end()


def quantities(text: str) -> list[Quantity]:
    """Every quantity in ``text``, in text order (dates first claim their span)."""
    found = _dates(text)
    taken = [(q.start, q.end) for q in found]
    for m in _NUMBER.finditer(text):
        if any(m.start() < e and s < m.end() for s, e in taken):
            continue
        digits = re.sub(r"[,\u2009\u202f\u00a0]", "", m.group("num"))
        exp_text = m.group("exp") or (m.group("exp2") or "").replace("−", "-") or \
            (m.group("exp3") or "").translate(_SUPERSCRIPT)
        try:
            value = Fraction(Decimal(digits))
        except (InvalidOperation, ValueError):  # pragma: no cover - the pattern admits only decimals
            continue
        if exp_text:
            value *= Fraction(10) ** int(exp_text)
        if m.group("sign") in ("-", "−"):
            value = -value
        end = m.end()
        if (scale := _SCALE.match(text, end)) is not None:
            value *= SCALES[scale.group(1).casefold()]
            end = scale.end()
        dim, factor, unit, end = _unit_at(text, end)
        found.append(Quantity("number", m.start(), end, value * factor, value, dim, unit))
    return sorted(found, key=lambda q: q.start)


def _single(text: str, offset: int = 0) -> Quantity:
    found = quantities(text)
    if not found:
        raise NumericParseError("no number")
    if len(found) == 2 and _RANGE_JOIN.fullmatch(text[found[0].end:found[1].start]):
        raise NumericParseError("a range")
    if len(found) > 1:
        raise NumericParseError(f"several numbers ({len(found)})")
    return found[0]


def answer_quantity(text: str) -> Quantity:
    """The one quantity an answer gives; NumericParseError (``no number``, ``a range``,
    ``several numbers``) when there is none or no single one marked final."""
    try:
        return _single(text)
    except NumericParseError as plain:
        if str(plain) == "no number":
            raise
        marked: list[str] = [m.group(1) for m in _BOXED.finditer(text)]
        finals = list(_FINAL.finditer(text))
        if finals:
            rest = text[finals[-1].end():]
            marked.append(rest.split("\n", 1)[0])
        if len(marked) != 1:
            raise plain from None
        try:
            return _single(marked[0])
        except NumericParseError as e:
            raise NumericParseError(f"{e} in the part marked final") from None


# -- comparing ------------------------------------------------------------------------------

def compare(answer: Quantity, gold: Quantity, *, tolerance: Fraction = DEFAULT_TOLERANCE,
            exact: bool = False) -> tuple[bool, str | None, Fraction | None]:
    """``(correct, reason when wrong, relative error when defined)``.

    Dates compare exactly (a year gold against a date answer compares the year). A unit on
    both sides must be of one dimension; with a unit on one side only, the numbers compare
    as written. ``exact``: no tolerance at all (the answer must equal the gold, after unit
    conversion) -- the DrBencher paper's rule for the history domain.
    """
    if gold.kind == "date" or answer.kind == "date":
        g_year = gold.date[0] if gold.date else (int(gold.written) if gold.written.denominator == 1 else None)
        if gold.kind == "date" and answer.kind == "date":
            ok = answer.date == gold.date
        elif gold.kind == "number" and answer.date is not None:
            ok = answer.date[0] == g_year and gold.dimension is None
        else:
            ok = False
        return ok, None if ok else "date differs", None
    if answer.dimension is not None and gold.dimension is not None and answer.dimension != gold.dimension:
        return False, f"unit mismatch ({answer.unit} vs {gold.unit})", None
    both = answer.dimension is not None and gold.dimension is not None
    a, g = (answer.value, gold.value) if both else (answer.written, gold.written)
    if exact:
        rel = abs(a - g) / abs(g) if g else None
        return a == g, None if a == g else "differs (exact match)", rel
    if g == 0:
        return a == 0, None if a == 0 else "gold is 0: exact match needed", None
    rel = abs(a - g) / abs(g)
    ok = rel <= tolerance
    return ok, None if ok else f"relative error {float(rel):.4g} > {float(tolerance):g}", rel


# -- the judge ------------------------------------------------------------------------------

class NumericJudge:
    """The ``numeric`` judge: no endpoint, no cache; same inputs, same verdict.

    ``prompt`` is not a prompt but the grader's identity in the place scores.json reads it
    from: name :data:`NUMERIC_VERSION`, SHA-256 of the version and settings, so re-grading
    with another tolerance is visibly another grading.
    """

    def __init__(self, tolerance: Fraction | str | float = DEFAULT_TOLERANCE,
                 exact_domains: Sequence[str] = DEFAULT_EXACT_DOMAINS) -> None:
        tol = Fraction(str(tolerance)) if isinstance(tolerance, float) else Fraction(tolerance)
        if not 0 <= tol < 1:
            raise ValueError(f"tolerance must be in [0, 1), got {tolerance}")
        self.tolerance = tol
        self.exact_domains = tuple(sorted({d.casefold() for d in exact_domains}))
        identity = self.describe()
        self.prompt = JudgePrompt(NUMERIC_VERSION, "", "", sha256_hex(canonical_json(identity)))

    def describe(self) -> dict[str, Any]:
        """What goes into every verdict and into scores.json's ``grading.numeric``."""
        return {"exact_domains": list(self.exact_domains), "grader": "numeric",
                "tolerance": float(self.tolerance), "version": NUMERIC_VERSION}

    def grade(self, task: GradingTask, answer: str | None) -> Verdict:
        base = self.describe()
        if answer is None or is_empty(answer):
            return Verdict("incorrect", EMPTY_RESPONSE, None, {**base, "verdict": None})
        try:
            gold = _single(task.reference or "")
        except NumericParseError as e:  # a dataset problem, not the model's: counted apart
            return Verdict("judge_failed", f"gold {task.reference!r} is not one number: {e}", None,
                           {**base, "verdict": None})
        exact = (task.category or "").casefold() in self.exact_domains
        try:
            got = answer_quantity(answer)
        except NumericParseError as e:
            failed = {"answer": None, "exact": exact, "gold": gold.as_dict(),
                      "parse_error": str(e)}
            return Verdict("incorrect", f"answer: {e}", None, {**base, "verdict": failed})
        ok, reason, rel = compare(got, gold, tolerance=self.tolerance, exact=exact)
        verdict = {"answer": got.as_dict(), "exact": exact, "gold": gold.as_dict(),
                   "relative_error": None if rel is None else float(rel)}
        return Verdict("correct" if ok else "incorrect", reason, None, {**base, "verdict": verdict})


__all__ = ["DEFAULT_EXACT_DOMAINS", "DEFAULT_TOLERANCE", "NUMERIC_VERSION", "UNITS", "NumericJudge",
           "NumericParseError", "Quantity", "answer_quantity", "compare", "quantities"]
