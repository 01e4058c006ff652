"""The tool pipeline, assembled once at start-up from the stock ``middleware`` stages.

Order, outermost first:

1. ``RenderContent``     every result leaves with bounded model-visible text;
2. ``PreserveErrors``    typed errors become ``isError`` results, envelope intact;
3. ``ValidateArguments`` the PDPP check ladder, then the JSON Schema: nothing bad
                         reaches the RS;
4. ``shape_schema``      schema results leave in their wire shape: the global index
                         bounded (``schema_view.bound_index``; the unbounded index stays
                         in ``annotations["schema_index"]`` so the text can still name
                         every stream), the flag legend beside a stream view's document;
                         above the fan-out, so merged package schemas get the same;
5. ``FanOut``            package callers: route to one child grant or fan out and merge
                         (a pass-through for single-grant callers);
6. extra stages;
7. ``upstream_errors``   an RS failure (the plain ``rs.errors`` tree) becomes its
                         ``ToolError`` (``render.upstream.tool_error``, the one place it is
                         worded); below ``FanOut``, so a failed package member is a
                         ``ToolError`` outcome when the fan-out merges;
8. the handler that calls the RS.

Whether the caller may read at all is not a stage: a context exists only for a caller
``caller.authenticate`` accepted at the door (an owner token never gets this far).
"""

from __future__ import annotations

from middleware import (
    PreserveErrors,
    RenderContent,
    ToolResult,
    ValidateArguments,
    compose,
)
from pdpp_gateway import schema_view, tracing
from pdpp_gateway.context import Call, CallNext, Stage
from pdpp_gateway.package import fan_out_stage
from pdpp_gateway.render import RENDERERS, render_error
from pdpp_gateway.render.upstream import tool_error
from pdpp_gateway.rs.errors import RsError
from pdpp_gateway.tools.checks import CHECKS
from pdpp_gateway.tools.handlers import dispatch
from pdpp_gateway.tools.specs import INPUT_SCHEMAS


async def shape_schema(call: Call, next_: CallNext) -> ToolResult:
    """Stage: bound the global schema index; put the flag legend beside a compact stream view."""
    result = await next_(call)
    if call.name != "schema" or result.is_error or call.arguments.get("detail") == "full":
        return result
    data = result.structured.get("data")
    if not isinstance(data, dict):
        return result
    if "stream" in call.arguments:
        result.structured["field_capability_legend"] = schema_view.LEGEND
    else:
        result.annotations[schema_view.INDEX_ANNOTATION] = data
        result.structured["data"] = schema_view.bound_index(data)
    return result


async def upstream_errors(call: Call, next_: CallNext) -> ToolResult:
    """Stage: raise an RS failure as the ``ToolError`` it becomes on the wire."""
    try:
        return await next_(call)
    except RsError as error:
        raise tool_error(error) from None


def build_pipeline(*, ready: bool = False) -> CallNext:
    """The full chain around the RS-calling handlers; ``ready``: everything a refusal
    needs is loaded now (a server process, before it serves), not on the first refusal."""
    stages: list[Stage] = [
        RenderContent(RENDERERS, render_error),
        PreserveErrors(),
        ValidateArguments(INPUT_SCHEMAS, CHECKS, compile_now=ready),
        shape_schema,
        fan_out_stage(),
        upstream_errors,
    ]
    # With tracing on (``tracing.start_tracing``), a span for the call and one for each stage
    # that does work of its own (None: a pass-through that would only add spans).
    labels = ["render", None, "validation", None, "fan-out", "upstream"]
    return compose(tracing.traced_stages(stages, labels), dispatch)
