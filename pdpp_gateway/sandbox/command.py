"""``pdpp-gateway sandbox``: run the sandbox RS and print its tokens.

Contract: each sandbox's connection ids carry a random suffix (``cin_mail_work_3fa2c1``; real
providers' ids are random and never shared), so two sandboxes serve as one package without a
source listed twice; ``--fixed-ids`` keeps the fixture's. Prints the introspection client id and secret too (sandbox credentials, meant to
be copied into ``serve``'s settings). Serves on loopback by default (``--host``/``--port``, 0 = any free port; with no
``--port``, 7663 when free, else a free one, said on stderr: ``ports``), prints
the URL and every fixture token with what it grants (sandbox material, meant to be
copied), and runs until SIGINT/SIGTERM. A port that cannot be bound is one line on
stderr and exit 64, like ``serve`` and ``demo``.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import sys

from pdpp_gateway.refusals import ExitCode

HELP = "Run the sandbox PDPP resource server (sample data) and print its tokens."


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


def run(args: argparse.Namespace) -> int:
    import asyncio

    from pdpp_gateway.ports import port_or_free
    from pdpp_gateway.sandbox.config import DESCRIPTIONS, SandboxConfig
    from pdpp_gateway.sandbox.runner import start_sandbox

    args.port = port_or_free(args.host, args.port, 7663, "sandbox RS")
    if args.access_token_ttl < 1:
        print("pdpp-gateway sandbox: --access-token-ttl must be at least 1 second", file=sys.stderr)
        return ExitCode.USAGE
    import secrets

    config = SandboxConfig(
        db_path=args.db,
        reference_client_rules=args.reference_client_rules,
        bulk_records=args.bulk_records,
        access_token_ttl=args.access_token_ttl,
        connection_suffix="" if args.fixed_ids else f"_{secrets.token_hex(3)}",
    )

    async def serve() -> None:
        async with start_sandbox(config, host=args.host, port=args.port) as server:
            print(f"sandbox RS listening on {server.url}")
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
