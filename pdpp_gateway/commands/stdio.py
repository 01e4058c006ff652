"""``pdpp-gateway stdio``: the local MCP server for one provider, over stdin/stdout.

Contract: the caller's scoped client token comes only from the ``pdpp-gateway connect``
credential cache. Owner credentials are never used: ``PDPP_OWNER_TOKEN`` and
``PDPP_OWNER_SESSION_COOKIE`` are ignored (with a notice), and an owner-flagged cached
credential is refused. A cache label is not trusted on its own: before serving, the RS
is asked what the token is (``bearer.token_kind``, ``rs.start_probe``), and an owner or
mcp_package token is refused even when the file does not say so. Without a usable
credential the process exits non-zero before writing any frame, with a one-line reason
and the exact fix (``pdpp-gateway connect <provider-url>``) on stderr. stdout carries protocol
frames only: fd 1 is pointed at stderr for the whole process (``fast_start.wire``).

Start-up, in order: stdin/stdout claimed; a stdin reader answers the session's opening
requests from ``fast_start/answers.json`` while the credential is checked and the
pipeline with its RS client loads in a background thread (aiohttp's reads of the CA bundle
beside it: ``fast_start.trust_aside``); those answers are written only once the check
passed. Then the session (``fast_start.session``) builds the caller's readers and answers
plain tool calls and resource reads through the pipelines (``fast_start.calls``) with the
SDK's bytes; once the first are answered the SDK loads in the same thread, and when it is
in, it takes the stream over (``pdpp_gateway.stdio``). ``PDPP_STDIO_EARLY_ANSWERS=0``
leaves every answer to the SDK. An RS that cannot be asked at start does not stop the
process: it serves and verifies the credential before the first read instead. An access
token the RS refuses as lapsed is checked again in the session, through the reader that
renews it with the cached refresh token (``local.renewing_rs``); the early answers stay held
until that check passes. While serving, every read renews the access token ahead of its
expiry and once after the RS refuses it as lapsed, so a session outlives its tokens.

Every grant cached for the provider is served (one per connector; ``--connector ID``
narrows them): one grant is the single-grant server; several, or several providers
(``--provider-url`` repeated, or ``--package NAME``: ``local.package``), are served as one
package: every member is checked at once, as above, and the first
refused member in package order decides the exit; the gate opens only when every member
passed (a member refused with 401 is rechecked with renewal once the SDK is up). The early
answers are the same for a package.

Exit codes: 0 served until stdin closed; 64 usage (missing or invalid provider URL, an
unreadable or invalid package file); 77 owner or mcp_package credential refused (by label
or by the RS); 78 no usable credential (missing, expired, malformed, or rejected by the
RS); 1 unexpected failure.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import threading
from typing import Final

from pdpp_gateway.commands import local_credential
from pdpp_gateway.observe import tracing

HELP = (
    "Serve the read tools over stdio for one provider (or several cached grants as one package), "
    "using the `pdpp-gateway connect` credential cache."
)
# Imported first in the background: what answers tool calls (the pipeline, the readers,
# aiohttp), then the SDK-backed serving module (``session.SERVING_MODULE``).
SESSION_MODULE: Final = "pdpp_gateway.fast_start.session"
SERVING_MODULE: Final = "pdpp_gateway.stdio"
# While the SDK loads in the background, the threads answering the client get the
# interpreter back within this many seconds (the default 5 ms would delay each early answer).
START_SWITCH_SECONDS: Final = 0.0005


def configure(parser: argparse.ArgumentParser) -> None:
    local_credential.add_arguments(parser, package=True)
    parser.add_argument("--server-name", help="MCP server name (env PDPP_MCP_SERVER_NAME).")
    parser.add_argument(
        "--log-level",
        default=os.environ.get("PDPP_LOG_LEVEL", "INFO"),
        help="stderr log level: DEBUG, INFO, WARNING or ERROR (env PDPP_LOG_LEVEL)",
    )


class _Loader(threading.Thread):
    """Imports the session module (what answers the first tool calls), then, once the session
    wants it (``want_sdk``), the SDK-backed serving module, in the background: one after the
    other, since two imports at once would share the interpreter and slow the first answer."""

    def __init__(self, wake: threading.Event) -> None:
        super().__init__(name="sdk-loader", daemon=True)
        self._wake = wake
        self._sdk_wanted = threading.Event()
        self.session_ready = threading.Event()
        self.done = False
        self.error: BaseException | None = None

    def want_sdk(self) -> None:
        self._sdk_wanted.set()

    def run(self) -> None:
        default_switch = sys.getswitchinterval()
        try:
            from pdpp_gateway.fast_start.trust_aside import import_aiohttp

            _, trust = import_aiohttp()  # its CA-bundle reads run beside the imports below
            importlib.import_module(SESSION_MODULE)
            trust.wait()  # before the session may open a connection
            self.session_ready.set()
            self._wake.set()
            self._sdk_wanted.wait()
            importlib.import_module(SERVING_MODULE)
        except BaseException as error:  # re-raised on the main thread
            self.error = error
        finally:
            sys.setswitchinterval(default_switch)
            self.done = True
            self.session_ready.set()
            self._wake.set()

    def raise_error(self) -> None:
        if self.error is not None:
            raise self.error


def run(args: argparse.Namespace) -> int:
    from pdpp_gateway.observe.logs import configure_logging

    configure_logging(args.log_level)
    tracing.start_tracing()  # when OTEL_EXPORTER_OTLP_ENDPOINT asks for it
    # checked below, with the session loading
    members = local_credential.resolve_members(args, "stdio", verify=False)
    if isinstance(members, int):
        return members
    server_name = args.server_name or os.environ.get("PDPP_MCP_SERVER_NAME") or "pdpp-gateway"
    if len(members) == 1:
        local_credential.say(
            f"checking the cached credential with {members[0].describe()}, then serving over stdio"
        )
    else:
        local_credential.say(
            f"checking the cached grants {', '.join(m.describe() for m in members)}, "
            "then serving them as one package over stdio"
        )

    from pdpp_gateway.fast_start.answers import EarlyResponder, Table
    from pdpp_gateway.fast_start.wire import StdinPump, Wire, claim_stdio
    from pdpp_gateway.local.package import check_members
    from pdpp_gateway.local_verdict import CredentialError
    from pdpp_gateway.rs.start_probe import check_and_describe, warn_unverified

    sys.setswitchinterval(START_SWITCH_SECONDS)  # restored by the loader once the SDK is in
    wire_in, wire_out = claim_stdio()
    wire = Wire(wire_out)
    early = os.environ.get("PDPP_STDIO_EARLY_ANSWERS", "1") != "0"
    pump = StdinPump(wire_in, wire, EarlyResponder(Table.load() if early else None, server_name))
    wake = pump.changed
    loader = _Loader(wake)
    if not early:
        loader.want_sdk()
    pump.start()
    # Started as the RS is asked: the import runs while the main thread waits for its answer.
    loader.start()
    stop = check_members(members, check_and_describe, local_credential.say, warn_unverified)
    if stop is not None:
        return stop
    if not any(member.recheck for member in members):
        pump.open_gate()  # else held until the renewing recheck passes, in the session
    while not loader.session_ready.is_set():
        if pump.served_early():
            return 0  # every request was answered early and stdin is closed: nothing more is needed
        wake.wait()
        wake.clear()
    loader.raise_error()

    import asyncio

    session = importlib.import_module(SESSION_MODULE)
    cache_root = local_credential.cache_root_of(args)
    try:
        asyncio.run(session.serve(members, server_name, pump, wire, cache_root, loader))
    except CredentialError as error:
        local_credential.say(error.message)
        return error.exit_code
    return 0
