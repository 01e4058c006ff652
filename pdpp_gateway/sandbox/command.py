"""``pdpp-gateway sandbox``: run the sandbox RS and print its tokens.

Contract: each sandbox's connection ids carry a random suffix (``cin_mail_work_3fa2c1``; real
providers' ids are random and never shared), so two sandboxes serve as one package without a
source listed twice; ``--fixed-ids`` keeps the fixture's. Prints the introspection client id and secret too (sandbox credentials, meant to
be copied into ``serve``'s settings). Serves on loopback by default (``--host``/``--port``, 0 = any free port; with no
``--port``, 7663 when free, else a free one, said on stderr: ``ports``), prints
the URL and every fixture token with what it grants (sandbox material, meant to be
copied), and runs until SIGINT/SIGTERM. A port that cannot be bound is one line on
stderr and exit 64, like ``serve`` and ``demo``.

Its authorization server's clients, grants and refresh tokens, and its connection ids, last
across restarts in a per-user data directory (``oauth_state``; ``--state-dir``, else
``PDPP_SANDBOX_STATE_DIR``), one file per host, port and kind of ids; with no ``--port`` it
takes the port it took last time when that is free (``ports.LastPorts``), so a client
entry or ``connect`` grant keeps working. ``--no-state``, or ``--port 0`` (a new origin
each run), keeps them in memory, lost at stop. A saved state it cannot read is one line
naming the file and exit 64. ``add_state_options`` / ``lasting`` give ``demo`` the same.
Behind a reverse proxy, ``--public-url <origin>`` is the origin its OAuth issuer, metadata and
links name (``SandboxConfig.public_origin``); anything but a bare origin is exit 64.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import sys
from pathlib import Path
from typing import Final, NamedTuple
from urllib.parse import urlsplit

from pdpp_gateway.files.ports import LastPorts
from pdpp_gateway.refusals import ExitCode

HELP = "Run the sandbox PDPP resource server (sample data) and print its tokens."
PORTS_FILE: Final = "ports.json"


class Lasting(NamedTuple):
    """Where a sandbox's authorization state is kept (``None``: in memory) and its saved
    connection suffix (``None``: nothing saved yet)."""

    state_file: Path | None
    connection_suffix: str | None


def add_state_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        help="where the sandbox's registered clients, grants and refresh tokens (as hashes) and its last "
        "ports are kept across restarts (env PDPP_SANDBOX_STATE_DIR; default "
        "$XDG_DATA_HOME/pdpp-gateway/sandbox, else ~/.local/share/pdpp-gateway/sandbox)",
    )
    parser.add_argument(
        "--no-state",
        action="store_true",
        help="keep clients and grants in memory only (lost at stop) and remember no port",
    )


def state_root(args: argparse.Namespace) -> Path | None:
    from pdpp_gateway.sandbox.oauth_state import state_root as root

    return None if args.no_state else root(args.state_dir)


def last_ports(root: Path | None) -> LastPorts:
    return LastPorts(root / PORTS_FILE if root is not None else None)


def lasting(root: Path | None, host: str, port: int, fixed_ids: bool) -> Lasting:
    """The state file for a sandbox on ``host:port`` and what it saved; raises ``StateError``."""
    from pdpp_gateway.sandbox.oauth_state import load, state_file

    if root is None or port == 0:
        return Lasting(None, None)
    path = state_file(root, host, port, fixed_ids)
    saved = load(path)
    return Lasting(path, saved.connection_suffix if saved is not None else None)


def describe(kept: Lasting) -> str:
    if kept.state_file is None:
        return "clients and grants: in memory, forgotten at stop"
    return f"clients and grants: kept in {kept.state_file.parent} (delete it to start afresh)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port", type=int, help="default 7663, or a free one when that is taken; 0 picks a free port"
    )
    parser.add_argument("--db", help="SQLite file (default: in memory)")
    parser.add_argument(
        "--reference-client-rules",
        action="store_true",
        help="refuse client filter/expand like the reference RS",
    )
    parser.add_argument("--bulk-records", type=int, default=0, help="extra synthetic records in bulk/events")
    parser.add_argument(
        "--fixed-ids",
        action="store_true",
        help="keep the fixture's connection ids (cin_mail_work, ...); by default each sandbox gets its own "
        "(a random suffix), as two real providers never share one, so two sandboxes work as one package",
    )
    parser.add_argument(
        "--access-token-ttl",
        type=int,
        default=3600,
        metavar="SECONDS",
        help="lifetime of the access tokens its authorization server issues (default 3600; the PDPP "
        "reference issues 600). A lapsed one is answered 403 grant_expired, as the reference does.",
    )
    parser.add_argument(
        "--public-url",
        metavar="ORIGIN",
        help="the origin clients reach it at through a reverse proxy (https://data.example.com): its "
        "OAuth issuer, metadata and links name it instead of the address it listens on",
    )
    add_state_options(parser)


def public_origin(value: str | None) -> str | None:
    """``--public-url`` as an origin (``scheme://host[:port]``), or ``ValueError`` saying why not."""
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.hostname or parts.path.strip("/") or parts.query:
        raise ValueError(f"--public-url must be an origin such as https://data.example.com, not {value!r}")
    return f"{parts.scheme}://{parts.netloc}"


def run(args: argparse.Namespace) -> int:
    import asyncio

    from pdpp_gateway.files.ports import port_or_free
    from pdpp_gateway.sandbox.config import DESCRIPTIONS, SandboxConfig
    from pdpp_gateway.sandbox.oauth_state import StateError
    from pdpp_gateway.sandbox.runner import start_sandbox

    if args.access_token_ttl < 1:
        print("pdpp-gateway sandbox: --access-token-ttl must be at least 1 second", file=sys.stderr)
        return ExitCode.USAGE
    try:
        public = public_origin(args.public_url)
    except ValueError as error:
        print(f"pdpp-gateway sandbox: {error}", file=sys.stderr)
        return ExitCode.USAGE
    root = state_root(args)
    ports, asked = last_ports(root), args.port
    args.port = port_or_free(args.host, args.port, 7663, "sandbox RS", ports.get("sandbox", args.host))
    try:
        kept = lasting(root, args.host, args.port, args.fixed_ids)
    except StateError as error:
        print(f"pdpp-gateway sandbox: {error}", file=sys.stderr)
        return ExitCode.USAGE
    import secrets

    config = SandboxConfig(
        db_path=args.db,
        reference_client_rules=args.reference_client_rules,
        bulk_records=args.bulk_records,
        access_token_ttl=args.access_token_ttl,
        connection_suffix="" if args.fixed_ids else kept.connection_suffix or f"_{secrets.token_hex(3)}",
        state_file=str(kept.state_file) if kept.state_file is not None else None,
        public_origin=public,
    )

    async def serve() -> None:
        async with start_sandbox(config, host=args.host, port=args.port) as server:
            if asked is None:
                ports.remember(args.host, {"sandbox": server.port})
            print(f"sandbox RS listening on {server.url}" + (f", public at {public}" if public else ""))
            print(describe(kept))
            print(
                f"introspection: POST {server.url}/introspect with Basic "
                f"{config.introspection_client_id}:{config.introspection_client_secret} (sandbox credentials; "
                f"serve takes them as --introspection-client-id and PDPP_INTROSPECTION_CLIENT_SECRET)"
            )
            for name, token in server.tokens.items():
                print(f"  {name:<18} {token}  {DESCRIPTIONS[name]}")
            print("Ctrl-C to stop.", flush=True)
            await asyncio.Event().wait()

    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(serve())
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        print(
            f"pdpp-gateway sandbox: cannot listen on {args.host}:{args.port}: address already in use "
            "(choose another with --port)",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    return 0
