"""The MCP server object shared by both front doors (stdio and hosted HTTP).

Contract: ``build_server`` returns one low-level ``mcp.server.Server`` with the six
read tools (``tools/list`` and ``tools/call`` are the library's MCP binding,
``mcp_gateway_middleware.sdk.tool_handlers``), the ``pdpp://`` resources and the instructions. Each request's
``GatewayContext`` (whose RS client is bound to the caller's own token) comes from
``context_for(ctx)``, supplied by the front door: stdio has one caller, the hosted door
one per HTTP request. Tool calls run through the process's one pipeline (built here
unless the door passes it); an unknown
tool name is a protocol error (``-32602``), everything else is a tool result. A success
result's ``structuredContent`` conforms to the tool's ``outputSchema``; an ``isError``
result carries none (its typed error is the text: ``Error <code> ...``, the next step,
``param``), because strict clients validate error results against that schema too; an
error worth retrying later says when in ``_meta["dev.pdpp/retry_after_seconds"]``.
"""

from __future__ import annotations

from collections.abc import Callable

import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp_gateway_middleware import ToolResult
from mcp_gateway_middleware.sdk import call_tool_result as sdk_result
from mcp_gateway_middleware.sdk import tool_handlers
from mcp_gateway_middleware.specs import ToolSpec
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from pdpp_gateway import __version__
from pdpp_gateway.context import CallNext, GatewayContext
from pdpp_gateway.instructions import INSTRUCTIONS
from pdpp_gateway.resources import handlers as resources
from pdpp_gateway.tools.pipeline import build_pipeline
from pdpp_gateway.tools.registry import REGISTRY, Registry
from pdpp_gateway.tools.specs import ANNOTATIONS
from pdpp_gateway.wire.call_result import RETRY_AFTER_META, retry_after

ContextFactory = Callable[[ServerRequestContext], GatewayContext]
DEFAULT_SERVER_NAME = "pdpp-gateway"


def tool_specs(registry: Registry) -> list[ToolSpec]:
    """``registry``'s tools as the library's binding lists them (every tool reads one RS, read-only)."""
    return [
        ToolSpec(
            spec.name,
            spec.description,
            spec.input_schema,
            spec.output_schema,
            title=spec.title,
            annotations=ANNOTATIONS,
        )
        for spec in registry.specs
    ]


def call_tool_result(result: ToolResult) -> types.CallToolResult:
    """The pipeline's result as the MCP ``CallToolResult`` (the library binding's, with this
    gateway's retry hint; the fast paths write the same answer without this model:
    ``wire.call_result.result_wire``). An error travels as its rendered text (code, step,
    param) only: clients that check structured output against the tool's outputSchema (the
    TypeScript SDK 1.x, the MCP Inspector) check error results too."""
    wait = retry_after(result)
    meta = {RETRY_AFTER_META: wait} if wait is not None else None
    return sdk_result(result, meta=meta, unrendered=lambda result: "")  # as the fast paths write it


def build_server(
    context_for: ContextFactory,
    *,
    name: str = DEFAULT_SERVER_NAME,
    icons: list[types.Icon] | None = None,
    registry: Registry = REGISTRY,
    pipeline: CallNext | None = None,
) -> Server:
    """One MCP server: ``registry``'s tools, resources, instructions. Pass the process's
    ``pipeline`` (built for the same registry) when it serves several servers (the hosted
    door has one per public origin)."""
    pipeline = pipeline or build_pipeline(registry)
    tools = tool_handlers(tool_specs(registry), pipeline, context_for, result_of=call_tool_result)

    async def list_resources(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=await resources.list_stream_resources(context_for(ctx)))

    async def list_resource_templates(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=list(resources.TEMPLATES))

    async def read_resource(
        ctx: ServerRequestContext, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        return await resources.read(context_for(ctx), str(params.uri), modern=modern)

    server: Server = Server(
        name,
        version=__version__,
        title="PDPP gateway",
        description="Grant-scoped, read-only access to a PDPP resource server.",
        instructions=INSTRUCTIONS,
        icons=icons,
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_resource_templates,
        on_read_resource=read_resource,
    )
    # The SDK's only default middleware opens an OpenTelemetry span per request, at a cost
    # even with no exporter. The gateway opens its own spans (``observe.tracing``: off and
    # free unless an operator turns it on), and the hosted fast path answers without the SDK
    # only for a server with no middleware (``FastToolCall.enabled``).
    server.middleware.clear()
    return server
