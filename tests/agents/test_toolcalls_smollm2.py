"""What SmolLM2-135M-Instruct really emits in the smoke test (`make smoke`), and why the strict
parser is right to reject every such message (docs/AGENTS.md, "What SmolLM2-135M emits").

The strings are verbatim assistant messages from a real smoke run (llama-cpp-python 0.3.36,
portable build, dr256 seeds, sample question q-7c3b98eafbffe8ba, all 20 turns): one call cut off
by the 192-token cap, then the model copying the loop's own error reply back, which quotes the
literal ``<tool_call>`` token. None is a well-formed call in a dialect we support (native
``tool_calls``, or one ``{"name", "arguments"}`` object inside ``<tool_call>…</tool_call>``).
"""

from __future__ import annotations

import json

import pytest

from drsearch.agents import DR256, parse_tool_calls

# turn 0: an opened tag, a made-up tool name, JSON cut at the token cap, no closing tag
TRUNCATED = (
    '<tool_call>\n{"name": "inner_march_2019_bubonic_plague_in_10_months_2019", "arguments": {"name": '
    '"inner_march_2019_bubonic_plague_in_10_months_2019", "tags": [\n'
    '      "inner_march_2019_bubonic_plague_in_10_months_2019",\n'
    '      "inner_march_2019_bubonic_plague_in_10_months_2019",\n'
    '      "inner_march_2019_bubonic_plague_in_10_months_2019",\n'
    '      "inner_march_2019_bubonic_plague_in')
# the loop's answer to it, as the model saw it inside <tool_response>
ERROR_REPLY = ('{"error":{"message":"unbalanced <tool_call> tag; the call was not executed",'
               '"type":"malformed_tool_call"}}')
# turns 1-19: one of these preambles, then that reply copied back verbatim
PREAMBLES = [
    "Your response contains an error message. Here is a suggested improvement:",
    "Here is a suggested improvement:",
    "This is a minor improvement. Here is a suggested improvement:",
    "You're right, here is a suggested improvement:",
    "Your answer is already an improvement. Here's a suggested improvement:",
    "This is a suggested improvement. Here is a suggested improvement:",
    "Your answer is already an improvement. Here is a suggested improvement:",
]
ECHOES = [f"{p}\n\n<tool_response>\n{ERROR_REPLY}\n</tool_response>" for p in PREAMBLES]


@pytest.mark.parametrize("content", [TRUNCATED, *ECHOES])
def test_every_smollm2_message_is_one_unbalanced_tag(content: str) -> None:
    (call,) = parse_tool_calls({"content": content, "role": "assistant"}, 0, DR256)
    assert (call.dialect, call.arguments, call.error) == ("text", None, "unbalanced <tool_call> tag")
    assert "</tool_call>" not in content  # no message closes a tag: no call to execute


def test_the_truncated_call_is_no_call_even_if_closed() -> None:
    # closing the tag would not make it executable: its JSON is cut, its tool does not exist
    (call,) = parse_tool_calls({"content": TRUNCATED + "</tool_call>"}, 0, DR256)
    assert call.error is not None and call.error.startswith("tool call is not valid JSON")
    (call,) = parse_tool_calls({"content": '<tool_call>{"name": "inner_march_2019_bubonic_plague_in_10_months_'
                                           '2019", "arguments": {"name": "x"}}</tool_call>'}, 0, DR256)
    assert call.error is not None and "unknown tool" in call.error


def test_an_echo_is_not_a_final_answer() -> None:
    # an unclosed <tool_call> may be a call cut short: it is never taken as the final answer
    # (which would end the episode `answered` with the loop's own error text as the answer)
    assert json.loads(ERROR_REPLY)["error"]["type"] == "malformed_tool_call"
    assert all(parse_tool_calls({"content": e}, 1, DR256) for e in ECHOES)
    assert parse_tool_calls({"content": ECHOES[0].replace("<tool_call>", "tool_call")}, 1, DR256) == []
