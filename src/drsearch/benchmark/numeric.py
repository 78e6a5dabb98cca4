"""A deterministic numeric grader: the ``numeric`` judge (docs/GRADING.md, "Numeric grader").

For answers that are numbers computed by code (DrBencher-style questions). An answer is
correct iff it holds exactly one quantity (or marks one as final) and that quantity is
within ``tolerance`` (default 2 %) relative error of the gold: ``|a - g| <= tol * |g|``,
boundary included, computed in exact rational arithmetic so the boundary does not depend
on floating point. Dates are always compared exactly; so is every answer when the
question's domain (its ``category``) is one of ``exact_domains`` (default: history, the
DrBencher paper's "exact match for history").

Parsing (:func:`quantities`):

- thousands separators as locales write them (``1,234,567.8``, ``1.234.567,8``,
  ``1 234 567`` with thin, no-break or -- from two groups on -- ASCII spaces, ``1'234'567``,
  Indian ``12,34,567``); one separator and three digits (``1,234`` / ``1.234``) is read the
  English way and keeps its other reading (``Quantity.other_written``), which the judge
  grades too and reports when it would change the verdict; decimals, a leading sign,
  scientific notation (``6.02e23``, ``6.02 × 10^23``, ``10⁻³``), scale words (thousand,
  million, billion, trillion);
- one unit after the number (``m``, ``km``, ``s``, ``h``, ``%``, ``kg``, …), or a ratio of
  two (``40.2 s/day``, ``km per hour``); units of one dimension are converted, so
  ``2.962 km`` equals ``2,962 m``. An unknown word after a number is no unit;
- hedges (``about``, ``approximately``, ``~``) are ignored: ``about 40 seconds`` is 40 s;
- dates: ``2019-11-17``, ``17 November 2019``, ``November 17, 2019``, ``November 2019``.

A percentage against a bare number compares as written (the unit left out) or as fractions
(``45%`` = ``0.45``): correct if either reading is.

Which quantity is the answer (:func:`answer_quantity`): the only one; or, when there are
several, the only one in the text marked final (after the last ``Final answer:`` /
``Answer:`` on its line, or inside ``\\boxed{…}``). Several quantities and no marked single
one is wrong (reason ``several numbers``); two numbers joined by ``-``, ``–``, ``to`` or
``and`` is a range, which is wrong too (reason ``a range``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import Decimal
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
    other_written: Fraction | None = None
    """An ambiguous ``1,234`` / ``1.234``: the number in the reading *not* taken (the English
    one is: ``,`` groups thousands, ``.`` is the decimal mark). None: the form is unambiguous."""
    as_matched: str = ""
    """The number as it stands in the text (without sign, exponent, scale or unit)."""

    def other_reading(self) -> Quantity | None:
        """This quantity in the other reading of an ambiguous separator (None: not ambiguous)."""
        if self.other_written is None or self.written == 0:
            return None
        factor = self.value / self.written
        return replace(self, value=self.other_written * factor, written=self.other_written,
                       other_written=None)

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
# The grouped forms, in the order the alternation tries them (docs/GRADING.md, rule 2): each
# names its thousands separator and decimal mark, so "1.234.567,8" and "1,234,567.8" both read.
# A group separator never follows a lone 0 ("0,234" groups nothing: no number is read there).
# An ASCII space groups only from two groups on ("1 234 567"; "3 500" is two numbers, as in
# "3 500-seat halls"); thin and no-break spaces group from one.
_GROUPED = (
    r"(?P<dots>[1-9]\d{0,2}(?:\.\d{3}){2,}(?:,\d+)?|[1-9]\d{0,2}\.\d{3},\d+)"  # 1.234.567(,8), 1.234,5
    r"|(?P<lakh>[1-9]\d?(?:,\d{2})+,\d{3}(?:\.\d+)?)"  # Indian 12,34,567(.8)
    r"|(?P<commas>[1-9]\d{0,2}(?:,\d{3})+(?:\.\d+)?)"  # 1,234,567(.8) and the ambiguous 1,234
    r"|(?P<spaces>[1-9]\d{0,2}(?:(?:[\u2009\u202f\u00a0]\d{3})+|(?: \d{3}){2,})(?:[.,]\d+)?)"  # 1 234 567(,8)
    r"|(?P<quotes>[1-9]\d{0,2}(?:['’]\d{3})+(?:\.\d+)?)"  # Swiss 1'234'567(.8)
    r"|(?P<plain>\d+(?:\.\d+)?|\.\d+)"  # 1234.5 and the ambiguous 1.234
)
_AMBIGUOUS = re.compile(r"[1-9]\d{0,2}[.,]\d{3}")
"""One separator and exactly three digits after it: ``1,234`` (1234 in English, 1.234 where
the comma is the decimal mark) and ``1.234`` (the other way round)."""
_NUMBER = re.compile(
    r"(?<![\w.,'’])(?<![A-Za-z]-)"
    r"(?P<sign>[-−+])?"
    rf"(?P<num>{_GROUPED})"
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
        exp_text = m.group("exp") or (m.group("exp2") or "").replace("−", "-") or \
            (m.group("exp3") or "").translate(_SUPERSCRIPT)
        value = _decimal(m)
        # the other locale's reading of 1,234 / 1.234 (not of 1.234e5: scientific notation
        # writes a decimal point)
        other = _other_reading(m.group("num")) if not exp_text else None
        scale_factor = Fraction(1)
        if exp_text:
            value *= Fraction(10) ** int(exp_text)
        end = m.end()
        if (scale := _SCALE.match(text, end)) is not None:
            scale_factor = Fraction(SCALES[scale.group(1).casefold()])
            end = scale.end()
        sign = -1 if m.group("sign") in ("-", "−") else 1
        value *= sign * scale_factor
        if other is not None:
            other *= sign * scale_factor
        dim, factor, unit, end = _unit_at(text, end)
        found.append(Quantity("number", m.start(), end, value * factor, value, dim, unit, other_written=other,
                              as_matched=m.group("num")))
    return sorted(found, key=lambda q: q.start)


def _decimal(m: re.Match[str]) -> Fraction:
    """The number of a ``_NUMBER`` match, read by the form that matched (``_GROUPED``)."""
    num = m.group("num")
    if m.group("dots"):
        digits = num.replace(".", "").replace(",", ".")
    elif m.group("spaces"):
        digits = re.sub(r"[ \u2009\u202f\u00a0]", "", num).replace(",", ".")
    elif m.group("quotes"):
        digits = re.sub(r"['’]", "", num)
    else:  # commas, lakh, plain: the comma groups, the point is the decimal mark
        digits = num.replace(",", "")
    return Fraction(Decimal(digits))


def _other_reading(num: str) -> Fraction | None:
    """For an ambiguous ``1,234`` / ``1.234``: the reading that was not taken; else None."""
    if not _AMBIGUOUS.fullmatch(num):
        return None
    whole, frac = re.split(r"[.,]", num)
    if "," in num:  # read as 1234; the decimal-comma reading is 1.234
        return Fraction(Decimal(f"{whole}.{frac}"))
    return Fraction(int(whole + frac))  # read as 1.234; the dot-grouping reading is 1234


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
    as written -- and when that unit is ``%`` and the other side has none, also as fractions
    (``45%`` = ``0.45``): correct if either reading is (:func:`compare_readings`). ``exact``:
    no tolerance at all (the answer must equal the gold, after unit conversion) -- the
    DrBencher paper's rule for the history domain.
    """
    ok, reason, rel, _ = compare_readings(answer, gold, tolerance=tolerance, exact=exact)
    return ok, reason, rel


