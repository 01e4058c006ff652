"""An MCP SDK ``Server`` over stdio that answers every request it read, even after stdin closes.

Contract (extra ``mcp``; ``sdk.serve_stdio`` runs it on the process's own stdin and stdout):

- ``run_stdio(server, stdin=None, stdout=None, on_open=None, written=None, logger=None)`` serves
  ``server`` over the SDK's ``stdio_server`` on ``stdin``/``stdout`` (text files as the SDK takes
  them; ``None``: the process's own, and then a stray ``print()`` goes to stderr, never onto the
  wire) until stdin closes AND every request read before that has been answered.
  ``on_open()`` runs once the streams are open, before the first message is read.
- ``drain_on_eof(read_stream, write_stream, written=None, logger=None)``: the SDK's loop cancels
  in-flight handlers at end of input, which would lose the answers of a client that pipes its
  requests and half-closes stdin; these stream proxies hold end of input back until every request
  read has its answer written, for at most ``DRAIN_SECONDS`` (then one warning on ``logger``,
  by default this module's, names how many were left). ``written(reply)``: the answer was
  already written some other way (a gateway that answers early): it counts as answered and is
  not written again.
"""

from __future__ import annotations

try:
    import mcp  # noqa: F401 - only to say which extra is missing, plainly
except ModuleNotFoundError as missing:  # test_installs_alone reads this message
    raise ModuleNotFoundError(
        "mcp_gateway_middleware.sdk_stdio needs the MCP SDK: pip install 'mcp-gateway-middleware[mcp]'"
    ) from missing

import contextlib
import logging
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any, Final

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

__all__ = ["DRAIN_SECONDS", "Inbound", "Reply", "drain_on_eof", "run_stdio"]

DRAIN_SECONDS: Final = 60.0
Inbound = SessionMessage | Exception
Reply = JSONRPCResponse | JSONRPCError
_log = logging.getLogger(__name__)


async def run_stdio(
    server: Server[Any],
    stdin: anyio.AsyncFile[str] | None = None,
    stdout: anyio.AsyncFile[str] | None = None,
    *,
    on_open: Callable[[], None] | None = None,
    written: Callable[[Reply], bool] | None = None,
    logger: logging.Logger | None = None,
) -> None:
    """Serve ``server`` over stdio until every request read before end of input is answered."""
    async with (
        stdio_server(stdin, stdout) as (read_stream, write_stream),
        drain_on_eof(read_stream, write_stream, written=written, logger=logger) as streams,
    ):
        if on_open is not None:
            on_open()
        # on the process's own stdout, the wire: a stray print() goes to stderr instead
        stray = contextlib.redirect_stdout(sys.stderr) if stdout is None else contextlib.nullcontext()
        with stray:
            await server.run(*streams, server.create_initialization_options())


@contextlib.asynccontextmanager
async def drain_on_eof(
    read_stream: ObjectReceiveStream[Inbound],
    write_stream: ObjectSendStream[SessionMessage],
    *,
    written: Callable[[Reply], bool] | None = None,
    logger: logging.Logger | None = None,
) -> AsyncIterator[tuple[ObjectReceiveStream[Inbound], ObjectSendStream[SessionMessage]]]:
    """Stream proxies that delay end of input until every request read has an answer."""
    pending: set[object] = set()
    answered = anyio.Event()
    inbound_send, inbound_receive = anyio.create_memory_object_stream[Inbound](32)
    outbound_send, outbound_receive = anyio.create_memory_object_stream[SessionMessage](32)

    async def pump_in() -> None:
        nonlocal answered
        async with inbound_send, read_stream:
            async for item in read_stream:
                if isinstance(item, SessionMessage) and isinstance(item.message, JSONRPCRequest):
                    pending.add(item.message.id)
                    answered = anyio.Event()
                await inbound_send.send(item)
            with anyio.move_on_after(DRAIN_SECONDS) as scope:
                while pending:
                    await answered.wait()
            if scope.cancelled_caught:
                (logger or _log).warning(
                    "stdin closed with %d request(s) unanswered after %.0f s", len(pending), DRAIN_SECONDS
                )

    async def pump_out() -> None:
        async with outbound_receive, write_stream:
            async for message in outbound_receive:
                reply = message.message
                if not isinstance(reply, JSONRPCResponse | JSONRPCError):
                    await write_stream.send(message)
                    continue
                if not (written is not None and reply.id is not None and written(reply)):
                    await write_stream.send(message)
                pending.discard(reply.id)
                if not pending:
                    answered.set()

    async with anyio.create_task_group() as group:
        group.start_soon(pump_in)
        group.start_soon(pump_out)
        yield inbound_receive, outbound_send
