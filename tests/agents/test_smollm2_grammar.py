"""The smoke server's constrained decoding (``smollm2_server.py --constrain``), without a model:
the tool-call schema admits exactly a call of an offered tool with arguments of its schema, and
the grammar wraps it in the loop's ``<tool_call>`` text dialect beside a plain answer (checked
against llama.cpp's own grammar parser where the smoke extra is installed)."""

from __future__ import annotations

import importlib.util
import json

import jsonschema
import pytest

from drsearch.agents import DR256
from drsearch.agents.tools import tool_schemas

from .smollm2_server import tool_call_gbnf, tool_call_schema


def _tools() -> list[dict]:
    return [json.loads(json.dumps(t)) for t in tool_schemas(DR256)]


def test_the_tool_call_schema_admits_exactly_the_offered_calls() -> None:
    schema = tool_call_schema(_tools())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate({"name": "search", "arguments": {"query": "highest mountain in the Alps"}}, schema)
    jsonschema.validate({"name": "open", "arguments": {"docid": "d1"}}, schema)
    for bad in ({"name": "python", "arguments": {"code": "1"}},  # not offered
                {"name": "search", "arguments": {}},  # its required query missing
                {"name": "search"},  # no arguments
                {"name": "search", "arguments": {"query": "x"}, "extra": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)


def test_the_grammar_is_a_tagged_call_or_a_plain_answer() -> None:
    seen: list[str] = []

    def to_gbnf(schema: str) -> str:
        seen.append(schema)
        return 'root ::= "{" ws "}"\nws ::= [ ]*\n'

    gbnf = tool_call_gbnf(_tools(), to_gbnf)
    assert json.loads(seen[0]) == tool_call_schema(_tools())
    lines = gbnf.splitlines()
    assert lines[0] == 'root ::= "<tool_call>\\n" call "\\n</tool_call>" | answer'
    assert "answer ::= [^<] [^<]*" in lines and 'call ::= "{" ws "}"' in lines
    assert sum(line.startswith("root ::=") for line in lines) == 1


def test_llama_cpp_parses_the_grammar() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (the smoke extra: make smoke)")
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    LlamaGrammar.from_string(tool_call_gbnf(_tools(), json_schema_to_gbnf), verbose=False)
