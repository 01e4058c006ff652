"""Reusable, gateway-agnostic building blocks for an MCP tool pipeline and its HTTP door.

``compose()`` chains stages of the shape ``(call, next_) -> ToolResult`` around a
terminal handler; it is generic in the request and response types, so the same function
chains any ``(request, next_) -> response`` stages (aiohttp ones included). The stock
tool stages are argument validation, error preservation, content rendering, token-kind
refusal and fan-out/merge. The HTTP stages are aiohttp middlewares in their own modules,
imported explicitly so that this package never loads aiohttp: ``middleware.http`` (the
bearer check, token-kind refusal, request shape checks) and ``middleware.ratelimit``
(per-caller limits; ``ratelimit_redis`` shares them; ``outage`` says once when a shared
store is down and the stage carries on without it). Nothing here knows about PDPP:
the gateway parameterises each stage with what it needs (``tests/middleware/
example_gateway.py`` is a gateway built from every one of them).
"""

from middleware.errors import PreserveErrors, ToolError, echo, gateway_error
from middleware.fanout import Deadline, FanOut, Outcome
from middleware.pipeline import JSONObject, Middleware, Next, ToolCall, ToolResult, compose
from middleware.rendering import RenderContent, Renderer
from middleware.token_kinds import RefuseTokenKinds
from middleware.validation import Check, Parser, ValidateArguments

__all__ = [
    "Check",
    "Deadline",
    "FanOut",
    "JSONObject",
    "Middleware",
    "Next",
    "Outcome",
    "Parser",
    "PreserveErrors",
    "RefuseTokenKinds",
    "RenderContent",
    "Renderer",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ValidateArguments",
    "compose",
    "echo",
    "gateway_error",
]
