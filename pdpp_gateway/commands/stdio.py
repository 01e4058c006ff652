"""``pdpp-gateway stdio``: the local MCP server for one provider, over stdin/stdout.

Contract: the caller's scoped client token comes only from the ``pdpp-gateway connect``
credential cache. Owner credentials are never used: ``PDPP_OWNER_TOKEN`` and
``PDPP_OWNER_SESSION_COOKIE`` are ignored (with a notice), and an owner-flagged cached
credential is refused. A cache label is not trusted on its own: before serving, the RS
is asked what the token is (``bearer.token_kind``), and an owner or mcp_package token is
refused even when the file does not say so (see ``pdpp_gateway.stdio``). Without a
usable credential the process exits non-zero before serving, with a one-line reason and
the exact fix (``pdpp-gateway connect <provider-url>``) on stderr. While serving, stdout carries
protocol frames only: Python-level prints are redirected to stderr and the SDK points
fd 1 at stderr too.

Exit codes: 0 served until stdin closed; 64 usage (missing or invalid provider URL);
77 owner or mcp_package credential refused (by label or by the RS); 78 no usable
credential (missing, expired, malformed, or rejected by the RS); 1 unexpected failure.
"""

from __future__ import annotations

import argparse
import os

from pdpp_gateway.commands import local_credential

HELP = "Serve the read tools over stdio for one provider, using the `pdpp-gateway connect` credential cache."


def configure(parser: argparse.ArgumentParser) -> None:
    local_credential.add_arguments(parser)
    parser.add_argument("--server-name", help="MCP server name (env PDPP_MCP_SERVER_NAME).")
    parser.add_argument("--log-level", default=os.environ.get("PDPP_LOG_LEVEL", "INFO"))


def run(args: argparse.Namespace) -> int:
    from pdpp_gateway.logs import configure_logging

    configure_logging(args.log_level)
    resolved = local_credential.resolve(args, "stdio", verify=False)  # serve_stdio verifies (or defers)
    if isinstance(resolved, int):
        return resolved
    provider_url, token = resolved
    server_name = args.server_name or os.environ.get("PDPP_MCP_SERVER_NAME") or "pdpp-gateway"
    local_credential.say(f"checking the cached credential with {provider_url}, then serving over stdio")

    import anyio

    from pdpp_gateway.credentials import CredentialError
    from pdpp_gateway.stdio import serve_stdio

    try:
        anyio.run(serve_stdio, provider_url, token, server_name, local_credential.cache_root_of(args))
    except CredentialError as error:
        local_credential.say(error.message)
        return error.exit_code
    return 0
