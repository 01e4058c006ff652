"""A seventh tool is one record in a registry: listed, validated and parsed, routed for a package,
rendered and answered on both doors, with nothing else edited.

``count_records`` counts a stream's records (one RS aggregate read). It is registered in a
test registry beside the six tools and served by the hosted door (real HTTP, the SDK's
Streamable HTTP client) and by the stdio door's server (the SDK's client in process, the
same ``build_server`` the stdio door runs), against the sandbox RS.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import orjson
import pytest
from mcp import Client
from mcp_gateway_middleware import ToolResult

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.hosted.embedded import mcp_http, start_gateway
from pdpp_gateway.package.fan_out import PackageRoute
from pdpp_gateway.rs.client import RsClient, rs_path
from pdpp_gateway.sandbox.fronting import sandbox_settings
from pdpp_gateway.server import build_server
from pdpp_gateway.tools.args import Pairs
from pdpp_gateway.tools.checks import safe_names
from pdpp_gateway.tools.pipeline import build_pipeline
from pdpp_gateway.tools.registry import REGISTRY, Registry, Tool
from pdpp_gateway.tools.specs import TOOL_NAMES, ToolSpec

COUNT_SPEC = ToolSpec(
    name="count_records",
    title="Count records",
    description="Count one stream's records (GET /v1/streams/{stream}/aggregate, metric count).",
    input_schema={
        "type": "object",
        "properties": {
            "stream": {"type": "string", "minLength": 1, "maxLength": 128},
            "connection_id": {"type": "string", "minLength": 1, "maxLength": 128},
        },
        "required": ["stream"],
        "additionalProperties": False,
    },
    output_schema={"type": "object", "properties": {"data": {"type": "object"}}, "required": ["data"]},
    summary="how many records one stream holds.",
)


class CountArgs(NamedTuple):
    stream: str
    connection_id: str | None
    query: Pairs


def parse_count(arguments: Mapping[str, Any]) -> CountArgs:
    connection_id = arguments.get("connection_id")
    query = (("metric", "count"), *((("connection_id", connection_id),) if connection_id else ()))
    return CountArgs(stream=arguments["stream"], connection_id=connection_id, query=query)


async def count_records(context: GatewayContext, args: CountArgs) -> ToolResult:
    response = await context.rs.get_json(rs_path("v1", "streams", args.stream, "aggregate"), args.query)
    return ToolResult({"data": response.body})


def render_count(args: CountArgs, result: ToolResult) -> str:
    data = orjson.dumps(result.structured["data"]).decode()
    return f"count_records({args.stream}): {data[:300]}"


COUNT = Tool(
    COUNT_SPEC,
    (safe_names("stream", "connection_id"),),
    parse_count,
    count_records,
    render_count,
    PackageRoute.STREAM,
)
SEVEN = Registry([*REGISTRY.tools, COUNT])


def text_of(result: Any) -> str:
    return "".join(part.text for part in result.content if part.type == "text")


def test_the_six_are_the_names_the_early_paths_know() -> None:
    assert REGISTRY.names == TOOL_NAMES  # the stdio early answers and the command line read TOOL_NAMES
    with pytest.raises(ValueError, match="share a name"):
        Registry([*REGISTRY.tools, REGISTRY.tools[0]])


async def test_a_seventh_tool_is_served_by_the_hosted_door(sandbox: Any) -> None:
    async with start_gateway(sandbox_settings(sandbox.url), registry=SEVEN) as url:
        async with mcp_http(url, sandbox.tokens["client_broad"]) as client:
            listed = [tool.name for tool in (await client.list_tools()).tools]
            counted = await client.call_tool("count_records", {"stream": "messages"})
            refused = await client.call_tool("count_records", {"stream": "../schema"})
            unknown = await client.call_tool("count_records", {"stream": "messages", "limit": 3})
        async with mcp_http(url, sandbox.tokens["package"]) as package:
            chat = await package.call_tool("count_records", {"stream": "channels"})
            mail = await package.call_tool("count_records", {"stream": "threads"})
            both = await package.call_tool("count_records", {"stream": "messages"})
    assert listed == [*TOOL_NAMES, "count_records"]
    assert counted.is_error is False
    assert text_of(counted).startswith("count_records(messages): {")  # its own renderer
    assert counted.structured_content is not None
    assert "data" in counted.structured_content
    assert refused.is_error
    assert "invalid_arguments" in text_of(refused)
    assert unknown.is_error
    assert "limit" in text_of(unknown)
    # Routed for a package: a stream one member grants goes to that member alone (the other
    # member's grant would refuse it), and one both grant is an ambiguity naming both.
    assert chat.is_error is False, text_of(chat)
    assert mail.is_error is False, text_of(mail)
    assert both.is_error
    assert "ambiguous_connection" in text_of(both)
    assert "cin_mail_work" in text_of(both)
    assert "cin_slack_acme" in text_of(both)


async def test_a_seventh_tool_is_served_by_the_stdio_doors_server(sandbox: Any) -> None:
    async with RsClient(sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(sandbox.tokens["client_broad"]), sandbox.url)
        server = build_server(lambda _ctx: context, registry=SEVEN, pipeline=build_pipeline(SEVEN))
        async with Client(server, mode="legacy", cache=None) as client:  # type: ignore[arg-type]
            listed = [tool.name for tool in (await client.list_tools()).tools]
            counted = await client.call_tool("count_records", {"stream": "threads"})
    assert listed[-1] == "count_records"
    assert counted.is_error is False
    assert text_of(counted).startswith("count_records(threads): {")
