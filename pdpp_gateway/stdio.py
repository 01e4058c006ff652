"""The stdio front door: one caller, one token, one MCP server over stdin/stdout.

Contract:

- ``serve_stdio`` serves until stdin closes AND every request read before that has
  been answered (bounded by ``DRAIN_SECONDS``). The SDK's loop cancels in-flight
  handlers at end of input; over stdio that loses the answers of a client that pipes
  its requests and half-closes stdin, so ``drain_on_eof`` holds end-of-input back until
  the answers are written.
- Everything Python prints while serving goes to stderr (``redirect_stdout``), and the
  SDK's ``stdio_server`` points fd 1 at stderr too, so stray output from us or a library
  can never corrupt the protocol stream.
- The RS client is opened once and closed on the way out. Given the ``cache_root`` the
  token came from, reads renew an access token the RS refuses (401) with the cached
  refresh token, once, and carry on (``renewing_rs``).
- Before serving, ``verify_credential`` asks the RS what the cached token is
  (``bearer.token_kind``; a cache label can lie or be missing): ``owner`` or
  ``mcp_package`` stops the process (``CredentialError``, exit 77), a token the RS
  rejects (401, revoked or expired grant) stops it too (exit 78), both with the
  ``pdpp-gateway connect`` fix. An RS that cannot be reached within ``START_PROBE_SECONDS``
  does not stop it: the gateway serves, and its reader (``KindCheckedRs``) verifies the
  kind before the first tool or resource read instead, refusing every read unless the
  RS says ``client``.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import ObjectReceiveStream, ObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError, JSONRPCRequest, JSONRPCResponse

from pdpp_gateway.context import GatewayContext, RsReader
from pdpp_gateway.renewing_rs import RenewingRs
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.token_kind import START_PROBE_SECONDS, KindCheckedRs, KindUnknown, verify_at_start
from pdpp_gateway.server import build_server

DRAIN_SECONDS: Final = 60.0
_log = logging.getLogger(__name__)

Inbound = SessionMessage | Exception


@contextlib.asynccontextmanager
async def drain_on_eof(
    read_stream: ObjectReceiveStream[Inbound], write_stream: ObjectSendStream[SessionMessage]
) -> AsyncIterator[tuple[ObjectReceiveStream[Inbound], ObjectSendStream[SessionMessage]]]:
    """Stream proxies that delay end-of-input until every request read has an answer."""
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
                _log.warning(
                    "stdin closed with %d request(s) unanswered after %.0f s", len(pending), DRAIN_SECONDS
                )

    async def pump_out() -> None:
        async with outbound_receive, write_stream:
            async for message in outbound_receive:
                await write_stream.send(message)
                if isinstance(message.message, JSONRPCResponse | JSONRPCError):
                    pending.discard(message.message.id)
                    if not pending:
                        answered.set()

    async with anyio.create_task_group() as group:
        group.start_soon(pump_in)
        group.start_soon(pump_out)
        yield inbound_receive, outbound_send


async def verify_credential(rs: RsReader, provider_url: str) -> str | None:
    """``client`` when the RS confirms it, ``None`` when the RS cannot be asked now.

    Raises ``CredentialError`` for a token that must not be served.
    """
    try:
        return await verify_at_start(rs, provider_url, seconds=START_PROBE_SECONDS)
    except KindUnknown as unknown:
        _log.warning(
            "the resource server is unreachable at start-up (%s); serving, and verifying the credential "
            "before the first read",
            unknown.reason,
        )
        return None


async def serve_stdio(
    provider_url: str, token: str, server_name: str, cache_root: Path | None = None
) -> None:
    async with RsClient(provider_url) as rs:
        bound: RsReader = (
            rs.bind(token) if cache_root is None else RenewingRs(rs, provider_url, token, cache_root)
        )
        verified = await verify_credential(bound, provider_url)
        reader = KindCheckedRs(bound, provider_url, verified_kind=verified)
        context = GatewayContext(rs=reader, provider_url=provider_url, token_kind="client")
        server = build_server(lambda _ctx: context, name=server_name)
        # Order matters: the SDK claims the real stdout first, then Python-level prints are redirected.
        async with (
            stdio_server() as (read_stream, write_stream),
            drain_on_eof(read_stream, write_stream) as streams,
        ):
            with contextlib.redirect_stdout(sys.stderr):
                await server.run(*streams, server.create_initialization_options())
