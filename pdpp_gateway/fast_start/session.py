"""A stdio session from the credential check to the SDK's hand-over, without the SDK.

Contract: ``serve(members, ...)`` runs on the session's one event loop while the SDK still
loads in the background (``loading``):

1. It builds the caller's context once (``local.readers.caller_context``: one grant's, or a
   package of cached grants, each member reading through its renewing, kind-checked
   reader). A member the RS refused as lapsed at start is checked again here through that
   reader, which renews the grant (``verify_credential``); one that cannot be renewed
   raises ``CredentialError`` before any frame is written, since only then does the
   pump's gate open.
2. It answers the early tool calls and resource reads (``EarlyCalls``) with the process's
   pipelines and one context, the same the SDK's server uses after the hand-over.
3. When the SDK has loaded it hands the stream over (``pdpp_gateway.stdio.serve_sdk``); the
   early calls still running finish beside it. When stdin ended first and everything was
   answered early, it returns without the SDK.

It runs on a plain asyncio loop (``asyncio.run``) with asyncio's own task group, timeouts
and locks: anyio, which the SDK runs on, loads its asyncio backend (about 35 ms) only once
the SDK serves, in the same loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Final, Protocol

from pdpp_gateway.context import RsReader
from pdpp_gateway.fast_start.calls import EarlyCalls
from pdpp_gateway.fast_start.wire import StdinPump, Wire
from pdpp_gateway.local.package import MemberStart
from pdpp_gateway.local.readers import caller_context
from pdpp_gateway.rs.start_probe import warn_unverified
from pdpp_gateway.rs.token_kind import START_PROBE_SECONDS, KindUnknown, verify_at_start
from pdpp_gateway.tools.pipeline import build_pipeline

SERVING_MODULE: Final = "pdpp_gateway.stdio"


class Loading(Protocol):
    """The SDK loading in the background."""

    @property
    def done(self) -> bool: ...

    def want_sdk(self) -> None:
        """Start loading the SDK (the session has answered its first calls)."""

    def raise_error(self) -> None:
        """Raise what stopped the load, if anything did."""


async def verify_credential(rs: RsReader, provider_url: str) -> str | None:
    """``client`` when the RS confirms it, ``None`` when the RS cannot be asked now.

    Raises ``CredentialError`` for a token that must not be served.
    """
    try:
        return await verify_at_start(rs, provider_url, seconds=START_PROBE_SECONDS)
    except KindUnknown as unknown:
        warn_unverified(unknown.reason)
        return None


async def serve(
    members: Sequence[MemberStart],
    server_name: str,
    pump: StdinPump,
    wire: Wire,
    cache_root: Path,
    loading: Loading,
) -> None:
    async with contextlib.AsyncExitStack() as stack:
        context = await caller_context(stack, members, cache_root, recheck=verify_credential)
        pump.open_gate()
        pipeline = build_pipeline()
        responder = pump.responder
        server_info = responder.server_info() if responder.table is not None else {}
        async with asyncio.TaskGroup() as group:
            calls = EarlyCalls(group, pipeline, context, wire, server_info=server_info, changed=pump.changed)
            pump.attach_calls(calls.submit)
            while not loading.done:
                if pump.served_early() and not calls.busy:
                    return  # stdin ended and every request was answered early: no SDK needed
                if not calls.busy or calls.answered:
                    loading.want_sdk()  # after the first answer: loading it earlier would slow that
                await _changed(pump.changed)
            loading.raise_error()
            serving = importlib.import_module(SERVING_MODULE)
            await serving.serve_sdk(context, server_name, pump, wire, pipeline)


async def _changed(event: threading.Event) -> None:
    """Wait for ``event`` (set by the pump, the loader or an ending call) and clear it.

    The wait runs in a daemon thread of its own, not the loop's executor: a wait abandoned
    (the session ended on an error) must never hold the process's exit."""
    loop = asyncio.get_running_loop()
    woken = loop.create_future()

    def wake() -> None:
        if not woken.done():
            woken.set_result(None)

    def wait() -> None:
        event.wait()
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
            loop.call_soon_threadsafe(wake)

    threading.Thread(target=wait, name="pdpp-stdio-wake", daemon=True).start()
    await woken
    event.clear()
