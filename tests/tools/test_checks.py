"""The PDPP check ladder plus the tool schemas: every bad input gets a typed, actionable error.

These run the real validation stage over the real tool schemas; the end-to-end tests
prove the same refusals make no RS call.
"""

from __future__ import annotations

from typing import Any

import pytest
from mcp_gateway_middleware import ToolCall, ToolError, ToolResult, ValidateArguments

from pdpp_gateway.tools.encoding import expand_limit_pairs, filter_pairs, forward, scalar
from pdpp_gateway.tools.registry import REGISTRY

VALIDATE = ValidateArguments(REGISTRY.input_schemas, REGISTRY.checks, parsers=REGISTRY.parsers)

BAD = [
    # typed filters (spec 000): strings of every shape, empty objects, bracket keys
    ("query_records", {"stream": "m", "filter": "filter[user_id]=U123"}, "invalid_filter", "filter"),
    ("query_records", {"stream": "m", "filter": "amount>100"}, "invalid_filter", "filter"),
    ("query_records", {"stream": "m", "filter": "Vana"}, "invalid_filter", "filter"),
    ("query_records", {"stream": "m", "filter": ""}, "invalid_filter", "filter"),
    ("query_records", {"stream": "m", "filter": '{"a": 1}'}, "invalid_filter", "filter"),
    ("query_records", {"stream": "m", "filter": {}}, "invalid_filter", "filter"),
    ("query_records", {"stream": "m", "filter": {"filter[user_id]": "U1"}}, "invalid_filter", "filter"),
    ("query_records", {"stream": "m", "filter": {"a": {"between": 1}}}, "invalid_filter", "filter"),
    ("query_records", {"stream": "m", "filter": {"a": {}}}, "invalid_filter", "filter"),
    ("query_records", {"stream": "m", "filter": {"a": [1, 2]}}, "invalid_filter", "filter"),
    ("query_records", {"stream": "m", "filter": {"a": None}}, "invalid_filter", "filter"),
    ("aggregate", {"stream": "m", "metric": "count", "filter": "a=1"}, "invalid_filter", "filter"),
    ("search", {"query": "x", "filter": "a=1", "streams": ["m"]}, "invalid_filter", "filter"),
    ("search", {"query": "x", "filter": {"a": 1}}, "invalid_filter", "streams"),
    # typed expand limits
    ("query_records", {"stream": "m", "expand": ["b"], "expand_limit": {}}, "invalid_expand", "expand_limit"),
    (
        "query_records",
        {"stream": "m", "expand": ["b"], "expand_limit": {"expand_limit[b]": 3}},
        "invalid_expand",
        "expand_limit",
    ),
    ("query_records", {"stream": "m", "expand_limit": {"b": 3}}, "invalid_expand", "expand_limit"),
    (
        "query_records",
        {"stream": "m", "expand": ["b"], "expand_limit": {"b": 0}},
        "invalid_expand",
        "expand_limit",
    ),
    (
        "query_records",
        {"stream": "m", "expand": ["b"], "expand_limit": "b=3"},
        "invalid_expand",
        "expand_limit",
    ),
    ("fetch", {"id": "m:1", "expand": ["b"], "expand_limit": {}}, "invalid_expand", "expand_limit"),
    # limits, unknown and deprecated arguments
    ("query_records", {"stream": "m", "limit": 101}, "invalid_arguments", "limit"),
    ("search", {"query": "x", "limit": 500}, "invalid_arguments", "limit"),
    (
        "query_records",
        {"stream": "m", "connector_instance_id": "c"},
        "invalid_arguments",
        "connector_instance_id",
    ),
    ("search", {"q": "lisbon"}, "invalid_arguments", "q"),
    ("query_records", {"stream": "m", "view": "basic"}, "invalid_arguments", "view"),
    # path safety
    ("query_records", {"stream": "../admin"}, "invalid_arguments", "stream"),
    ("query_records", {"stream": "a/b"}, "invalid_arguments", "stream"),
    ("schema", {"stream": "m", "connection_id": "x\\y"}, "invalid_arguments", "connection_id"),
    ("aggregate", {"stream": "m", "metric": "sum", "field": "../x"}, "invalid_arguments", "field"),
    ("search", {"query": "x", "streams": ["ok", "../no"]}, "invalid_arguments", "streams"),
    ("query_records", {"stream": "m", "fields": ["a,b"]}, "invalid_arguments", "fields"),
    # schema detail rules
    ("schema", {"detail": "full"}, "invalid_arguments", "detail"),
    # aggregate shape
    (
        "aggregate",
        {"stream": "m", "metric": "count", "group_by": "a", "group_by_time": "t", "granularity": "day"},
        "invalid_arguments",
        "group_by_time",
    ),
    (
        "aggregate",
        {"stream": "m", "metric": "count", "group_by_time": "t"},
        "invalid_arguments",
        "granularity",
    ),
    (
        "aggregate",
        {"stream": "m", "metric": "count", "granularity": "day"},
        "invalid_arguments",
        "granularity",
    ),
    ("aggregate", {"stream": "m", "metric": "sum"}, "invalid_arguments", "field"),
    ("aggregate", {"stream": "m", "metric": "count", "limit": 5}, "invalid_arguments", "limit"),
    (
        "aggregate",
        {"stream": "m", "metric": "sum", "field": "x", "group_by": "a"},
        "invalid_arguments",
        "metric",
    ),
    ("aggregate", {"stream": "m", "metric": "median"}, "invalid_arguments", "metric"),
    # changes_since and search paging
    (
        "query_records",
        {"stream": "m", "changes_since": "beginning", "order": "asc"},
        "invalid_arguments",
        "order",
    ),
    ("search", {"query": "x", "mode": "hybrid", "cursor": "c"}, "invalid_arguments", "cursor"),
    # fetch ids
    ("fetch", {"id": "orders:../../etc/passwd"}, "invalid_id", "id"),
    ("fetch", {"id": "cin_a/extra/orders:o1"}, "invalid_id", "id"),
    (
        "fetch",
        {"id": "cin_a/orders:o1", "connection_id": "cin_b"},
        "conflicting_connection_id",
        "connection_id",
    ),
    # read_record_field selectors
    ("read_record_field", {"field": "body"}, "invalid_field_window_selector", "id"),
    (
        "read_record_field",
        {"id": "c/m:1", "stream": "m", "field": "body"},
        "invalid_field_window_selector",
        "stream",
    ),
    (
        "read_record_field",
        {"id": "c/m:1", "field": "body", "q": "x", "offset_chars": 3},
        "invalid_field_window_selector",
        "q",
    ),
    (
        "read_record_field",
        {"id": "c/m:1", "field": "body", "before_chars": 10},
        "invalid_field_window_selector",
        "before_chars",
    ),
    (
        "read_record_field",
        {"id": "c/m:1", "field": "body", "limit_chars": 20000},
        "invalid_arguments",
        "limit_chars",
    ),
    ("read_record_field", {"id": "c/m:1", "field": "../etc"}, "invalid_arguments", "field"),
]


