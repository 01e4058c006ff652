"""The tools, each one record: what the model sees, how its arguments are checked and
parsed, how it reads the RS, how its text is written and how a package routes it.

Contract:

- ``Tool(spec, checks, parse, handler, render, route)``: ``spec`` (``tools/specs.ToolSpec``:
  name, description, input and output schemas, the one line people read), ``checks`` (its
  ladder; the registry puts the input schema's size caps first), ``parse`` (the accepted
  arguments as the tool's own typed value ``A``, ``tools/args``, made once by validation),
  ``handler`` (the RS reads, ``(context, A)``; the pipeline's terminal), ``render`` (the
  model-visible text, ``(A, result)``) and ``route`` (how a package caller's call reaches
  its members, ``package.PackageRoute``), and optionally ``shape`` (a success's wire
  shape, ``(A, result)``, applied above the fan-out).
- ``Tool`` is generic in ``A``: mypy infers it from the record's parser and holds the
  handler, renderer and shape to it, so a record pairing one tool's parser with another's
  handler or renderer does not type-check. ``A`` says where the call reads
  (``args.Reads``: ``stream``, ``connection_id``), which the package fan-out routes by.
- ``Registry(tools)`` derives every table a door or stage needs from the records: the
  names in order, the specs, the input schemas, check ladders and parsers
  (``mcp_gateway_middleware.ValidateArguments``), the renderers (``RenderContent``), the
  shapes, the routes with the parsers (``package.fan_out_stage``) and ``dispatch`` (the
  pipeline's terminal). The middleware's stages see ``call.parsed`` as any value; the
  record's ``args_of`` gives it back as ``A``: validation made it with this record's
  parser, the registry's own table, so the one narrowing is sound by construction (a call
  that skipped validation carries none, a defect named as such). The pipeline
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

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar, cast

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
from pdpp_gateway.retrieval.search import search
from pdpp_gateway.tools import args, checks, handlers, specs
from pdpp_gateway.tools.args import Reads
from pdpp_gateway.tools.specs import JSONObject, ToolSpec

A = TypeVar("A", bound=Reads)
Shape = Callable[[Call, ToolResult], ToolResult]


@dataclass(frozen=True, slots=True)
class Tool(Generic[A]):
    spec: ToolSpec
    checks: tuple[Check, ...]
    parse: Callable[[Mapping[str, Any]], A]
    handler: Callable[[GatewayContext, A], Awaitable[ToolResult]]
    render: Callable[[A, ToolResult], str]
    route: PackageRoute
    shape: Callable[[A, ToolResult], ToolResult] | None = None  # applied above the fan-out

    @property
    def name(self) -> str:
        return self.spec.name

    def args_of(self, call: Call) -> A:
        """``call``'s parsed arguments: this record's parser made them (see the contract)."""
        if call.parsed is None:
            raise TypeError(f"{call.name} arrived without its parsed arguments")
        return cast(A, call.parsed)

    def run(self, call: Call) -> Awaitable[ToolResult]:
        return self.handler(call.context, self.args_of(call))

    def render_call(self, call: Call, result: ToolResult) -> str:
        return self.render(self.args_of(call), result)

    def shape_call(self, call: Call, result: ToolResult) -> ToolResult:
        assert self.shape is not None, "only a record with a shape is in Registry.shapers"
        return self.shape(self.args_of(call), result)


class Registry:
    """Every table the doors and stages use, derived from the tools' records."""

    def __init__(self, tools: Sequence[Tool[Any]]) -> None:
        self.tools: tuple[Tool[Any], ...] = tuple(tools)
        self.by_name: Mapping[str, Tool[Any]] = {tool.name: tool for tool in self.tools}
        if len(self.by_name) != len(self.tools):
            raise ValueError("two tools share a name")
        self.names: tuple[str, ...] = tuple(self.by_name)
        self.specs: tuple[ToolSpec, ...] = tuple(tool.spec for tool in self.tools)
        self.input_schemas: Mapping[str, JSONObject] = {t.name: t.spec.input_schema for t in self.tools}
        self.checks: Mapping[str, tuple[Check, ...]] = {
            t.name: (checks.check_sizes(t.spec.input_schema), *t.checks) for t in self.tools
        }
        self.parsers: Mapping[str, Parser] = {t.name: t.parse for t in self.tools}
        self.renderers: Mapping[str, Renderer[GatewayContext]] = {t.name: t.render_call for t in self.tools}
        self.routes: Mapping[str, PackageRoute] = {t.name: t.route for t in self.tools}
        self.shapers: Mapping[str, Shape] = {t.name: t.shape_call for t in self.tools if t.shape is not None}

    def dispatch(self, call: Call) -> Awaitable[ToolResult]:
        """The pipeline's terminal: run the named tool's handler."""
        return self.by_name[call.name].run(call)


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
            search,
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
