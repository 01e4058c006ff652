"""The tools, each one record: what the model sees, how its arguments are checked, how it
reads the RS, how its text is written and how a package routes it.

Contract:

- ``Tool(spec, checks, parse, handler, render, route)``: ``spec`` (``tools/specs.ToolSpec``:
  name, description, input and output schemas, the one line people read), ``checks`` (its
  ladder; the registry puts the input schema's size caps first), ``parse`` (the accepted
  arguments as the tool's typed value, ``tools/args``, made once by validation and read by
  the fan-out and the handler as ``call.parsed``), ``handler`` (the RS
  reads; the pipeline's terminal), ``render`` (the model-visible text) and ``route`` (how a
  package caller's call reaches its members, ``package.PackageRoute``), and optionally
  ``shape`` (a success's wire shape, applied above the fan-out).
- ``Registry(tools)`` derives every table a door or stage needs from the records: the
  names in order, the specs, the input schemas, check ladders and parsers
  (``mcp_gateway_middleware.ValidateArguments``), the renderers (``RenderContent``), the routes
  with the parsers (``package.fan_out_stage``) and ``dispatch`` (the pipeline's terminal). The pipeline
  (``build_pipeline``), the MCP server (``build_server``) and the hosted door take a
  registry; ``REGISTRY`` is the gateway's six tools.
- A seventh tool is one record here (its spec, ladder, parser, handler and renderer where
  they belong); ``tests/tools/test_seventh_tool.py`` registers one in a test registry and sees
  it listed, validated, routed for a package, rendered and answered on both doors.
- ``specs.TOOL_NAMES`` stays a plain tuple for the parts that must start without the
  pipeline (the stdio door's early answers, the command line); a test holds it equal to
  ``REGISTRY.names``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from mcp_gateway_middleware import Check, Parser, Renderer, ToolResult

from pdpp_gateway.context import Call, GatewayContext
from pdpp_gateway.package.fan_out import PackageRoute
from pdpp_gateway.render import (
    render_aggregate,
    render_fetch,
    render_field_window,
    render_records,
    render_schema,
    render_search,
)
from pdpp_gateway.tools import args, checks, handlers, specs
from pdpp_gateway.tools.handlers import ToolHandler
from pdpp_gateway.tools.specs import JSONObject, ToolSpec

Shape = Callable[[Call, ToolResult], ToolResult]


@dataclass(frozen=True, slots=True)
class Tool:
    spec: ToolSpec
    checks: tuple[Check, ...]
    parse: Parser
    handler: ToolHandler
    render: Renderer[GatewayContext]
    route: PackageRoute
    shape: Shape | None = None  # a success's wire shape, applied above the fan-out

    @property
    def name(self) -> str:
        return self.spec.name


class Registry:
    """Every table the doors and stages use, derived from the tools' records."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools: tuple[Tool, ...] = tuple(tools)
        self.by_name: Mapping[str, Tool] = {tool.name: tool for tool in self.tools}
        if len(self.by_name) != len(self.tools):
            raise ValueError("two tools share a name")
        self.names: tuple[str, ...] = tuple(self.by_name)
        self.specs: tuple[ToolSpec, ...] = tuple(tool.spec for tool in self.tools)
        self.input_schemas: Mapping[str, JSONObject] = {t.name: t.spec.input_schema for t in self.tools}
        self.checks: Mapping[str, tuple[Check, ...]] = {
            t.name: (checks.check_sizes(t.spec.input_schema), *t.checks) for t in self.tools
        }
        self.parsers: Mapping[str, Parser] = {t.name: t.parse for t in self.tools}
        self.renderers: Mapping[str, Renderer[GatewayContext]] = {t.name: t.render for t in self.tools}
        self.routes: Mapping[str, PackageRoute] = {t.name: t.route for t in self.tools}
        self.shapers: Mapping[str, Shape] = {t.name: t.shape for t in self.tools if t.shape is not None}

    async def dispatch(self, call: Call) -> ToolResult:
        """The pipeline's terminal: run the named tool's handler."""
        return await self.by_name[call.name].handler(call)


REGISTRY: Final = Registry(
    [
        Tool(
            specs.SCHEMA,
            checks.SCHEMA_CHECKS,
            args.parse_schema,
            handlers.schema,
            render_schema,
            PackageRoute.SCHEMA,
            shape=handlers.shape_schema,
        ),
        Tool(
            specs.QUERY_RECORDS,
            checks.QUERY_RECORDS_CHECKS,
            args.parse_query_records,
            handlers.query_records,
            render_records,
            PackageRoute.STREAM,
        ),
        Tool(
            specs.AGGREGATE,
            checks.AGGREGATE_CHECKS,
            args.parse_aggregate,
            handlers.aggregate,
            render_aggregate,
            PackageRoute.STREAM,
        ),
        Tool(
            specs.SEARCH,
            checks.SEARCH_CHECKS,
            args.parse_search,
            handlers.search,
            render_search,
            PackageRoute.SEARCH,
        ),
        Tool(
            specs.FETCH,
            checks.FETCH_CHECKS,
            args.parse_fetch,
            handlers.fetch,
            render_fetch,
            PackageRoute.HANDLE,
        ),
        Tool(
            specs.READ_RECORD_FIELD,
            checks.READ_RECORD_FIELD_CHECKS,
            args.parse_read_record_field,
            handlers.read_record_field,
            render_field_window,
            PackageRoute.HANDLE,
        ),
    ]
)