@pytest.mark.parametrize(("tool", "arguments", "code", "param"), BAD)
def test_bad_input_is_refused_with_a_typed_error(
    tool: str, arguments: dict[str, Any], code: str, param: str
) -> None:
    error = VALIDATE.rejection(tool, arguments)
    assert error is not None, f"{tool} accepted {arguments}"
    assert (error.code, error.envelope.get("param")) == (code, param)
    assert len(error.envelope["message"]) > 20


GOOD = [
    ("schema", {}),
    ("schema", {"stream": "messages", "connection_id": "cin_work", "detail": "full"}),
    (
        "query_records",
        {
            "stream": "messages",
            "limit": 100,
            "filter": {"from": "a@b", "size": {"gte": 10}},
            "fields": ["id", "subject"],
            "expand": ["bodies"],
            "expand_limit": {"bodies": 3},
        },
    ),
    ("query_records", {"stream": "messages", "changes_since": "beginning", "connection_id": "cin_work"}),
    (
        "aggregate",
        {
            "stream": "m",
            "metric": "count",
            "group_by_time": "t",
            "granularity": "month",
            "time_zone": "Europe/Lisbon",
            "limit": 12,
        },
    ),
    ("aggregate", {"stream": "m", "metric": "count_distinct", "field": "from_email"}),
    ("search", {"query": "lisbon"}),
    (
        "search",
        {"query": "lisbon", "streams": ["messages"], "filter": {"received_at": {"gte": "2026-01-01"}}},
    ),
    ("fetch", {"id": "cin_a/messages:m1", "connection_id": "cin_a"}),
    ("fetch", {"id": "pdpp://record/cin_a%2Fmessages%3Am1"}),
    (
        "read_record_field",
        {"id": "cin_a/messages:m1", "field": "body_text", "q": "Lisbon", "after_chars": 200},
    ),
    (
        "read_record_field",
        {
            "connection_id": "c",
            "stream": "m",
            "record_id": "r",
            "field": "body",
            "offset_chars": 4096,
            "limit_chars": 16384,
        },
    ),
]


