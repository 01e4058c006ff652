"""A stdin line is read as the SDK reads it: ``wire.line`` before the SDK loads (never where
the SDK's parser would read it otherwise), ``wire.sdk_line`` with the SDK's own parser.

Hypothesis draws JSON-RPC lines, well-formed and not: any ids (integers past 64 bits,
floats, booleans, strings needing escapes), any params (NaN, infinities, floats, escaped
surrogate pairs, nesting near the SDK's depth limit), duplicate keys, extra members,
responses. For each:

- what ``read_message`` reads is what the SDK's parser reads (the same values, of the same
  types), and the SDK takes it as the same request or notification;
- the id ``id_key`` echoes is the text the SDK writes back in its answer;
- what ``sdk_line.plain_request`` takes, the SDK reads as that very ``JSONRPCRequest``.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core
from hypothesis import given
from hypothesis import strategies as st
from mcp.types import JSONRPCNotification, JSONRPCRequest, JSONRPCResponse, jsonrpc_message_adapter

from pdpp_gateway.wire import sdk_line
from pdpp_gateway.wire.line import SDK_PARSE_DEPTH, id_key, read_message

LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=6)
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=10,
)
IDS = (
    st.integers(min_value=-(2**60), max_value=2**60)
    | st.text(max_size=8)
    | LEAVES
    | st.lists(st.integers(), max_size=1)
)
ANY_MESSAGE = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0") | LEAVES, "method": st.sampled_from(["ping", "tools/call", "x/y"]) | LEAVES},
    optional={
        "id": IDS,
        "params": st.dictionaries(st.text(max_size=4), VALUES, max_size=3) | LEAVES,
        "result": VALUES,
        "x": VALUES,
    },
)
REQUEST = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0"), "method": st.sampled_from(["ping", "tools/call", "x/y"])},
    optional={"id": IDS, "params": st.dictionaries(st.text(max_size=4), VALUES, max_size=3)},
)
MESSAGES = st.one_of(REQUEST, REQUEST, ANY_MESSAGE)


def _deep(depth: int) -> str:
    return '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":' + "[" * depth + "]" * depth + "}}"


LINES = st.one_of(
    st.tuples(MESSAGES, st.booleans()).map(lambda drawn: json.dumps(drawn[0], ensure_ascii=drawn[1])),
    st.tuples(MESSAGES, IDS).map(
        lambda drawn: json.dumps(drawn[0])[:-1] + ',"id":' + json.dumps(drawn[1]) + "}"
    ),
    st.integers(min_value=SDK_PARSE_DEPTH - 5, max_value=SDK_PARSE_DEPTH + 5).map(_deep),
)


def _same(one: Any, other: Any) -> bool:
    """Equal values of the same JSON types all the way down (``1`` is not ``1.0``, nor ``True``)."""
    if type(one) is not type(other):
        return False
    if isinstance(one, dict):
        return one.keys() == other.keys() and all(_same(one[key], other[key]) for key in one)
    if isinstance(one, list):
        return len(one) == len(other) and all(_same(a, b) for a, b in zip(one, other, strict=True))
    return bool(one == other) or (one != one and other != other)  # NaN


@given(line=LINES)
def test_an_early_line_is_read_as_the_sdk_reads_it(line: str) -> None:
    message = read_message(line)
    if message is None:
        return
    assert _same(message, pydantic_core.from_json(line, allow_inf_nan=True))
    read = jsonrpc_message_adapter.validate_json(line, by_name=False)
    assert isinstance(read, JSONRPCRequest | JSONRPCNotification)
    assert (read.method, read.params) == (message["method"], message.get("params"))
    key = id_key(message.get("id"))
    if key is not None:
        assert isinstance(read, JSONRPCRequest)
        echoed = JSONRPCResponse(jsonrpc="2.0", id=read.id, result={}).model_dump_json(by_alias=True)
        assert echoed.startswith('{"jsonrpc":"2.0","id":' + key + ",")


@given(line=LINES)
def test_a_plain_request_is_the_sdks_jsonrpc_request(line: str) -> None:
    request = sdk_line.plain_request(line)
    if request is None:
        return
    read = jsonrpc_message_adapter.validate_json(line, by_name=False)
    assert isinstance(read, JSONRPCRequest)
    assert (read.id, read.method) == (request["id"], request["method"])
    assert _same(read.params, request.get("params"))  # NaN is itself here, as the line says
