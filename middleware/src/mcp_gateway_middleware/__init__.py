"""Reusable, gateway-agnostic building blocks for an MCP tool pipeline and its HTTP door.

``compose()`` chains stages of the shape ``(call, next_) -> ToolResult`` around a
terminal handler; it is generic in the request and response types, so the same function
chains any ``(request, next_) -> response`` stages (aiohttp ones included). The stock
tool stages are argument validation, error preservation, content rendering, token-kind
refusal and fan-out/merge. The HTTP stages are aiohttp middlewares in their own modules,
imported explicitly so that this package never loads aiohttp: ``mcp_gateway_middleware.http`` (the
bearer check, token-kind refusal, request shape checks) and ``mcp_gateway_middleware.ratelimit``
(per-caller limits; ``ratelimit_redis`` shares them; ``outage`` says once when a shared
store is down and the stage carries on without it). Nothing here knows about PDPP:
the gateway parameterises each stage with what it needs (``examples/`` inside this package holds gateways built from them).
"""

from mcp_gateway_middleware.call_limits import LimitCalls
from mcp_gateway_middleware.errors import PreserveErrors, ToolError, echo, gateway_error
from mcp_gateway_middleware.fanout import Deadline, FanOut, Outcome
from mcp_gateway_middleware.pipeline import (
    JSONObject,
    Middleware,
    Next,
    PipelineOrderError,
    Role,
    ToolCall,
    ToolResult,
    compose,
)
from mcp_gateway_middleware.rendering import RenderContent, Renderer
from mcp_gateway_middleware.token_kinds import RefuseTokenKinds
from mcp_gateway_middleware.validation import Check, Parser, ValidateArguments

__version__ = "0.2.0+repo"  # the distribution's version (pyproject reads it from here)

__all__ = [
    "Check",
    "Deadline",
    "FanOut",
    "JSONObject",
    "LimitCalls",
    "Middleware",
    "Next",
    "Outcome",
    "Parser",
    "PipelineOrderError",
    "PreserveErrors",
    "RefuseTokenKinds",
    "RenderContent",
    "Renderer",
    "Role",
    "ToolCall",
    "ToolError",
    "ToolResult",
    "ValidateArguments",
    "__version__",
    "compose",
    "echo",
    "gateway_error",
]
