"""The tool pipeline: a call flows through a chain of stages to a terminal handler.

Contract:

- A stage is any async callable ``(call, next_) -> ToolResult``. It may inspect or
  rewrite the call, short-circuit with its own result, call ``next_`` once, several
  times (fan-out) or not at all, and post-process what comes back.
- ``compose(stages, terminal)`` builds the chain once (at start-up); the first stage
  is the outermost. Calling the result runs one tool call. It is generic in the request
  and response types, so the same function chains any ``(request, next_) -> response``
  stages (a hosted door's aiohttp stages, say).
- ``ToolCall[C].context`` is whatever the gateway hands each stage (an upstream client,
  the caller's identity), typed by ``C``: a pipeline of ``Middleware[C]`` stages is
  checked by mypy end to end, and the stock stages here work for any ``C``. This package
  never imports the gateway.
- ``ToolCall.parsed`` is the tool's typed view of its arguments, made once by the
  validation stage from the arguments it accepted (``ValidateArguments(parsers=...)``) and
  read by every stage below instead of the raw mapping; ``None`` above that stage, or for a
  tool without a parser. A stage that changes the arguments hands down their new parse
  with them (``with_arguments(arguments, parsed)``): the two never disagree.
- A ``ToolResult`` carries ``structured`` (the JSON object for ``structuredContent``)
  and ``text`` (the model-visible ``content[]`` text). A stage that renders text fills
  ``text``; a result that reaches the transport with ``text`` unset is a defect.
- Each stock stage names its place in the canonical order (``Role``, a class attribute
  ``role``; the README gives the order and why). ``compose`` checks the stages that name one
  and raises ``PipelineOrderError`` (naming the two stages and the order to use) when a
  ``RenderContent`` is below a ``PreserveErrors`` that has none above it (the error results
  that stage makes would leave with no text; with no ``RenderContent`` at all, the transport
  words them), when a pipeline that has a ``PreserveErrors`` puts a refusing stage above every one
  of them (its refusal would escape as an exception), or when two refusing stages are out of
  order. ``RenderContent`` and ``PreserveErrors`` may repeat (a pair above validation and one
  below it); stages that name no role (functions, aiohttp middlewares) are not checked.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, Final, Generic, Protocol, TypeVar

__all__ = [
    "C",
    "JSONObject",
    "Middleware",
    "Next",
    "PipelineOrderError",
    "Role",
    "ToolCall",
    "ToolResult",
    "compose",
]

JSONObject = dict[str, Any]
In = TypeVar("In")
Out = TypeVar("Out")
C = TypeVar("C")


@dataclass(frozen=True, slots=True)
class ToolCall(Generic[C]):
    """One tool invocation as it travels down the pipeline, with the caller's context."""

    name: str
    arguments: Mapping[str, Any]
    context: C
    parsed: object = None  # the tool's typed arguments, once validation accepted them

    def with_arguments(self, arguments: Mapping[str, Any], parsed: object = None) -> ToolCall[C]:
        if type(self) is ToolCall:  # every call: a plain constructor, not replace()'s field walk
            return ToolCall(self.name, arguments, self.context, parsed)
        return replace(self, arguments=arguments, parsed=parsed)


@dataclass(slots=True)
class ToolResult:
    """What a tool call produced, before it is put on the wire."""

    structured: JSONObject
    text: str | None = None
    is_error: bool = False
    # Facts for stages further out (for example the upstream status of an error);
    # never serialised.
    annotations: dict[str, Any] = field(default_factory=dict)


Next = Callable[[ToolCall[C]], Awaitable[ToolResult]]
# compose() works on any (request, next_) -> response shape, of which a tool stage is one.
Handler = Callable[[In], Awaitable[Out]]
Stage = Callable[[In, Handler[In, Out]], Awaitable[Out]]


class Middleware(Protocol[C]):
    """One stage of the pipeline."""

    async def __call__(self, call: ToolCall[C], next_: Next[C]) -> ToolResult: ...


class Role(IntEnum):
    """A stock stage's place in the canonical order, outermost first (the README says why)."""

    RENDER = 1  # RenderContent: every result leaves with text
    PRESERVE = 2  # PreserveErrors: a ToolError becomes an isError result, a defect is contained
    REFUSE_KINDS = 3  # RefuseTokenKinds: a refused credential kind stops here
    LIMIT = 4  # LimitCalls: one token per tool call, before any work
    VALIDATE = 5  # ValidateArguments: nothing malformed goes further
    FAN_OUT = 6  # FanOut: one validated call routed to one upstream or fanned out to several
    TIMEOUT = 7  # CallTimeout: each routed or fanned-out upstream call bounded


class PipelineOrderError(ValueError):
    """``compose`` was given stock stages in an order that loses results or refusals."""


def compose(stages: Sequence[Stage[In, Out]], terminal: Handler[In, Out]) -> Handler[In, Out]:
    """Chain ``stages`` around ``terminal``; ``stages[0]`` runs first.

    Generic in the request and response types: a tool pipeline (``Middleware[C]``
    stages around a ``Next[C]``) and an HTTP chain (aiohttp ``(request, handler)``
    stages around a handler) are both built with it, and mypy checks either. Stock
    stages out of the canonical order raise ``PipelineOrderError`` (module contract).
    """
    check_order(stages)
    handler = terminal
    for stage in reversed(stages):
        handler = _bind(stage, handler)
    return handler


def _bind(stage: Stage[In, Out], next_: Handler[In, Out]) -> Handler[In, Out]:
    # A plain function handing back the stage's own awaitable: no coroutine of its own
    # per stage per call.
    def run(request: In) -> Awaitable[Out]:
        return stage(request, next_)

    return run


_CANONICAL: Final = "RenderContent → PreserveErrors → RefuseTokenKinds → LimitCalls → ValidateArguments → FanOut → CallTimeout"


def check_order(stages: Sequence[object]) -> None:
    """Raise ``PipelineOrderError`` when the stock stages among ``stages`` are misordered."""
    placed = [(stage, role) for stage in stages if isinstance(role := getattr(stage, "role", None), Role)]
    preserving = any(role is Role.PRESERVE for _, role in placed)
    rendered = preserved = False
    bare: object | None = None  # a PreserveErrors with no RenderContent above it
    last: tuple[object, Role] | None = None
    for stage, role in placed:
        name = type(stage).__name__
        if role is Role.RENDER:
            if bare is not None:
                raise PipelineOrderError(
                    f"{name} is below {type(bare).__name__}: the error results that stage makes would "
                    f"leave with no text. Put {name} above it; the order is {_CANONICAL}."
                )
            rendered = True
        elif role is Role.PRESERVE:
            bare = None if rendered else stage
            preserved = True
        elif preserving and not preserved:
            raise PipelineOrderError(
                f"{name} is above every PreserveErrors: its refusals would escape as exceptions. "
                f"Put it below PreserveErrors; the order is {_CANONICAL}."
            )
        elif last is not None and role < last[1]:
            raise PipelineOrderError(
                f"{name} is below {type(last[0]).__name__}; put it above. The order is {_CANONICAL}."
            )
        else:
            last = (stage, role)
