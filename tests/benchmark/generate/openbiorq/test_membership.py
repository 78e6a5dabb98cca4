"""The membership audit: longest verbatim word span, token Jaccard, share within 5 words."""

from __future__ import annotations

import pytest

from drsearch.benchmark.generate.openbiorq.membership import (
    jaccard,
    longest_common_span,
    membership_report,
    words,
)


def test_spans_and_jaccard_by_hand() -> None:
    assert words("It remains UNKNOWN whether X-ray helps.") == ["it", "remains", "unknown", "whether", "x", "ray",
                                                              "helps"]
    assert longest_common_span(words("a b c d e"), words("x b c d y")) == 3
    assert longest_common_span(words("a b"), words("b a")) == 1
    assert longest_common_span(words("a b c"), words("x y z")) == 0
    assert longest_common_span([], words("a")) == 0
    assert jaccard(words("a b c"), words("b c d")) == pytest.approx(2 / 4)
    assert jaccard([], []) == 0.0


def test_the_report_counts_items_within_the_span() -> None:
    source = "one two three four five six seven eight nine ten"
    items = [{"question": "one two three four five six?", "source_text": source, "task_id": "s#0"},  # span 6
             {"question": "two three four five and more", "source_text": source, "task_id": "s#1"},  # span 4
             {"question": "nothing shared", "source_text": source, "task_id": "s#2"}]  # span 0
    report = membership_report(items, 5)
    assert [r["longest_span"] for r in report["items"]] == [6, 4, 0]
    assert report["median_span"] == 4
    assert (report["within_max_span"]["yes"], report["within_max_span"]["n"]) == (2, 3)
    assert report["items"][0]["jaccard"] == round(6 / 10, 6)
    assert report["median_jaccard"] == round(4 / 12, 6)
