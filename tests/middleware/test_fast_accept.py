"""The fast check (jsonschema-rs) agrees with jsonschema on every tool schema: its yes is
always jsonschema's yes, and on plain JSON values it says yes wherever jsonschema does (so
the slow walk runs only for calls that are refused or odd)."""

from __future__ import annotations

import enum
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from mcp_gateway_middleware.validation import fast_accept

from pdpp_gateway.tools.registry import REGISTRY

SCHEMAS = {
    name: (schema, fast_accept(schema), Draft202012Validator(schema))
    for name, schema in REGISTRY.input_schemas.items()
}


class Level(enum.IntEnum):
    ONE = 1


class Name(str):
    pass


ANY_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=200),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3),
)


def near(schema: Any) -> st.SearchStrategy[Any]:
    """Values near ``schema``: mostly of its shape with sizes and numbers at and around its
    bounds (so both sides of each bound), now and then a value of another type."""
    if schema is True or not isinstance(schema, dict):
        return ANY_SCALAR
    if "anyOf" in schema:
        shaped = st.one_of([near(branch) for branch in schema["anyOf"]])
    else:
        kinds = schema.get("type", "object")
        shaped = st.one_of(
            [_near_type(kind, schema) for kind in ([kinds] if isinstance(kinds, str) else kinds)]
        )
    return st.one_of(*[shaped] * 12, ANY_SCALAR)


def _around(low: Any, high: Any) -> st.SearchStrategy[Any]:
    """Mostly the bounds and just inside them, sometimes just outside."""
    inside = [edge for edge in (low, high) if edge is not None]
    inside += [low + 1] if low is not None else []
    inside += [high - 1] if high is not None else []
    outside = ([low - 1] if low is not None else []) + ([high + 1] if high is not None else [])
    return st.sampled_from(inside * 6 + outside) if inside else st.sampled_from([0, 1, 2])


def _near_type(kind: str, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    if kind == "string":
        if "enum" in schema:
            return st.sampled_from([*schema["enum"] * 4, schema["enum"][0].upper(), ""])
        sizes = _around(schema.get("minLength"), min(schema.get("maxLength", 4), 140))
        return sizes.filter(lambda size: size >= 0).flatmap(
            lambda size: st.text(min_size=size, max_size=size)
        )
    if kind in ("integer", "number"):
        numbers = _around(schema.get("minimum"), schema.get("maximum"))
        odd = st.sampled_from([2.5, math.nan, math.inf, True, False, Level.ONE])
        return st.one_of(numbers, numbers, numbers.map(float), odd)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        sizes = _around(schema.get("minItems"), schema.get("maxItems")).filter(lambda size: size >= 0)
        items = near(schema.get("items", True))
        return sizes.flatmap(lambda size: st.lists(items, min_size=size, max_size=size))
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", ()))
        extra = schema.get("additionalProperties", True)
        named = st.fixed_dictionaries(
            {name: near(sub) for name, sub in properties.items() if name in required},
            optional={name: near(sub) for name, sub in properties.items() if name not in required},
        )
        strangers = st.dictionaries(st.sampled_from(["other", "gte", "x"]), near(extra), max_size=2)
        sizes = _around(schema.get("minProperties"), schema.get("maxProperties"))
        return st.tuples(named, strangers, st.sampled_from([False] * 4 + [True]), sizes).map(_object)
    return ANY_SCALAR


def _object(parts: tuple[dict[str, Any], dict[str, Any], bool, int]) -> dict[str, Any]:
    named, strangers, with_strangers, size = parts
    value = {**named, **strangers} if with_strangers else named
    return value if value or size <= 0 else {f"k{index}": index for index in range(size)}


@pytest.mark.parametrize("tool", SCHEMAS)
@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_the_fast_check_and_jsonschema_agree(tool: str, data: st.DataObject) -> None:
    schema, fast, validator = SCHEMAS[tool]
    value = data.draw(near(schema))
    if fast(value):
        assert validator.is_valid(value), value
    elif _plain_json(value):
        assert not validator.is_valid(value), value


def _plain_json(value: Any) -> bool:
    """Exactly JSON's types (no subclasses) and finite numbers."""
    if type(value) is dict:
        return all(type(key) is str and _plain_json(item) for key, item in value.items())
    if type(value) is list:
        return all(_plain_json(item) for item in value)
    if type(value) is float:
        return math.isfinite(value)
    return type(value) in (str, int, bool, type(None))


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("query_records", {"stream": "messages", "limit": 5, "connection_id": "cin_mail_work"}),
        (
            "query_records",
            {"stream": "m", "order": "asc", "fields": ["a"], "filter": {"at": {"gte": "2026"}}},
        ),
        ("query_records", {"stream": "m", "limit": 5.0, "expand_limit": {"messages": 3}}),
        ("schema", {}),
        ("aggregate", {"stream": "messages", "metric": "count"}),
    ],
)
def test_ordinary_valid_calls_pass_the_fast_check(tool: str, arguments: dict[str, Any]) -> None:
    _, fast, validator = SCHEMAS[tool]
    assert validator.is_valid(arguments)
    assert fast(arguments)


@pytest.mark.parametrize(
    "arguments",
    [
        {"stream": "m", "limit": True},  # a bool is no integer
        {"stream": "m", "limit": 5.5},
        {"stream": "m", "limit": math.nan},
        {Name("stream"): "m"},  # a key jsonschema-rs cannot read: jsonschema decides
        {"stream": "m", "order": "ASC"},
        {"stream": "m", "other": 1},
        {"limit": 5},
        {"stream": ""},
        {"stream": "m", "fields": []},
        {"stream": "m", "filter": {"at": {}}},
    ],
)
def test_invalid_or_unreadable_calls_are_left_to_jsonschema(arguments: dict[str, Any]) -> None:
    _, fast, _ = SCHEMAS["query_records"]
    assert not fast(arguments)
