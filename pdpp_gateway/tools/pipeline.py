"""The tool pipeline, assembled once at start-up from the stock ``mcp_gateway_middleware``
stages.

Order, outermost first:

1. ``RenderContent``     every result leaves with bounded model-visible text: here, a
   ``PreserveErrors``    refusal of the arguments (no parsed arguments to name), as an
                         ``isError`` result with its envelope intact;
2. ``ValidateArguments`` the PDPP check ladder, then the JSON Schema: nothing bad
                         reaches the RS; then the tool's parser, whose typed value
                         (``tools/args``) travels down as ``call.parsed``;
3. ``RenderContent``     the same two stages for everything the accepted call ends in:
   ``PreserveErrors``    below validation, so each tool's renderer (and ``render_error``)
                         reads the call's parsed arguments, never the raw mapping;
4. ``shape_results``     a tool's successful result leaves in its wire shape (its record's
                         ``shape``: the schema tool bounds the global index, keeping the
                         whole one in ``annotations["schema_index"]`` for its text, and
                         puts the flag legend beside a stream view); above the fan-out,
                         so merged package results get the same;
5. ``FanOut``            package callers: route to one child grant or fan out and merge
                         (a pass-through for single-grant callers);
6. ``upstream_errors``   an RS failure (the plain ``rs.errors`` tree) becomes its
                         ``ToolError`` (``render.upstream.tool_error``, the one place it is
                         worded); below ``FanOut``, so a failed package member is a
                         ``ToolError`` outcome when the fan-out merges;
7. the handler that calls the RS.

Whether the caller may read at all is not a stage: ``caller.authenticate`` decides it at
the door (the hosted door before it builds a context; a local door at start-up, or, when
the RS could not be asked then, ``rs.token_kind.KindCheckedRs`` before the first read), so
an owner token never reaches a data route.
"""

from __future__ import annotations

from typing import Final

from mcp_gateway_middleware import (
    PreserveErrors,
    RenderContent,
    ToolResult,
    ValidateArguments,
    compose,
)

from pdpp_gateway.context import Call, CallNext, Stage
from pdpp_gateway.observe import tracing
from pdpp_gateway.package.fan_out import fan_out_stage
from pdpp_gateway.render import render_error
from pdpp_gateway.render.upstream import tool_error
from pdpp_gateway.rs.errors import RsError
from pdpp_gateway.tools.registry import REGISTRY, Registry

# This gateway's own next step after a refusal (the library's words name no cursor).
PAGING_HINTS: Final = {("limit", "maximum"): "Page with the returned next_cursor instead of asking for more."}


def shape_results(registry: Registry) -> Stage:
    """Stage: each tool's ``shape`` (its record's, ``Tool.shape``) applied to its successful
    results, above the fan-out, so a merged package result is shaped like any other."""
    shapers = registry.shapers

    async def stage(call: Call, next_: CallNext) -> ToolResult:
        result = await next_(call)
        shape = shapers.get(call.name)
        return result if shape is None or result.is_error else shape(call, result)

    return stage


async def upstream_errors(call: Call, next_: CallNext) -> ToolResult:
    """Stage: raise an RS failure as the ``ToolError`` it becomes on the wire."""
    try:
        return await next_(call)
    except RsError as error:
        raise tool_error(error) from None


def build_pipeline(registry: Registry = REGISTRY, *, ready: bool = False) -> CallNext:
    """The full chain around the RS-calling handlers of ``registry``'s tools; ``ready``:
    everything a refusal needs is loaded now (a server process, before it serves), not on
    the first refusal."""
    stages: list[Stage] = [
        RenderContent({}, render_error),  # a refusal of the arguments: no tool's text to write
        PreserveErrors(),
        ValidateArguments(
            registry.input_schemas,
            registry.checks,
            parsers=registry.parsers,
            compile_now=ready,
            hints=PAGING_HINTS,
        ),
        RenderContent(registry.renderers, render_error),
        PreserveErrors(),
        shape_results(registry),
        fan_out_stage(registry.routes, registry.parsers),
        upstream_errors,
    ]
    # With tracing on (``tracing.start_tracing``), a span for the call and one for each stage
    # that does work of its own (None: a pass-through that would only add spans).
    labels = [None, None, "validation", "render", None, None, "fan-out", "upstream"]
    return compose(tracing.traced_stages(stages, labels), registry.dispatch)
