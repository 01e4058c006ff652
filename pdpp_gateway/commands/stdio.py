"""``pdpp-gateway stdio``: the local MCP server for one provider, over stdin/stdout.

Contract: the caller's scoped client token comes only from the ``pdpp connect``
credential cache. Owner credentials are never used: ``PDPP_OWNER_TOKEN`` and
``PDPP_OWNER_SESSION_COOKIE`` are ignored (with a notice), and an owner-flagged cached
credential is refused. Without a usable credential the process exits non-zero before
serving, with a one-line reason and the exact fix (``pdpp connect <provider-url>``) on
stderr. While serving, stdout carries protocol frames only: Python-level prints are
redirected to stderr and the SDK points fd 1 at stderr too.

Exit codes: 0 served until stdin closed; 64 usage (missing or invalid provider URL);
77 owner credential refused; 78 no usable credential (missing, expired, malformed);
1 unexpected failure.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HELP = "Serve the read tools over stdio for one provider, using the `pdpp connect` credential cache."

EXIT_USAGE = 64


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider-url", help="RS public origin (env PDPP_PROVIDER_URL).")
    parser.add_argument("--cache-root", help="credential cache root (env PDPP_CACHE_ROOT, default .pdpp).")
    parser.add_argument("--server-name", help="MCP server name (env PDPP_MCP_SERVER_NAME).")
    parser.add_argument("--log-level", default=os.environ.get("PDPP_LOG_LEVEL", "INFO"))


def run(args: argparse.Namespace) -> int:
    from pdpp_gateway.credentials import (
        CredentialError,
        load_credential,
        normalize_provider_url,
        owner_env_warning,
    )
    from pdpp_gateway.logs import configure_logging

    configure_logging(args.log_level)
    raw_url = args.provider_url or os.environ.get("PDPP_PROVIDER_URL")
    if not raw_url:
        _say(
            "missing --provider-url (or PDPP_PROVIDER_URL). Example: pdpp-gateway stdio --provider-url "
            "https://pdpp.example.com"
        )
        return EXIT_USAGE
    notice = owner_env_warning(os.environ)
    if notice:
        _say(notice)
    cache_root = Path(args.cache_root or os.environ.get("PDPP_CACHE_ROOT") or ".pdpp")
    try:
        provider_url = normalize_provider_url(raw_url)
        credential = load_credential(provider_url, cache_root)
    except CredentialError as error:
        _say(error.message)
        return error.exit_code
    server_name = args.server_name or os.environ.get("PDPP_MCP_SERVER_NAME") or "pdpp-gateway"
    _say(f"serving {provider_url} over stdio with the scoped credential in {credential.cache_file}")

    import anyio

    from pdpp_gateway.stdio import serve_stdio

    anyio.run(serve_stdio, provider_url, credential.access_token, server_name)
    return 0


def _say(message: str) -> None:
    print(f"pdpp-gateway: {message}", file=sys.stderr, flush=True)
