"""Property tests of the strict tool-call parser: never raises, never guesses, round-trips."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from drsearch.agents.preset import DR256
from drsearch.agents.toolcalls import parse_tool_calls

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
VALID_SEARCH = st.builds(
    lambda q, k: {"name": "search", "arguments": {"query": q, "k": k}},
    st.text(min_size=1, max_size=60).filter(lambda q: q.strip()),
    st.integers(1, DR256.search_k_max),
)
VALID_OPEN = st.builds(
    lambda key, value, off: {"name": "open", "arguments": {key: value, "offset": off}},
    st.sampled_from(["docid", "url"]), st.text(min_size=1, max_size=40), st.integers(0, 10**6),
)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_parses_without_raising(text: str) -> None:
    for call in parse_tool_calls({"role": "assistant", "content": text}, 1, DR256):
        assert (call.error is None) == (call.arguments is not None)


@settings(max_examples=300, deadline=None)
@given(st.lists(JSON, max_size=3))
def test_any_native_payload_parses_without_raising(payload: list[Any]) -> None:
    message = {"role": "assistant", "content": None, "tool_calls": payload}
    for call in parse_tool_calls(message, 2, DR256):
        assert call.dialect == "native"
        assert (call.error is None) == (call.arguments is not None)


@settings(max_examples=200, deadline=None)
@given(st.lists(VALID_SEARCH | VALID_OPEN, min_size=1, max_size=3), st.text(max_size=40))
def test_valid_calls_round_trip_in_both_dialects(calls: list[dict[str, Any]], prose: str) -> None:
    prose = prose.replace("<", "")  # keep the surrounding prose free of tags
    text = prose + "".join(f"<tool_call>{json.dumps(c)}</tool_call>" for c in calls)
    native = {"role": "assistant", "content": prose, "tool_calls": [
        {"id": f"c{i}", "type": "function",
         "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])}}
        for i, c in enumerate(calls)]}
    for parsed in (parse_tool_calls({"role": "assistant", "content": text}, 3, DR256),
                   parse_tool_calls(native, 3, DR256)):
        assert [(p.name, p.arguments, p.error) for p in parsed] == [
            (c["name"], c["arguments"], None) for c in calls]


@settings(max_examples=200, deadline=None)
@given(VALID_SEARCH, st.sampled_from(["k", "query"]), JSON)
def test_wrong_argument_values_are_rejected_not_repaired(call: dict[str, Any], key: str, value: Any) -> None:
    args = dict(call["arguments"], **{key: value})
    k = args["k"]  # null is "not given" (strict mode); 5.0 is the integer 5 (JSON Schema's rule)
    ok_k = k is None or (not isinstance(k, bool) and isinstance(k, int | float)
                         and float(k).is_integer() and 1 <= k <= DR256.search_k_max)
    ok_q = isinstance(args["query"], str) and bool(args["query"].strip())
    (parsed,) = parse_tool_calls(
        {"role": "assistant", "content": f"<tool_call>{json.dumps({'name': 'search', 'arguments': args})}</tool_call>"},
        1, DR256)
    assert (parsed.error is None) == (ok_k and ok_q)
    if parsed.error is None:
        assert parsed.arguments == args
