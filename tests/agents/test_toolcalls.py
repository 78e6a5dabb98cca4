"""The strict tool-call parser and argument validation: malformed calls are never guessed."""

from __future__ import annotations

import json
from typing import Any

import pytest

from drsearch.agents import DR256, parse_tool_calls


def native(*calls: tuple[str, Any]) -> dict[str, Any]:
    return {"content": None, "role": "assistant", "tool_calls": [
        {"function": {"arguments": a if isinstance(a, str) else json.dumps(a), "name": n}, "id": f"id{i}",
         "type": "function"} for i, (n, a) in enumerate(calls)]}


def test_native_valid_calls() -> None:
    calls = parse_tool_calls(native(("search", {"query": "q", "k": 5}), ("open", {"url": "https://x.org/a"})),
                             0, DR256)
    assert [(c.name, c.arguments, c.error, c.call_id) for c in calls] == [
        ("search", {"query": "q", "k": 5}, None, "id0"), ("open", {"url": "https://x.org/a"}, None, "id1")]


@pytest.mark.parametrize("name,args,why", [
    ("search", "{bad", "not valid JSON"),
    ("search", "[1]", "JSON object"),
    ("search", {"query": ""}, "query is empty"),
    ("search", {"query": "q", "k": 0}, "k must be an integer in 1..20, got 0"),
    ("search", {"query": "q", "k": 21}, "k must be"),
    ("search", {"query": "q", "k": True}, "k must be an integer in 1..20, got true"),
        ("search", {"query": "q", "k": 5.5}, "got 5.5"),
    ("search", {"query": "q", "top_k": 3}, "unknown field 'top_k'"),
    ("open", {}, "exactly one of"),
    ("open", {"docid": "a", "url": "b"}, "exactly one of"),
    ("open", {"docid": "a", "offset": -1}, "offset must be an integer in 0.."),
    ("fetch", {"url": "x"}, "unknown tool 'fetch'"),
])
def test_native_malformed_calls(name: str, args: Any, why: str) -> None:
    (call,) = parse_tool_calls(native((name, args)), 0, DR256)
    assert call.arguments is None and call.error is not None and why in call.error


def test_text_tag_dialect() -> None:
    msg = {"content": '<think>maybe <tool_call>{"name": "open"}</tool_call></think>ok\n'
                      '<tool_call>{"name": "search", "arguments": {"query": "a b"}}</tool_call>'
                      '<tool_call>{"name": "open", "arguments": "{\\"docid\\": \\"d1\\"}"}</tool_call>'}
    calls = parse_tool_calls(msg, 3, DR256)
    assert [(c.name, c.arguments, c.dialect, c.call_id) for c in calls] == [
        ("search", {"query": "a b"}, "text", "call_3_0"), ("open", {"docid": "d1"}, "text", "call_3_1")]


@pytest.mark.parametrize("content,why", [
    ("<tool_call>{'name': 'search'}</tool_call>", "not valid JSON"),
    ('<tool_call>{"name": "search", "arguments": {"query": "x"}, "id": 1}</tool_call>', "must be"),
    ('<tool_call>{"name": "search", "arguments": {"query": "x"}}', "unbalanced"),
])
def test_text_tag_malformed(content: str, why: str) -> None:
    calls = parse_tool_calls({"content": content}, 0, DR256)
    assert len(calls) == 1 and calls[0].arguments is None and why in (calls[0].error or "")


def test_plain_text_is_a_final_answer() -> None:
    assert parse_tool_calls({"content": "Paris"}, 0, DR256) == []
    assert parse_tool_calls({"content": None, "tool_calls": []}, 0, DR256) == []


def test_think_inside_a_tool_call_argument_is_text_not_a_think_block() -> None:
    # Found by the round-trip property test: a query containing "<think>" used to swallow the
    # rest of the message and leave an unbalanced tag.
    content = '<think>plan</think><tool_call>{"name": "search", "arguments": {"query": "<think>", "k": 1}}</tool_call>'
    (call,) = parse_tool_calls({"role": "assistant", "content": content}, 0, DR256)
    assert (call.name, call.arguments, call.error) == ("search", {"query": "<think>", "k": 1}, None)
    hidden = '<think>maybe <tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call></think>done'
    assert parse_tool_calls({"role": "assistant", "content": hidden}, 0, DR256) == []


def test_a_closing_tag_inside_a_tool_call_argument_is_text() -> None:
    # Found by the round-trip property test (unseeded): a query holding "</tool_call>" ended the
    # block inside its JSON string (not valid JSON, then an unbalanced tag).
    for query in ["</tool_call>", "a </tool_call><think> b", "<tool_call>x</tool_call>"]:
        body = json.dumps({"name": "search", "arguments": {"query": query, "k": 1}})
        content = f"<think>plan</think>ok <tool_call> {body} </tool_call><tool_call>{body}</tool_call>"
        calls = parse_tool_calls({"role": "assistant", "content": content}, 0, DR256)
        assert [(c.name, c.arguments, c.error) for c in calls] == [
            ("search", {"query": query, "k": 1}, None)] * 2, query
    # a body that is not one JSON value before the closing tag still ends at the first one
    calls = parse_tool_calls({"content": '<tool_call>{"name": "search"} x</tool_call>'}, 0, DR256)
    assert len(calls) == 1 and "not valid JSON" in (calls[0].error or "")
