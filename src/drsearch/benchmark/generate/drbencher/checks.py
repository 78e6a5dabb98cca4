"""The Validate stage's deterministic checks (pure functions over a composed candidate).

Each returns None (passed) or the reason it failed; the stage rejects with the check's name.

- :func:`names_entity` (``entity_named``): a label or alias of a withheld entity occurs in
  the text, case-insensitively, on word boundaries;
- :func:`leaked_values` (``value_leak``): a retrieved property value occurs in any common
  format: ``2962``, ``2,962``, ``2 962`` (also thin/no-break spaces), ``2.962`` (the
  thousands as a decimal, e.g. ``2.962 km``), dates as ISO, ``7 October 1949`` and
  ``October 7, 1949``; coordinates to 2 and more decimals;
- :func:`flattened` (``multi_hop_flattening``): a fact that uses both hops of its chain must
  name the intermediate entity itself ("a pass in the Uri Alps" for Nufenen Pass →
  Lepontine Alps → Uri Alps skips the range the pass is in).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import date
from decimal import Decimal
from typing import Any

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


__all__ = ["flattened", "leaked_values", "mentions", "names_entity", "value_forms"]
