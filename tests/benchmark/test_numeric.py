"""The numeric grader: parser properties, a table of tricky answers, exact boundaries, verdicts."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drsearch.benchmark import GradingTask
from drsearch.benchmark.numeric import (
    NUMERIC_VERSION,
    UNITS,
    NumericJudge,
    NumericParseError,
    answer_quantity,
    compare,
    quantities,
)


def task(reference: str, category: str | None = None) -> GradingTask:
    return GradingTask(kind="dr256", question_id="q-1", index=0, question="How much?", reference=reference,
                       category=category)


def grade(answer: str, gold: str, category: str | None = None, **kw: object) -> tuple[str, str | None]:
    v = NumericJudge(**kw).grade(task(gold, category), answer)  # type: ignore[arg-type]
    return v.outcome, v.reason


TABLE = [
    # (answer, gold, outcome)
    ("2,962 m", "2962 m", "correct"),
    ("2.962 km", "2,962 m", "correct"),
    ("2962", "2,962 m", "correct"),  # a unit on one side only: the numbers as written
    ("2.962", "2,962 m", "incorrect"),
    ("40.2 s/day", "40.2 s/day", "correct"),
    ("40.2 seconds per day", "40.2 s/day", "correct"),
    ("40.2", "40.2 s/day", "correct"),
    ("0.67 s/min", "40.2 s/hour", "correct"),  # ratio units convert: 40.2/60 = 0.67
    ("about 40 seconds", "40 s", "correct"),
    ("approximately 40.5 s", "40 s", "correct"),  # 1.25 % off
    ("about 41 seconds", "40 s", "incorrect"),  # 2.5 % off
    ("40 minutes", "40 s", "incorrect"),  # same dimension, converted: 2400 s
    ("40 kg", "40 s", "incorrect"),  # unit mismatch
    ("6.02e23", "6.02 × 10^23", "correct"),
    ("6.1E+23", "6.02x10^23", "correct"),  # 1.3 % off
    ("1.5 × 10⁻³", "0.0015", "correct"),
    ("1.2 million", "1,200,000", "correct"),
    ("45%", "45 percent", "correct"),
    ("10-20", "15", "incorrect"),  # a range
    ("between 10 and 20", "15", "incorrect"),
    ("10 to 20 m", "15 m", "incorrect"),
    ("It took 3 tries and 40 s.", "40 s", "incorrect"),  # two numbers, none marked final
    ("It took 3 tries.\nFinal answer: 40 s", "40 s", "correct"),
    ("3 tries; the answer: 40 s", "40 s", "correct"),
    ("3 tries, \\boxed{40}", "40", "correct"),
    ("Final answer: 10-20", "15", "incorrect"),  # a range, even marked final
    ("no idea", "40", "incorrect"),
    ("-3.5", "-3.5", "correct"),
    ("−3.5 °C", "-3.5", "correct"),
    ("17 November 2019", "2019-11-17", "correct"),
    ("November 17, 2019", "17 Nov 2019", "correct"),
    ("November 18, 2019", "17 Nov 2019", "incorrect"),  # dates: exact
    ("0", "0", "correct"),
    ("0.0001", "0", "incorrect"),  # gold 0: exact
    ("176 Hong Kong dollars", "176", "correct"),
    # thousands separators as other locales write them (docs/GRADING.md, rule 2)
    ("1.234.567", "1234567", "correct"),  # dots group (German, Spanish, ...)
    ("1.234.567,89", "1234567.89", "correct"),  # ... and the comma is then the decimal mark
    ("1.234,5", "1234.5", "correct"),
    ("1 234 567", "1234567", "correct"),  # spaces (SI, French)
    ("1\u2009234\u2009567", "1,234,567", "correct"),  # thin space
    ("1\u00a0234\u00a0567 m", "1234567 m", "correct"),  # no-break space
    ("1\u202f234\u202f567", "1234567", "correct"),  # narrow no-break space
    ("1\u202f234,5 m", "1234.5 m", "correct"),  # space groups, decimal comma
    ("3 500", "3500", "incorrect"),  # one ASCII-space group: two numbers (as in "3 500-seat halls")
    ("1'234'567", "1234567", "correct"),  # Swiss apostrophe
    ("1’234’567.5", "1234567.5", "correct"),
    ("12,34,567", "1234567", "correct"),  # Indian lakh grouping
    ("1,23,45,678.90", "12345678.9", "correct"),
    ("12,34,567", "12,345,670", "incorrect"),  # 10x off, not a misread English number
    ("1.234.567", "1.234567", "incorrect"),
    # one separator and three digits: read the English way, flagged when the other reading differs
    ("1,234", "1234", "correct"),
    ("1.234", "1.234", "correct"),
    ("1.234", "1234", "incorrect"),  # read as 1.234 (reason says 1234 would be correct)
    ("1,234", "1.234", "incorrect"),  # read as 1234
    ("0,234", "0.234", "incorrect"),  # a leading 0 groups nothing: no number is read there
    ("1,5", "1.5", "incorrect"),  # a decimal comma alone is not read
    # percentages against fractions (rule 4)
    ("45%", "0.45", "correct"),
    ("0.45", "45%", "correct"),
    ("45 percent", "0.45", "correct"),
    ("45", "45%", "correct"),  # the unit left out
    ("45%", "45", "correct"),
    ("45%", "4.5", "incorrect"),
    ("4.5%", "0.45", "incorrect"),
    ("45%", "0.45 m", "incorrect"),  # unit mismatch
    ("12.5%", "0.125", "correct"),
]


@pytest.mark.parametrize(("answer", "gold", "outcome"), TABLE)
def test_tricky_answers(answer: str, gold: str, outcome: str) -> None:
    assert grade(answer, gold)[0] == outcome, grade(answer, gold)


def test_reasons_name_the_rule() -> None:
    assert grade("10-20", "15")[1] == "answer: a range"
    assert grade("It took 3 tries and 40 s.", "40 s")[1] == "answer: several numbers (2)"
    assert grade("no idea", "40")[1] == "answer: no number"
    assert grade("40 kg", "40 s")[1] == "unit mismatch (kg vs s)"
    assert grade("Final answer: 10-20", "15")[1] == "answer: a range in the part marked final"


def test_an_ambiguous_separator_is_read_the_english_way_and_never_silently() -> None:
    judge = NumericJudge()
    wrong = judge.grade(task("1234"), "1.234")
    assert wrong.outcome == "incorrect"
    assert wrong.reason == ("relative error 0.999 > 0.02; ambiguous separator: '1.234' was read as 1.234, "
                            "read as 1234 it would be correct")
    assert wrong.record["verdict"]["ambiguous"] == {"decides": True, "number": "1.234", "other_reading": "1234",
                                                    "other_reading_correct": True, "read_as": "1.234"}
    right = judge.grade(task("2962 m"), "2,962 m")
    assert right.outcome == "correct" and right.record["verdict"]["ambiguous"]["decides"] is True
    same = judge.grade(task("5 m"), "1,234 m")  # wrong in both readings: the reading decides nothing
    assert same.record["verdict"]["ambiguous"]["decides"] is False and "ambiguous" not in (same.reason or "")
    assert "ambiguous" not in judge.grade(task("1234567"), "1.234.567").record["verdict"]


def test_a_percentage_and_a_fraction_record_the_reading_that_matched() -> None:
    judge = NumericJudge()
    assert judge.grade(task("0.45"), "45%").record["verdict"]["reading"] == "fraction"
    assert judge.grade(task("45%"), "45").record["verdict"]["reading"] == "as_written"
    assert judge.grade(task("45 m"), "45 m").record["verdict"]["reading"] == "value"
    assert grade("45%", "0.45", "history")[0] == "correct"  # exact in both readings' terms
    assert grade("45.1%", "0.45", "history") == ("incorrect", "differs (exact match)")


def test_the_two_percent_boundary_is_inclusive_and_exact() -> None:
    # 102 vs 100 is exactly 2 %: correct; a hair beyond is not (exact rationals, no float dust)
    assert grade("102", "100")[0] == "correct"
    assert grade("98", "100")[0] == "correct"
    assert grade("102.0000001", "100")[0] == "incorrect"
    assert grade("0.306", "0.3")[0] == "correct"  # 0.306/0.3 - 1 is 0.020000000000000018 in floats
    assert grade("105", "100", tolerance=Fraction(5, 100))[0] == "correct"


def test_the_history_domain_is_matched_exactly() -> None:
    """The DrBencher paper: "2% relative, exact match for history" -- every answer, not only years."""
    assert grade("1969", "1969", "history")[0] == "correct"
    assert grade("1970", "1969", "history") == ("incorrect", "differs (exact match)")
    assert grade("1970", "1969", "physics")[0] == "correct"  # a number like any other there
    assert grade("July 20, 1969", "1969", "history")[0] == "correct"  # a date of that year
    assert grade("July 20, 1970", "1969", "history")[0] == "incorrect"
    assert grade("18500 days", "18842 days", "history") == ("incorrect", "differs (exact match)")
    assert grade("18500 days", "18842 days", "financial")[0] == "correct"  # 1.8 % off
    assert grade("18,842 days", "18842 days", "History")[0] == "correct"
    assert grade("about 18842", "18842 days", "history")[0] == "correct"  # the unit on one side only
    assert grade("0", "0", "history")[0] == "correct"


def test_every_verdict_records_version_and_tolerance() -> None:
    judge = NumericJudge()
    for answer in ("40 s", "", "41 s", "10-20"):
        v = judge.grade(task("40 s"), answer)
        assert v.record["version"] == NUMERIC_VERSION and v.record["tolerance"] == 0.02
        assert v.record["grader"] == "numeric"
    assert judge.grade(task("40 s"), "").reason == "empty_model_response"
    other = NumericJudge(tolerance="0.05")
    assert other.prompt.name == NUMERIC_VERSION and other.prompt.sha256 != judge.prompt.sha256


def test_a_gold_that_is_not_one_number_is_counted_apart() -> None:
    v = NumericJudge().grade(task("between 3 and 4"), "3")
    assert v.outcome == "judge_failed" and "is not one number: a range" in (v.reason or "")
    with pytest.raises(ValueError, match="tolerance"):
        NumericJudge(tolerance=1)


# -- parser properties -------------------------------------------------------------------

def _grouped(n: int) -> str:
    return f"{n:,}"


@given(st.integers(min_value=0, max_value=10**15))
def test_thousands_separators_parse_to_the_integer(n: int) -> None:
    (q,) = quantities(f"{_grouped(n)} m")
    assert q.value == n and q.written == n and q.dimension == "length"


@given(st.decimals(min_value=-10**9, max_value=10**9, places=4, allow_nan=False, allow_infinity=False))
def test_decimals_parse_exactly(d: object) -> None:
    text = format(d, "f")
    q = answer_quantity(f"about {text} seconds")
    assert q.written == Fraction(str(d)) and q.unit == "seconds"


@given(st.integers(min_value=1, max_value=9999), st.integers(min_value=-30, max_value=30))
def test_scientific_notation_forms_agree(mantissa: int, exp: int) -> None:
    m = Fraction(mantissa, 100)
    text = f"{mantissa / 100:.2f}"
    forms = [f"{text}e{exp}", f"{text}E{exp:+d}", f"{text} × 10^{exp}", f"{text} x 10^{exp}"]
    values = {answer_quantity(f).written for f in forms}
    assert values == {m * Fraction(10) ** exp}


@given(st.sampled_from(sorted(u for u in UNITS if u.isalpha())), st.integers(min_value=1, max_value=10**6))
def test_a_unit_converts_by_its_factor(unit: str, n: int) -> None:
    q = answer_quantity(f"{n} {unit}")
    dim, factor = UNITS[unit]
    assert q.dimension == dim and q.value == n * factor


@given(st.integers(min_value=1, max_value=10**6), st.integers(min_value=1, max_value=10**6))
def test_two_numbers_are_never_one_answer_unless_marked(a: int, b: int) -> None:
    with pytest.raises(NumericParseError):
        answer_quantity(f"{a} apples and {b} pears")
    assert answer_quantity(f"{a} apples.\nFinal answer: {b}").written == b


@given(st.integers(min_value=1, max_value=10**6), st.integers(min_value=0, max_value=400))
def test_relative_error_decides_at_two_percent(gold: int, per_mille: int) -> None:
    answer = Fraction(gold) * (1 + Fraction(per_mille, 10000))
    a = answer_quantity(str(float(answer)) if answer.denominator != 1 else str(answer))
    g = answer_quantity(str(gold))
    ok, _, rel = compare(a, g)
    assert rel is not None and ok == (rel <= Fraction(2, 100))


# -- locales and percentages: properties ---------------------------------------------------

def _lakh(n: int) -> str:
    """``n`` grouped the Indian way: the last three digits, then groups of two."""
    digits = str(n)
    if len(digits) <= 3:
        return digits
    head, tail = digits[:-3], digits[-3:]
    groups = []
    while len(head) > 2:
        groups.insert(0, head[-2:])
        head = head[:-2]
    return ",".join([head, *groups, tail])


SEPARATORS = [".", " ", "\u2009", "\u00a0", "\u202f", "'", "’"]


@given(st.integers(min_value=1_000_000, max_value=10**15), st.sampled_from(SEPARATORS))
def test_two_or_more_groups_read_as_the_integer_whatever_the_separator(n: int, sep: str) -> None:
    text = _grouped(n).replace(",", sep)
    (q,) = quantities(f"{text} m")
    assert q.written == n and q.other_written is None
    assert grade(text, str(n))[0] == "correct" and grade(text, str(n * 10))[0] == "incorrect"


@given(st.integers(min_value=1_000, max_value=10**15))
def test_indian_grouping_reads_as_the_integer(n: int) -> None:
    (q,) = quantities(_lakh(n))
    assert q.written == n
    assert grade(_lakh(n), _grouped(n))[0] == "correct"


@given(st.integers(min_value=1_000_000, max_value=10**12), st.integers(min_value=1, max_value=99),
       st.sampled_from([".", " ", "\u202f", "\u00a0"]))
def test_a_decimal_comma_after_non_comma_groups_is_the_decimal_mark(n: int, cents: int, sep: str) -> None:
    (q,) = quantities(f"{_grouped(n).replace(',', sep)},{cents:02d}")
    assert q.written == n + Fraction(cents, 100)


@given(st.integers(min_value=1, max_value=999), st.integers(min_value=0, max_value=999), st.sampled_from(",."))
def test_one_separator_and_three_digits_is_read_the_english_way_with_the_other_reading_kept(
        whole: int, frac: int, sep: str) -> None:
    (q,) = quantities(f"{whole}{sep}{frac:03d}")
    grouped, decimal = Fraction(whole * 1000 + frac), whole + Fraction(frac, 1000)
    assert (q.written, q.other_written) == ((grouped, decimal) if sep == "," else (decimal, grouped))
    # never silently: a verdict that the other reading would flip says so
    v = NumericJudge().grade(task(str(q.other_written.numerator) if q.other_written.denominator == 1
                                  else format(float(q.other_written), ".3f")), f"{whole}{sep}{frac:03d}")
    assert v.record["verdict"]["ambiguous"]["other_reading_correct"] is True
    assert v.outcome == "incorrect" and "ambiguous separator" in (v.reason or "")


@given(st.integers(min_value=1, max_value=100_000))
def test_a_percentage_equals_its_fraction_and_never_a_hundredfold_other(p: int) -> None:
    pct = Fraction(p, 100)  # p/100 %
    as_percent = f"{float(pct):g}%"
    as_fraction = format(Fraction(p, 10_000).numerator / Fraction(p, 10_000).denominator, ".8f")
    assert grade(as_percent, as_fraction)[0] == "correct"
    assert grade(as_fraction, as_percent)[0] == "correct"
    assert grade(as_percent, format(float(pct * 10_000), "f"))[0] == "incorrect"
