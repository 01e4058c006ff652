"""The MCP binding: a pipeline and its tool specs served by the MCP SDK, over stdio or HTTP.

Contract (extra ``mcp``, the MCP Python SDK 2.x; import this module explicitly):

- ``tool_handlers(specs, pipeline, context_for)``: the ``on_list_tools`` and ``on_call_tool``
  handlers of an SDK ``Server``. ``tools/list`` lists ``specs`` (``sdk_tool``); ``tools/call``
  runs ``pipeline(ToolCall(name, arguments, context_for(ctx)))``; an unknown tool name is a
  protocol error (``-32602``) naming the tools. ``context_for(ctx)`` builds the call's context
  from the SDK's request context: the accepted caller is ``ctx.request[key]`` on aiohttp,
  ``asgi.accepted(ctx.request)`` on ASGI; ``ctx.request`` is ``None`` over stdio.
- ``call_tool_result(result, meta=None, unrendered=None)``: a ``ToolResult`` as the SDK's
  ``CallToolResult``: its text as the one text content (when no stage rendered any,
  ``unrendered(result)``, by default ``fallback_text``: the structured content as compact JSON,
  or an error's ``"<code>: <message>"``) and, for a success, ``structured`` as
  ``structuredContent``. An error carries no ``structuredContent``: clients that check it
  against the tool's ``outputSchema`` (the TypeScript SDK) check error results too.
- ``build_server(name, version, specs, pipeline, context_for, **options)``: a low-level
  ``Server`` with those handlers (``options``: ``instructions``, ``title``, ``icons``, ...).
- ``serve_stdio(server)``: serve it over stdio until the client closes stdin and every request
  read before that is answered (``sdk_stdio.run_stdio``; stray prints go to stderr, never onto
  the wire).
- ``asgi_app(server, path="/mcp", authenticate=..., limiter=..., ...)``: the SDK's Streamable
  HTTP app (stateless, JSON answers) behind ``asgi.McpDoor``, whose refusals reach an SDK
  client as JSON-RPC errors. On aiohttp, ``sdk_aiohttp.mcp_app`` serves the same server.
"""

from __future__ import annotations

try:
    import mcp  # noqa: F401 - only to say which extra is missing, plainly
except ModuleNotFoundError as missing:  # test_installs_alone reads this message
    raise ModuleNotFoundError(
        "mcp_gateway_middleware.sdk needs the MCP SDK: pip install 'mcp-gateway-middleware[mcp]'"
    ) from missing

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import mcp.types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from mcp_gateway_middleware.asgi import AsgiApp, Authenticate, McpDoor
from mcp_gateway_middleware.doors import MAX_BODY_BYTES
from mcp_gateway_middleware.pipeline import Next, ToolCall, ToolResult
from mcp_gateway_middleware.ratelimit import Limiter
from mcp_gateway_middleware.sdk_stdio import run_stdio
from mcp_gateway_middleware.specs import ToolSpec

__all__ = [
    "ToolHandlers",
    "asgi_app",
    "build_server",
    "call_tool_result",
    "fallback_text",
    "sdk_tool",
    "serve_stdio",
    "tool_handlers",
]

ContextFor = Callable[[ServerRequestContext], Any]


def sdk_tool(spec: ToolSpec) -> types.Tool:
    """``spec`` as the SDK lists it."""
    annotations = types.ToolAnnotations.model_validate(spec.annotations) if spec.annotations else None
    return types.Tool(
        name=spec.name,
        title=spec.title,
        description=spec.description,
        input_schema=spec.input_schema,
        output_schema=spec.output_schema,
        annotations=annotations,
    )


def call_tool_result(
    result: ToolResult,
    *,
    meta: Mapping[str, Any] | None = None,
    unrendered: Callable[[ToolResult], str] | None = None,
) -> types.CallToolResult:
    """The pipeline's result as the SDK's ``CallToolResult`` (module contract); ``unrendered``
    words a result no stage gave text (default: ``fallback_text``)."""
    text = result.text if result.text is not None else (unrendered or fallback_text)(result)
    return types.CallToolResult(
        _meta=dict(meta) if meta else None,
        content=[types.TextContent(type="text", text=text)],
        structured_content=None if result.is_error else result.structured,
        is_error=result.is_error,
    )


def fallback_text(result: ToolResult) -> str:
    """The text of a result no stage rendered: an error's ``<code>: <message>``, else the
    structured content as compact JSON (what the MCP spec suggests for structured results)."""
    error = result.structured.get("error") if result.is_error else None
    if isinstance(error, dict):
        return f"{error.get('code', 'error')}: {error.get('message', '')}"
    return json.dumps(result.structured, separators=(",", ":"), default=str)


@dataclass(frozen=True, slots=True)
class ToolHandlers:
    list_tools: Callable[[ServerRequestContext, types.PaginatedRequestParams | None], Any]
    call_tool: Callable[[ServerRequestContext, types.CallToolRequestParams], Any]


def tool_handlers(
    specs: Iterable[ToolSpec],
    pipeline: Next[Any],
    context_for: ContextFor,
    *,
    result_of: Callable[[ToolResult], types.CallToolResult] = call_tool_result,
) -> ToolHandlers:
    """``tools/list`` and ``tools/call`` over ``pipeline`` (module contract)."""
    listed = [sdk_tool(spec) for spec in specs]
    names = [tool.name for tool in listed]
    known = frozenset(names)

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(listed))

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name not in known:
            raise MCPError(
                types.INVALID_PARAMS, f"Unknown tool {params.name!r}; available tools: {', '.join(names)}."
            )
        return result_of(await pipeline(ToolCall(params.name, params.arguments or {}, context_for(ctx))))

    return ToolHandlers(list_tools, call_tool)


def build_server(
    name: str,
    version: str,
    specs: Iterable[ToolSpec],
    pipeline: Next[Any],
    context_for: ContextFor,
    **options: Any,
) -> Server[Any]:
    """A low-level SDK ``Server`` serving ``specs`` through ``pipeline`` (module contract)."""
    tools = tool_handlers(specs, pipeline, context_for)
    return Server(
        name, version=version, on_list_tools=tools.list_tools, on_call_tool=tools.call_tool, **options
    )


def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` on this process's stdin and stdout until stdin closes and every request
    read has its answer (``sdk_stdio.run_stdio``)."""
    anyio.run(run_stdio, server)


def asgi_app(
    server: Server[Any],
    *,
    path: str = "/mcp",
    host: str = "127.0.0.1",
    authenticate: Authenticate | None = None,
    limiter: Limiter | None = None,
    caller_key: Callable[[Any], str | None] = str,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> AsgiApp:
    """The SDK's Streamable HTTP app for ``server`` behind the door (module contract); ``host``
    is where it is served (a loopback host turns on the SDK's DNS-rebinding checks)."""
    app = server.streamable_http_app(
        streamable_http_path=path,
        stateless_http=True,
        json_response=True,
        host=host,
        max_request_body_size=max_body_bytes,
    )
    return McpDoor(
        app,
        max_body_bytes=max_body_bytes,
        authenticate=authenticate,
        limiter=limiter,
        caller_key=caller_key,
        methods=frozenset({"POST"}),  # stateless: no event stream (the SDK's would hang open), no session
    )
