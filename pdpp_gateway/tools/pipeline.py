"""The tool pipeline, assembled once at start-up from the stock ``middleware`` stages.

Order, outermost first:

1. ``RenderContent``     every result leaves with bounded model-visible text;
2. ``PreserveErrors``    typed errors become ``isError`` results, envelope intact;
3. ``RefuseTokenKinds``  owner (and unclassified) credentials never reach a tool;
4. ``ValidateArguments`` the PDPP check ladder, then the JSON Schema: nothing bad
                         reaches the RS;
5. ``FanOut``            package callers: route to one child grant or fan out and merge
                         (a pass-through for single-grant callers);
6. extra stages, then the handler that calls the RS.
"""

from __future__ import annotations

from collections.abc import Sequence

from middleware import (
    Middleware,
    Next,
    PreserveErrors,
    RefuseTokenKinds,
    RenderContent,
    ToolCall,
    ToolError,
    ValidateArguments,
    compose,
)
from pdpp_gateway.context import context_of
from pdpp_gateway.package import fan_out_stage
from pdpp_gateway.render import RENDERERS, render_error
from pdpp_gateway.tools.checks import CHECKS
from pdpp_gateway.tools.handlers import dispatch
from pdpp_gateway.tools.specs import INPUT_SCHEMAS

REFUSED_TOKEN_KINDS = frozenset({"owner"})


def _token_kind(call: ToolCall) -> str | None:
    return context_of(call).token_kind


def _owner_refusal(kind: str | None) -> ToolError:
    return ToolError(
        {
            "type": "permission_error",
            "code": "permission_error",
            "message": f"This gateway serves grant-scoped client tokens only; a {kind or 'unclassified'} "
            "credential is refused. Connect with `pdpp connect <provider-url>` to get a scoped grant.",
        }
    )


def build_pipeline(extra_stages: Sequence[Middleware] = ()) -> Next:
    """The full chain around the RS-calling handlers."""
    stages: list[Middleware] = [
        RenderContent(RENDERERS, render_error),
        PreserveErrors(),
        RefuseTokenKinds(_token_kind, REFUSED_TOKEN_KINDS, _owner_refusal),
        ValidateArguments(INPUT_SCHEMAS, CHECKS),
        fan_out_stage(),
        *extra_stages,
    ]
    return compose(stages, dispatch)