@pytest.mark.parametrize(("tool", "arguments"), GOOD)
def test_good_input_passes(tool: str, arguments: dict[str, Any]) -> None:
    assert VALIDATE.rejection(tool, arguments) is None


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("query_records", {"stream": "m", "limit": 5.0}),
        ("query_records", {"stream": "m", "expand": ["b"], "expand_limit": {"b": 2.0}}),
        ("fetch", {"id": "m:1", "expand": ["b"], "expand_limit": {"b": 2.0}}),
        ("read_record_field", {"id": "c/m:r", "field": "body", "offset_chars": 10.0, "limit_chars": 100.0}),
    ],
)
async def test_whole_number_floats_are_integers_to_every_stage_below(
    tool: str, arguments: dict[str, Any]
) -> None:
    seen: list[Any] = []

    async def terminal(call: ToolCall) -> ToolResult:
        seen.append(call.arguments)
        return ToolResult(structured={})

    await VALIDATE(ToolCall(tool, arguments, None), terminal)
    (passed,) = seen
    numbers = [v for v in passed.values() if isinstance(v, int | float) and not isinstance(v, bool)]
    numbers += list((passed.get("expand_limit") or {}).values())
    assert numbers
    assert all(type(v) is int for v in numbers), passed


def test_scalars_encode_whole_floats_as_integers() -> None:
    assert scalar(5.0) == "5"
    assert scalar(-2.0) == "-2"
    assert scalar(2.5) == "2.5"
    assert scalar(True) == "true"
    assert filter_pairs({"size": {"gte": 1000.0}}) == [("filter[size][gte]", "1000")]
    assert expand_limit_pairs({"b": 3.0}) == [("expand_limit[b]", "3")]


def test_typed_filter_encodes_to_bracket_parameters_and_never_a_bare_filter() -> None:
    pairs = filter_pairs(
        {"user_id": "U123", "created_at": {"gte": "2026-01-01T00:00:00Z", "lt": 5}, "seen": True}
    )
    assert pairs == [
        ("filter[user_id]", "U123"),
        ("filter[created_at][gte]", "2026-01-01T00:00:00Z"),
        ("filter[created_at][lt]", "5"),
        ("filter[seen]", "true"),
    ]
    assert all(key != "filter" for key, _ in pairs)


def test_expand_limit_and_arrays_encode_as_repeated_keys() -> None:
    assert expand_limit_pairs({"messages": 3}) == [("expand_limit[messages]", "3")]
    args = {"fields": ["id", "subject"], "limit": 5, "query": "x"}
    assert forward(args, ("query", "fields", "limit", "cursor"), rename={"query": "q"}) == [
        ("q", "x"),
        ("fields", "id"),
        ("fields", "subject"),
        ("limit", "5"),
    ]


def test_a_long_id_is_quoted_bounded_with_its_own_length() -> None:
    from pdpp_gateway.ids import parse_handle

    with pytest.raises(ToolError) as refused:
        parse_handle("x" * 2048)
    message = refused.value.envelope["message"]
    assert "(2048 characters)" in message
    assert len(message) < 300
