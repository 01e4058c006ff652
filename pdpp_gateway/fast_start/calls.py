"""stdio tool calls (and resource reads) answered by the pipeline before the SDK has loaded.

Contract: ``EarlyCalls.submit`` (called from the stdin pump's thread) takes the plain
``tools/call`` requests the ``EarlyResponder`` recognised (``EarlyCall``) and runs each
on the session's event loop through the process's one tool pipeline, with the session's
one caller context, exactly as the SDK's ``call_tool`` handler would (``server.py``). The
answer is written as the SDK writes it over stdio, byte for byte, by the wire kernel
(``wire.envelope``, ``wire.call_result``; pinned in both eras by ``tests/wire`` and, end to
end, by ``tests/fast_start/test_early_calls.py``):

- a result: ``{"jsonrpc":"2.0","id":<id>,"result":<result_wire>}``;
- an exception out of the pipeline (a defect): logged, and answered as the SDK answers
  one (``envelope.handler_error``): ``{"code":0,"message":<str(exception)>}`` in the
  handshake era, ``{"code":-32603,"message":"Internal server error"}`` in the 2026-07-28 era;
- a result that is not plain JSON data (never made by the pipeline): logged, and
  answered ``-32603`` with a sentence (the SDK would serialise it; this path cannot).

A ``resources/read`` (an ``EarlyCall`` named ``READ_METHOD``) runs through the resource
pipeline with the same context and is answered as ``resources.read`` has the SDK answer
it: both shape the contents or the JSON-RPC error with ``resources.answers`` and
``wire.read_result`` (pinned in both eras by the same tests).

An ``EarlyCancel`` for a call still running stops it and nothing is written for it, as
the SDK does for a request its client cancelled (a call whose answer is already being
written is past stopping). The SDK never sees these requests: they are not replayed to it
at the hand-over, and calls still running then finish here. ``busy`` is true while any
runs; each one that ends sets ``changed``. Each call is a task of the session's
``asyncio.TaskGroup``: nothing of anyio runs before the SDK loads (its asyncio backend
alone takes about 35 ms to import).
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from mcp_gateway_middleware import ToolCall, ToolError

from pdpp_gateway.context import CallNext, GatewayContext
from pdpp_gateway.fast_start.answers import EarlyCall, EarlyCancel
from pdpp_gateway.fast_start.wire import Wire
from pdpp_gateway.resources import answers as resource_answers
from pdpp_gateway.wire import envelope, read_result
from pdpp_gateway.wire.call_result import result_wire
from pdpp_gateway.wire.codes import INTERNAL_ERROR
from pdpp_gateway.wire.json_bytes import encode
from pdpp_gateway.wire.plain import READ_METHOD

_log = logging.getLogger("pdpp_gateway.stdio")


class EarlyCalls:
    """The early calls of one stdio session, run in ``group`` on the running loop."""

    def __init__(
        self,
        group: asyncio.TaskGroup,
        pipeline: CallNext,
        context: GatewayContext,
        wire: Wire,
        *,
        server_info: dict[str, Any],
        changed: threading.Event,
    ) -> None:
        self._group = group
        self._pipeline = pipeline
        self._context = context
        self._wire = wire
        self._server_info = server_info
        self._changed = changed
        self._loop = asyncio.get_running_loop()
        self._running: dict[str, asyncio.Task[None]] = {}  # calls that a cancel may still stop
        self._unfinished: set[str] = set()  # from ``submit`` on, so ``busy`` never misses one
        self.answered = 0

    @property
    def busy(self) -> bool:
        return bool(self._unfinished)

    def submit(self, outcome: EarlyCall | EarlyCancel) -> None:
        """Run (or cancel) a call; safe from any thread."""
        if isinstance(outcome, EarlyCall):
            self._unfinished.add(outcome.id_key)
        self._loop.call_soon_threadsafe(self._take, outcome)

    def _take(self, outcome: EarlyCall | EarlyCancel) -> None:
        if isinstance(outcome, EarlyCancel):
            running = self._running.get(outcome.id_key)
            if running is not None:
                running.cancel()
            return
        task = self._group.create_task(self._run(outcome))
        self._running[outcome.id_key] = task
        # Not a ``finally`` in ``_run``: a task cancelled before its first step never enters it.
        task.add_done_callback(lambda _: self._ended(outcome.id_key))

    async def _run(self, call: EarlyCall) -> None:
        frame = await self._answer(call)  # a cancel stops the call here, and nothing is written
        del self._running[call.id_key]  # its answer goes out now: past stopping
        await asyncio.to_thread(self._wire.write, frame)
        self.answered += 1
        if call.name == READ_METHOD:
            _log.debug("answered resources/read %s before the SDK loaded", call.id_key)
        else:
            _log.debug("answered tools/call %s (%s) before the SDK loaded", call.id_key, call.name)

    def _ended(self, id_key: str) -> None:
        self._running.pop(id_key, None)
        self._unfinished.discard(id_key)
        self._changed.set()

    async def _answer(self, call: EarlyCall) -> bytes:
        read = call.name == READ_METHOD
        what = "resource read" if read else f"{call.name} tool"
        try:
            member, body = await (self._read(call) if read else self._call(call))
        except Exception as exception:
            _log.exception("the %s failed", what)
            member, body = b"error", encode(envelope.handler_error(exception, modern=call.modern))
        if body is None:
            _log.error("the %s's answer is not plain JSON data; answered -32603", what)
            member, body = b"error", encode(_unwritable(read))
            assert body is not None  # a code and a fixed sentence
        return envelope.frame(call.id_key, member, body)

    async def _call(self, call: EarlyCall) -> tuple[bytes, bytes | None]:
        """A tool call's ``result``, as ``server.call_tool`` has the SDK write it."""
        result = await self._pipeline(ToolCall(call.name, call.arguments, self._context))
        wire = result_wire(result, modern=call.modern, stamp=self._server_info)
        return b"result", None if wire is None else encode(wire)

    async def _read(self, call: EarlyCall) -> tuple[bytes, bytes | None]:
        """A resource read's ``result`` or ``error``, as ``server.read_resource`` (through
        ``resources.read``) has the SDK write it: both shape it with ``resources.answers``."""
        uri = call.arguments["uri"]
        try:
            result = await resource_answers.run(self._context, uri)
        except ToolError as error:
            return b"error", encode(resource_answers.error_object(error, uri, modern=call.modern))
        contents = resource_answers.contents(uri, result)
        return b"result", encode(
            read_result.result_wire(contents, modern=call.modern, stamp=self._server_info)
        )


def _unwritable(read: bool) -> dict[str, Any]:
    """The error answering a call or read whose answer this path cannot write."""
    if read:
        return envelope.error(INTERNAL_ERROR, "The gateway could not write this answer; retry the read.")
    return envelope.error(INTERNAL_ERROR, "The gateway could not write this tool's result; retry the call.")
