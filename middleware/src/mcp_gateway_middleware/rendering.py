"""Content rendering: every result leaves the pipeline with model-visible text.

Contract:

- ``RenderContent(renderers, error_renderer=error_text)`` calls the inner stages, then, when
  the result has no ``text`` yet, fills it: ``error_renderer`` for ``is_error`` results
  (by default ``error_text``: ``"Error <code>: <message>"``), ``renderers[call.name]`` otherwise. A tool with no renderer gets a compact one-line
  fallback, never a dump of the structured payload.
- Renderers are pure ``(call, result) -> str`` functions; keeping text bounded is
  their job.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import ClassVar, Generic

from mcp_gateway_middleware.pipeline import C, Next, Role, ToolCall, ToolResult

__all__ = ["RenderContent", "Renderer", "error_text"]

Renderer = Callable[[ToolCall[C], ToolResult], str]


def error_text(call: ToolCall[C], result: ToolResult) -> str:
    """An error result's text: ``Error <code>: <message>`` of its envelope."""
    error = result.structured.get("error")
    if not isinstance(error, dict):
        return f"Error: {call.name} failed."
    return f"Error {error.get('code', 'error')}: {error.get('message', '')}"


class RenderContent(Generic[C]):
    """Stage: fill ``ToolResult.text`` from ``structured``."""

    role: ClassVar[Role] = Role.RENDER

    def __init__(
        self, renderers: Mapping[str, Renderer[C]], error_renderer: Renderer[C] = error_text
    ) -> None:
        self._renderers = dict(renderers)
        self._error_renderer = error_renderer

    async def __call__(self, call: ToolCall[C], next_: Next[C]) -> ToolResult:
        result = await next_(call)
        if result.text is None:
            result.text = self.render(call, result)
        return result

    def render(self, call: ToolCall[C], result: ToolResult) -> str:
        if result.is_error:
            return self._error_renderer(call, result)
        renderer = self._renderers.get(call.name)
        if renderer is None:
            return f"{call.name}: done ({len(result.structured)} structured member(s))."
        return renderer(call, result)
