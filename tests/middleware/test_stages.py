"""The stock stages alone: validation ladder, error preservation, rendering, token kinds."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Mapping
from typing import Any

import pytest
from mcp_gateway_middleware import (
    PreserveErrors,
    RefuseTokenKinds,
    RenderContent,
    ToolCall,
    ToolError,
    ToolResult,
    ValidateArguments,
    compose,
    gateway_error,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "stream": {"type": "string", "minLength": 1},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        "order": {"enum": ["asc", "desc"]},
    },
    "required": ["stream"],
    "additionalProperties": False,
}


class Terminal:
    def __init__(self) -> None:
        self.calls: list[ToolCall] = []

    async def __call__(self, call: ToolCall) -> ToolResult:
        self.calls.append(call)
        return ToolResult(structured={"data": dict(call.arguments)})


def _no_tables(arguments: Mapping[str, Any]) -> ToolError | None:
    if arguments.get("stream") == "tables":
        return gateway_error("invalid_stream", "tables is not a stream; call schema().", param="stream")
    return None


HINTS = {("limit", "maximum"): "Page with the returned next_cursor instead."}  # a gateway's own words


@pytest.fixture
def terminal() -> Terminal:
    return Terminal()


async def _run(terminal: Terminal, arguments: dict[str, Any]) -> ToolResult:
    validate = ValidateArguments({"read": SCHEMA}, {"read": [_no_tables]}, hints=HINTS)
    chain = compose([PreserveErrors(), validate], terminal)
    return await chain(ToolCall("read", arguments, None))


@pytest.mark.parametrize(
    ("arguments", "code", "param", "phrase"),
    [
        ({"stream": "m", "lmit": 3}, "invalid_arguments", "lmit", "allowed arguments: limit, order, stream"),
        ({}, "invalid_arguments", "stream", "requires the argument 'stream'"),
        ({"stream": "m", "limit": 500}, "invalid_arguments", "limit", "at most 100. Page with the returned"),
        ({"stream": "m", "limit": "10"}, "invalid_arguments", "limit", "must be an integer, not a string"),
        ({"stream": "m", "order": "up"}, "invalid_arguments", "order", "one of: asc, desc"),
        ({"stream": ""}, "invalid_arguments", "stream", "must not be empty"),
        ({"stream": "tables"}, "invalid_stream", "stream", "call schema()"),
    ],
)
async def test_rejections_are_typed_actionable_and_never_reach_the_terminal(
    terminal: Terminal, arguments: dict[str, Any], code: str, param: str, phrase: str
) -> None:
    result = await _run(terminal, arguments)
    assert result.is_error
    error = result.structured["error"]
    assert (error["code"], error["param"]) == (code, param)
    assert phrase in error["message"]
    assert terminal.calls == []


async def test_valid_arguments_pass_through_untouched(terminal: Terminal) -> None:
    result = await _run(terminal, {"stream": "messages", "limit": 5})
    assert not result.is_error
    assert result.structured == {"data": {"stream": "messages", "limit": 5}}


async def test_custom_checks_run_before_the_schema(terminal: Terminal) -> None:
    # Both the check and the schema object; the check's precise error wins.
    result = await _run(terminal, {"stream": "tables", "bogus": 1})
    assert result.structured["error"]["code"] == "invalid_stream"


async def test_tool_error_envelope_is_kept_whole() -> None:
    envelope = {
        "type": "api_error",
        "code": "ambiguous_connection",
        "message": "pick one",
        "available_connections": [{"connection_id": "cin_a"}],
        "retry_with": "connection_id",
    }

    async def upstream(call: ToolCall) -> ToolResult:
        raise ToolError(envelope, http_status=409)

    result = await compose([PreserveErrors()], upstream)(ToolCall("t", {}, None))
    assert result.is_error
    assert result.structured == {"error": envelope, "http_status": 409}


async def test_unexpected_exception_is_contained_without_internals(caplog: pytest.LogCaptureFixture) -> None:
    async def broken(call: ToolCall) -> ToolResult:
        raise KeyError("secret internal detail")

    with caplog.at_level(logging.ERROR):
        result = await compose([PreserveErrors()], broken)(ToolCall("t", {}, None))
    assert result.is_error
    assert result.structured["error"]["code"] == "internal_error"
    assert "secret internal detail" not in str(result.structured)
    assert "secret internal detail" in caplog.text  # the operator still gets the traceback


async def test_render_content_fills_text_for_results_and_errors() -> None:
    def ok(call: ToolCall, result: ToolResult) -> str:
        return f"{call.name} ok {result.structured['n']}"

    def failed(call: ToolCall, result: ToolResult) -> str:
        return f"Error {result.structured['error']['code']}"

    async def terminal(call: ToolCall) -> ToolResult:
        if call.arguments.get("fail"):
            raise gateway_error("nope", "no")
        return ToolResult(structured={"n": 3})

    chain = compose([RenderContent({"count": ok}, failed), PreserveErrors()], terminal)
    assert (await chain(ToolCall("count", {}, None))).text == "count ok 3"
    assert (await chain(ToolCall("count", {"fail": True}, None))).text == "Error nope"
    fallback = await chain(ToolCall("unrendered", {}, None))
    assert fallback.text is not None
    assert "unrendered" in fallback.text


@pytest.mark.parametrize(("kind", "refused"), [("owner", True), (None, True), ("client", False)])
async def test_refuse_token_kinds(terminal: Terminal, kind: str | None, refused: bool) -> None:
    stage = RefuseTokenKinds(
        lambda call: call.context,
        {"owner"},
        lambda k: gateway_error("permission_error", f"{k} refused", type_="permission_error"),
    )
    result = await compose([PreserveErrors(), stage], terminal)(ToolCall("t", {}, context=kind))
    assert result.is_error is refused
    assert (terminal.calls == []) is refused


async def test_arguments_nested_too_deep_are_refused_before_any_recursion() -> None:
    deep: dict[str, object] = {}
    node = deep
    for _ in range(5_000):  # far past Python's recursion limit
        node["a"] = {}
        node = node["a"]  # type: ignore[assignment]
    stage = ValidateArguments({"t": {"type": "object"}})

    async def never(call: ToolCall) -> ToolResult:
        raise AssertionError("a refused call must not go on")

    with pytest.raises(ToolError) as caught:
        await stage(ToolCall("t", {"filter": deep}, None), never)
    assert caught.value.envelope["code"] == "invalid_arguments"
    assert "32 levels" in caught.value.envelope["message"]
    shallow = {"filter": {"a": {"b": [1, 2.0]}}}

    async def passes(call: ToolCall) -> ToolResult:
        return ToolResult(structured={"seen": call.arguments})

    result = await stage(ToolCall("t", shallow, None), passes)
    assert result.structured["seen"] == {"filter": {"a": {"b": [1, 2]}}}


async def test_the_parser_runs_once_after_the_schema_and_its_value_travels_down() -> None:
    parsed_from: list[Mapping[str, Any]] = []

    def parse_span(arguments: Mapping[str, Any]) -> tuple[int, int]:
        parsed_from.append(arguments)
        start, _, end = str(arguments["span"]).partition("-")
        if not end:
            raise gateway_error("invalid_span", "span must read START-END", param="span")
        return int(start), int(end)

    schema = {"type": "object", "properties": {"span": {"type": "string"}}, "required": ["span"]}
    stage = ValidateArguments({"t": schema}, parsers={"t": parse_span})

    async def seen(call: ToolCall) -> ToolResult:
        return ToolResult(structured={"parsed": call.parsed})

    result = await stage(ToolCall("t", {"span": "3-9"}, None), seen)
    assert result.structured["parsed"] == (3, 9)
    assert parsed_from == [{"span": "3-9"}]  # once
    with pytest.raises(ToolError) as refused:  # the schema first: the parser never sees a number
        await stage(ToolCall("t", {"span": 5}, None), seen)
    assert refused.value.envelope["code"] == "invalid_arguments"
    assert len(parsed_from) == 1
    with pytest.raises(ToolError) as unparsable:  # then the parser's own refusal
        await stage(ToolCall("t", {"span": "7"}, None), seen)
    assert unparsable.value.envelope["code"] == "invalid_span"


def test_jsonschema_loads_on_the_first_refusal_not_when_the_pipeline_is_built() -> None:
    """Valid calls never need it (jsonschema-rs says yes), so a start-up does not wait for it;
    the first refusal still gets jsonschema's wording."""
    probe = (
        "import asyncio, sys\n"
        "from mcp_gateway_middleware import ToolCall, ToolError, ValidateArguments\n"
        "stage = ValidateArguments({'t': {'type': 'object', 'properties': {'n': {'type': 'integer'}}}})\n"
        "async def ok(call): return call\n"
        "asyncio.run(stage(ToolCall('t', {'n': 1}, None), ok))\n"
        "print('jsonschema' in sys.modules)\n"
        "try:\n"
        "    asyncio.run(stage(ToolCall('t', {'n': 'x'}, None), ok))\n"
        "except ToolError as error:\n"
        "    print('jsonschema' in sys.modules, error.envelope['message'])\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)  # noqa: S603
    assert done.stdout.splitlines() == ["False", "True argument 'n' must be an integer, not a string."]


def test_a_server_compiles_its_validators_before_it_serves() -> None:
    probe = (
        "import sys\n"
        "from mcp_gateway_middleware import ValidateArguments\n"
        "ValidateArguments({'t': {'type': 'object'}}, compile_now=True)\n"
        "print('jsonschema' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)  # noqa: S603
    assert done.stdout.strip() == "True"


WORDED = {
    "type": "object",
    "properties": {
        "code": {"type": "string", "minLength": 3, "pattern": "^[A-Z]+$"},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "extra": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "limit": {"type": "integer", "maximum": 50, "exclusiveMinimum": 0},
        "step": {"type": "number", "multipleOf": 5},
    },
    "required": ["code", "tags"],
}


@pytest.mark.parametrize(
    ("arguments", "param", "message"),
    [
        ({"code": "AB", "tags": ["x"]}, "code", "argument 'code' must be at least 3 characters long, not 2."),
        (
            {"code": "abc", "tags": ["x"]},
            "code",
            "argument 'code' must match the pattern '^[A-Z]+$'; 'abc' does not.",
        ),
        ({"code": "ABC", "tags": []}, "tags", "argument 'tags' must list at least 1 item(s)."),
        (
            {"code": "ABC", "tags": ["x"], "extra": []},
            "extra",
            "argument 'extra' must list at least 1 item(s); omit it instead.",
        ),
        ({"code": "ABC", "tags": ["x"], "limit": 51}, "limit", "argument 'limit' must be at most 50."),
        ({"code": "ABC", "tags": ["x"], "limit": 0}, "limit", "argument 'limit' must be greater than 0."),
        ({"code": "ABC", "tags": ["x"], "step": 7}, "step", "argument 'step' must be a multiple of 5."),
        ({"tags": ["x"]}, "code", "find requires the argument 'code'."),
    ],
)
async def test_a_refusal_says_what_the_schema_says_in_no_gateway_s_words(
    arguments: dict[str, Any], param: str, message: str
) -> None:
    chain = compose([PreserveErrors(), ValidateArguments({"find": WORDED})], Terminal())
    error = (await chain(ToolCall("find", arguments, None))).structured["error"]
    assert (error["type"], error["param"], error["message"]) == ("invalid_request_error", param, message)


async def test_a_gateway_plugs_its_own_error_types_hints_and_internal_error() -> None:
    validate = ValidateArguments(
        {"find": WORDED}, hints={("limit", "maximum"): "Ask for fewer."}, error_type="bad_input"
    )
    chain = compose([PreserveErrors(), validate], Terminal())
    error = (await chain(ToolCall("find", {"code": "ABC", "tags": ["x"], "limit": 99}, None))).structured[
        "error"
    ]
    assert (error["type"], error["message"]) == (
        "bad_input",
        "argument 'limit' must be at most 50. Ask for fewer.",
    )

    async def broken(call: ToolCall[None]) -> ToolResult:
        raise RuntimeError("secret internals")

    ours = {"type": "server_error", "code": "internal_error", "message": "Weather desk fault; try later."}
    result = await compose([PreserveErrors[None](internal_error=ours)], broken)(ToolCall("t", {}, None))
    assert result.structured == {"error": ours}
