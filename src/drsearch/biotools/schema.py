"""Argument checking for the biomedical tools: the JSON Schema subset their schemas use.

Checked: ``type`` (object, string, integer, array), ``enum``, ``required``,
``additionalProperties: false``, ``minimum``/``maximum``, ``minLength``/``maxLength``,
``pattern`` (full match), ``minItems``/``maxItems`` and ``items``, object values of
``additionalProperties`` schemas, and ``default`` (filled in). The result is the canonical
arguments: every property with a default present, nulls dropped (strict-mode clients send
every property, null when unused), so two spellings of one call are one cache key.
"""

from __future__ import annotations

import re
from typing import Any

from .errors import InvalidArgumentsError

_TYPES: dict[str, tuple[type, ...]] = {
    "array": (list,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "object": (dict,),
    "string": (str,),
}


def _fail(tool: str, where: str, why: str) -> InvalidArgumentsError:
    return InvalidArgumentsError(f"{tool}: {where}: {why}" if where else f"{tool}: {why}")


def _check_type(tool: str, where: str, schema: dict[str, Any], value: Any) -> None:
    kind = schema.get("type")
    if kind is None:
        return
    kinds = kind if isinstance(kind, list) else [kind]
    ok = any(
        isinstance(value, _TYPES[k]) and not (k in ("integer", "number") and isinstance(value, bool))
        for k in kinds
    )
    if not ok:
        raise _fail(tool, where, f"must be {' or '.join(kinds)}")


def _check_scalar(tool: str, where: str, schema: dict[str, Any], value: Any) -> None:
    if "enum" in schema and value not in schema["enum"]:
        raise _fail(tool, where, f"must be one of {', '.join(map(str, schema['enum']))}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or (not value.strip() and schema.get("minLength", 0)):
            raise _fail(tool, where, "must not be empty")
        if len(value) > schema.get("maxLength", 1 << 30):
            raise _fail(tool, where, f"longer than {schema['maxLength']} characters")
        if "pattern" in schema and not re.fullmatch(schema["pattern"], value):
            raise _fail(tool, where, f"does not match {schema['pattern']}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            raise _fail(tool, where, f"must be >= {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            raise _fail(tool, where, f"must be <= {schema['maximum']}")


def check_value(tool: str, where: str, schema: dict[str, Any], value: Any) -> Any:
    """``value`` checked against ``schema`` (a canonical copy: objects with defaults filled)."""
    _check_type(tool, where, schema, value)
    if isinstance(value, dict):
        return check_object(tool, where, schema, value)
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise _fail(tool, where, f"needs at least {schema['minItems']} item(s)")
        if len(value) > schema.get("maxItems", 1 << 30):
            raise _fail(tool, where, f"at most {schema['maxItems']} item(s)")
        items = schema.get("items", {})
        return [check_value(tool, f"{where}[{i}]", items, v) for i, v in enumerate(value)]
    _check_scalar(tool, where, schema, value)
    return value


def check_object(tool: str, where: str, schema: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = schema.get("properties", {})
    extra_schema = schema.get("additionalProperties", True)
    values = {k: v for k, v in given.items() if v is not None}
    out: dict[str, Any] = {}
    for name, value in values.items():
        sub = f"{where}.{name}" if where else name
        if name in props:
            out[name] = check_value(tool, sub, props[name], value)
        elif extra_schema is False:
            raise _fail(tool, "", f"unknown argument {sub!r} (arguments: {', '.join(sorted(props))})")
        else:
            out[name] = check_value(tool, sub, extra_schema if isinstance(extra_schema, dict) else {}, value)
    for name in schema.get("required", []):
        if name not in out:
            raise _fail(tool, "", f"missing required argument {name!r}")
    for name, sub_schema in props.items():
        if name not in out and "default" in sub_schema:
            out[name] = sub_schema["default"]
    if "maxProperties" in schema and len(out) > schema["maxProperties"]:
        raise _fail(tool, where, f"at most {schema['maxProperties']} entries")
    return dict(sorted(out.items()))


def check_arguments(tool: str, schema: dict[str, Any], args: object) -> dict[str, Any]:
    """The canonical arguments of a call of ``tool`` (see the module); raises
    InvalidArgumentsError naming the first argument that does not fit."""
    if not isinstance(args, dict):
        raise _fail(tool, "", "arguments must be a JSON object")
    return check_object(tool, "", schema, args)


def exactly_one(tool: str, args: dict[str, Any], *names: str) -> str:
    """The one of ``names`` present in ``args``; InvalidArgumentsError unless exactly one is."""
    given = [n for n in names if n in args]
    if len(given) != 1:
        raise InvalidArgumentsError(
            f"{tool}: give exactly one of {', '.join(names)}"
            + (f" (got {', '.join(given)})" if given else "")
        )
    return given[0]


__all__ = ["check_arguments", "check_value", "exactly_one"]
