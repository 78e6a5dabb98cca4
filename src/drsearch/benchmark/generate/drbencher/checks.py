"""The Validate stage's deterministic checks (pure functions over a composed candidate).

Each returns None (passed) or the reason it failed; the stage rejects with the check's name.

- :func:`names_entity` (``entity_named``): a label or alias of a withheld entity occurs in
  the text, case-insensitively, on word boundaries;
- :func:`leaked_values` (``value_leak``): a retrieved property value occurs in any common
  format: ``2962``, ``2,962``, ``2 962`` (also thin/no-break spaces), ``2.962`` (the
  thousands as a decimal, e.g. ``2.962 km``), dates as ISO, ``7 October 1949`` and
  ``October 7, 1949``; coordinates to 2 and more decimals;
- :func:`states_gold` (``gold_in_question``): the question states its own gold: a quantity in
  it that the numeric grader would accept as the answer (any format it reads: ``4,778.7``,
  ``4778.70``, ``4.7787e3``, ``4,778,700 m`` for 4778.7 km; within the template's tolerance,
  exactly where it is 0), unless the task or its parameters state that number and it is not
  the gold itself; a gold that is no number, as whole words (case and punctuation ignored);
- :func:`flattened` (``multi_hop_flattening``): a fact that uses both hops of its chain must
  name the intermediate entity itself ("a pass in the Uri Alps" for Nufenen Pass →
  Lepontine Alps → Uri Alps skips the range the pass is in).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from decimal import Decimal
from fractions import Fraction
from typing import Any

from ...numeric import NumericParseError, Quantity, answer_quantity, compare_readings, quantities

_SPACES = " \u2009\u202f\u00a0"
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")


def mentions(text: str, name: str) -> bool:
    """``name`` occurs in ``text`` case-insensitively between word boundaries."""
    if not name.strip():
        return False
    return re.search(rf"(?<!\w){re.escape(name.casefold())}(?!\w)", text.casefold()) is not None


def names_entity(text: str, entities: Sequence[Mapping[str, Any]]) -> str | None:
    for e in entities:
        for name in (e["label"], *e["aliases"]):
            if mentions(text, name):
                return f"the text names {e['qid']} as {name!r}"
    return None


def _groups(digits: str, sep: str) -> str:
    out: list[str] = []
    while len(digits) > 3:
        out.insert(0, digits[-3:])
        digits = digits[:-3]
    out.insert(0, digits)
    return sep.join(out)


def value_forms(value: Decimal | date | tuple[float, float]) -> set[str]:
    """The ways a value is commonly written (what :func:`leaked_values` looks for)."""
    forms: set[str] = set()
    if isinstance(value, date):
        forms |= {value.isoformat(), f"{value.day} {MONTHS[value.month - 1]} {value.year}",
                  f"{MONTHS[value.month - 1]} {value.day}, {value.year}"}
        return forms
    if isinstance(value, tuple):
        for v in value:
            forms.add(f"{v:.2f}")
        return forms
    sign = "-" if value < 0 else ""
    whole, _, frac = f"{abs(value):f}".partition(".")
    frac = frac.rstrip("0")
    tail = f".{frac}" if frac else ""
    for sep in (",", *_SPACES, ""):
        forms.add(sign + _groups(whole, sep) + tail)
    if len(whole) >= 4 and not frac:  # 2962 m written as 2.962 km
        kilo = f"{abs(value) / 1000:f}".rstrip("0").rstrip(".")
        forms.add(sign + kilo)
    return {f for f in forms if len(f.strip("-")) >= 2}


def leaked_values(text: str,
                  values: Iterable[tuple[str, Decimal | date | tuple[float, float]]]) -> str | None:
    for pid, value in values:
        for form in sorted(value_forms(value), key=len, reverse=True):
            if re.search(rf"(?<![\w.,]){re.escape(form)}(?![\w]|[.,]\d)", text):
                return f"the text gives the value of {pid} as {form!r}"
    return None


def _readings(q: Quantity) -> list[Quantity]:
    """``q`` and, for an ambiguous ``1,234`` / ``1.234``, its other reading (a reader may take either)."""
    other = q.other_reading()
    return [q] if other is None else [q, other]


def _accepts(q: Quantity, gold: Quantity, tolerance: Fraction) -> bool:
    """Would the numeric grader accept ``q`` as the answer ``gold``? (tolerance 0: exact match)"""
    return any(compare_readings(r, gold, tolerance=tolerance, exact=tolerance == 0)[0] for r in _readings(q))


def _numeric_gold(gold: str) -> Quantity | None:
    """The gold as one quantity when it is one (a number, its unit after it), else None: a label
    that starts with a word ("Apollo 11") is a name, matched as text."""
    try:
        q = answer_quantity(gold)
    except NumericParseError:
        return None
    return q if not re.search(r"\w", gold[:q.start]) else None


def _words(text: str) -> str:
    """Case and punctuation folded away: words joined by single spaces."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def states_gold(text: str, gold: str, tolerance: str, stated: str) -> str | None:
    """Does the question ``text`` state its gold label ``gold``? ``tolerance``: the template's
    relative tolerance; ``stated``: the task and its parameters as compose was given them (a
    number they state, "in 1990" with the year a parameter, may stand unless it *is* the gold:
    hosts = 1000 beside a gold of 990 passes at 2 %, beside a gold of 1000 it does not)."""
    gq = _numeric_gold(gold)
    if gq is None:
        words = _words(gold)
        if words and re.search(rf"(?<!\w){re.escape(words)}(?!\w)", _words(text)):
            return f"the question states the gold {gold!r}"
        return None
    tol = Fraction(tolerance)
    given = quantities(stated)
    for q in quantities(text):
        if not _accepts(q, gq, tol):
            continue
        if _accepts(q, gq, Fraction(0)) or not any(_accepts(q, s, Fraction(0)) for s in given):
            return (f"the question states {text[q.start:q.end]!r}, which the numeric grader accepts for "
                    f"the gold {gold}")
    return None


def flattened(facts: Sequence[Mapping[str, Any]], chains: Sequence[Mapping[str, Any]],
              aliases: Mapping[str, Sequence[str]]) -> str | None:
    """The first hop-2 fact whose own text does not name its intermediate entity (another
    clue naming it does not help: the reader cannot tell which entity the hop goes through)."""
    for f in facts:
        if f["hops"] != 2:
            continue
        chain = chains[f["chain"]]
        names = (chain["mid_label"], *aliases.get(chain["mid"], ()))
        if not any(mentions(f["text"], n) for n in names):
            return (f"fact {f['text']!r} uses {chain['p1']} → {chain['mid_label']} → {chain['p2']} → "
                    f"{chain['obj_label']} but does not name {chain['mid_label']}")
    return None


__all__ = ["flattened", "leaked_values", "mentions", "names_entity", "states_gold", "value_forms"]
