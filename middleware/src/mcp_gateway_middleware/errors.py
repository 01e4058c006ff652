"""Typed errors a tool call can end in, and the stage that turns them into results.

Contract:

- ``ToolError`` is an error meant for the caller. It carries an error envelope in the
  shape resource servers use (``{"type", "code", "message", "param"?, ...}``), kept whole:
  extra members such as ``available_connections`` or ``retry_with`` survive untouched.
- ``PreserveErrors`` catches ``ToolError`` anywhere below it and answers an ``isError``
  result whose ``structured["error"]`` is that envelope, plus any ``extra`` facts
  (e.g. ``http_status``). Its ``text`` stays unset: ``RenderContent``, above it, writes it.
- Any other exception is a defect: it is logged with its traceback (server side only)
  and answered with the ``internal_error`` envelope (``PreserveErrors(internal_error=...)``
  plugs a gateway's own; the default, ``INTERNAL_ERROR``, names no internals and no
  product). The caller never sees a traceback.
- ``echo(value)`` quotes a caller's value in a refusal, bounded to ``ECHO_CHARS``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, ClassVar, Final, Generic

from mcp_gateway_middleware.pipeline import C, JSONObject, Next, Role, ToolCall, ToolResult

__all__ = ["ECHO_CHARS", "INTERNAL_ERROR", "PreserveErrors", "ToolError", "echo", "gateway_error"]

_log = logging.getLogger(__name__)


class ToolError(Exception):
    """An error the caller should see as an ``isError`` tool result."""

    def __init__(self, envelope: Mapping[str, Any], **extra: Any) -> None:
        self.envelope: JSONObject = dict(envelope)
        self.extra: JSONObject = extra
        super().__init__(f"{self.envelope.get('code', 'error')}: {self.envelope.get('message', '')}")

    def with_extra(self, **facts: Any) -> ToolError:
        """This error with more facts beside its envelope (``http_status``, ``upstream``)."""
        self.extra.update(facts)
        return self

    @property
    def code(self) -> str:
        return str(self.envelope.get("code", "error"))


ECHO_CHARS: Final = 60


def echo(value: Any, limit: int = ECHO_CHARS) -> str:
    """``repr(value)`` for a refusal message, at most ``limit`` characters (a caller's
    value is quoted so they can find it, never copied back whole)."""
    text = repr(value)
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, str) else len(text)  # the value's own length, not its quoted form
    return f"{text[: limit - 1]}… ({size} characters)"


def gateway_error(
    code: str,
    message: str,
    *,
    param: str | None = None,
    type_: str = "invalid_request_error",
    **members: Any,
) -> ToolError:
    """A ``ToolError`` raised by the gateway itself (not relayed from upstream)."""
    envelope: JSONObject = {"type": type_, "code": code, "message": message}
    if param is not None:
        envelope["param"] = param
    envelope.update(members)
    return ToolError(envelope)


INTERNAL_ERROR: Final[Mapping[str, str]] = {
    "type": "api_error",
    "code": "internal_error",
    # What happened only: the next step is the renderer's to say, once.
    "message": "The gateway failed while handling this call (a fault of its own, not of the upstream).",
}


class PreserveErrors(Generic[C]):
    """Stage: turn ``ToolError`` into an ``isError`` result; contain everything else (its
    text is the rendering stage's: ``RenderContent``)."""

    role: ClassVar[Role] = Role.PRESERVE

    def __init__(self, *, internal_error: Mapping[str, Any] = INTERNAL_ERROR) -> None:
        self._internal_error = dict(internal_error)

    async def __call__(self, call: ToolCall[C], next_: Next[C]) -> ToolResult:
        try:
            return await next_(call)
        except ToolError as exc:
            result = ToolResult(structured={"error": exc.envelope, **exc.extra}, is_error=True)
        except Exception:
            _log.exception("tool %s failed unexpectedly", call.name)
            result = ToolResult(structured={"error": dict(self._internal_error)}, is_error=True)
        return result