def _readings(answer: Quantity, gold: Quantity) -> list[tuple[str, Fraction, Fraction]]:
    """The ways the two numbers may be compared: ``(name, answer, gold)``, the first preferred."""
    if answer.dimension is not None and gold.dimension is not None:
        return [("value", answer.value, gold.value)]
    readings = [("as_written", answer.written, gold.written)]
    if {answer.dimension, gold.dimension} == {"percent", None}:
        # 45% against 0.45: a percentage is a fraction of 100, and a person calls them equal
        a = answer.written / 100 if answer.dimension == "percent" else answer.written
        g = gold.written / 100 if gold.dimension == "percent" else gold.written
        readings.append(("fraction", a, g))
    return readings


def _within(a: Fraction, g: Fraction, tolerance: Fraction,
            exact: bool) -> tuple[bool, str | None, Fraction | None]:
    rel = abs(a - g) / abs(g) if g else None
    if exact:
        return a == g, None if a == g else "differs (exact match)", rel
    if rel is None:
        return a == 0, None if a == 0 else "gold is 0: exact match needed", None
    ok = rel <= tolerance
    return ok, None if ok else f"relative error {float(rel):.4g} > {float(tolerance):g}", rel


def compare_readings(answer: Quantity, gold: Quantity, *, tolerance: Fraction = DEFAULT_TOLERANCE,
                     exact: bool = False) -> tuple[bool, str | None, Fraction | None, str | None]:
    """:func:`compare` and the reading that decided: ``value`` (units on both sides, converted),
    ``as_written``, ``fraction`` (a percentage against a bare number, both as fractions), or
    None (dates, unit mismatch). A wrong answer reports its first reading's error."""
    if gold.kind == "date" or answer.kind == "date":
        g_year = gold.date[0] if gold.date else (int(gold.written) if gold.written.denominator == 1 else None)
        if gold.kind == "date" and answer.kind == "date":
            ok = answer.date == gold.date
        elif gold.kind == "number" and answer.date is not None:
            ok = answer.date[0] == g_year and gold.dimension is None
        else:
            ok = False
        return ok, None if ok else "date differs", None, None
    if answer.dimension is not None and gold.dimension is not None and answer.dimension != gold.dimension:
        return False, f"unit mismatch ({answer.unit} vs {gold.unit})", None, None
    first: tuple[bool, str | None, Fraction | None, str | None] | None = None
    for name, a, g in _readings(answer, gold):
        ok, reason, rel = _within(a, g, tolerance, exact)
        if ok:
            return ok, reason, rel, name
        first = first or (ok, reason, rel, name)
    assert first is not None
    return first


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
        ok, reason, rel, reading = compare_readings(got, gold, tolerance=self.tolerance, exact=exact)
        verdict: dict[str, Any] = {"answer": got.as_dict(), "exact": exact, "gold": gold.as_dict(),
                                   "reading": reading, "relative_error": None if rel is None else float(rel)}
        other = got.other_reading()
        if other is not None:  # 1,234 / 1.234: read the English way, never silently
            other_ok = compare_readings(other, gold, tolerance=self.tolerance, exact=exact)[0]
            verdict["ambiguous"] = {"decides": other_ok != ok, "number": got.as_matched,
                                    "other_reading": _fraction_text(other.written),
                                    "other_reading_correct": other_ok, "read_as": _fraction_text(got.written)}
            if other_ok and not ok:
                reason = (f"{reason}; ambiguous separator: {got.as_matched!r} was read as "
                          f"{_fraction_text(got.written)}, read as {_fraction_text(other.written)} "
                          "it would be correct")
        return Verdict("correct" if ok else "incorrect", reason, None, {**base, "verdict": verdict})


__all__ = ["DEFAULT_EXACT_DOMAINS", "DEFAULT_TOLERANCE", "NUMERIC_VERSION", "UNITS", "NumericJudge",
           "NumericParseError", "Quantity", "answer_quantity", "compare", "compare_readings", "quantities"]
