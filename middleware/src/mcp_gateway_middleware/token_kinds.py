"""Token-kind refusal: some credential kinds must never reach the tools.

Contract: ``RefuseTokenKinds(kind_of, refused, error)`` asks ``kind_of(call)`` for the
caller's credential kind and raises ``error(kind)`` (a ``ToolError``) for a refused
kind, before any stage below runs. An unknown kind (``None``) is refused too when
``refuse_unknown`` is set, so a gateway fails closed on credentials it cannot classify.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import ClassVar, Generic

from mcp_gateway_middleware.errors import ToolError
from mcp_gateway_middleware.pipeline import C, Next, Role, ToolCall, ToolResult

__all__ = ["RefuseTokenKinds"]


class RefuseTokenKinds(Generic[C]):
    """Stage: stop calls made with a refused credential kind."""

    role: ClassVar[Role] = Role.REFUSE_KINDS

    def __init__(
        self,
        kind_of: Callable[[ToolCall[C]], str | None],
        refused: Iterable[str],
        error: Callable[[str | None], ToolError],
        *,
        refuse_unknown: bool = True,
    ) -> None:
        self._kind_of = kind_of
        self._refused = frozenset(refused)
        self._error = error
        self._refuse_unknown = refuse_unknown

    async def __call__(self, call: ToolCall[C], next_: Next[C]) -> ToolResult:
        kind = self._kind_of(call)
        if kind in self._refused or (kind is None and self._refuse_unknown):
            raise self._error(kind)
        return await next_(call)
