"""``pdpp-gateway serve``: the hosted Streamable HTTP gateway, as a PaaS web process.

Contract: settings come from flags, then ``PDPP_*`` environment variables (``PORT`` for
the port), then the settings file (``--config``, else ``$PDPP_GATEWAY_CONFIG``, else
``~/.config/pdpp-gateway/gateway.toml`` when it exists; never a path relative to the
working directory unless named); see ``pdpp_gateway.settings``. With only
``--provider-url`` it works against a real RS, validating each bearer through
``GET /v1/schema``; with the three introspection settings it uses RFC 7662 instead (and
can serve MCP package tokens, resolved from ``--package-file`` or the introspection
answer). Logs are JSON lines on stderr. Exit codes: 0 after a clean shutdown, 64 for
invalid settings or an address that cannot be bound (busy port, forbidden interface;
one line on stderr, no traceback), 1 when a worker died.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pdpp_gateway.refusals import ExitCode

HELP = "Serve the read tools over Streamable HTTP at /mcp (the hosted gateway)."


RATE_LIMIT_HELP = (
    "tool calls and resource reads per second per caller, a grant or a package (env PDPP_RATE_LIMIT; "
    "default 20; 0: none)"
)
RATE_BURST_HELP = "calls a caller may make at once (env PDPP_RATE_BURST; default 40)"


def configure(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--provider-url", help="the RS's public origin (env PDPP_PROVIDER_URL)")
    add("--host", help="interface to bind (env PDPP_HOST; default 127.0.0.1, use 0.0.0.0 on a PaaS)")
    add("--port", type=int, help="port to bind (env PORT; default 8080)")
    add("--rs-internal-url", help="base URL for the gateway's own /v1 reads (env PDPP_RS_INTERNAL_URL)")
    add(
        "--public-url",
        help="the public URL clients reach, when it is fixed: an origin, with the path prefix a proxy "
        "serves the gateway under (https://host/pdpp; env PDPP_PUBLIC_URL)",
    )
    add(
        "--trusted-proxy",
        action="append",
        dest="trusted_proxies",
        help="IP or CIDR whose X-Forwarded-* headers are believed (repeatable; env PDPP_TRUSTED_PROXIES, comma-separated)",
    )
    add(
        "--allowed-host",
        action="append",
        dest="allowed_hosts",
        help="extra Host name the gateway answers (repeatable; env PDPP_ALLOWED_HOSTS)",
    )
    add(
        "--allowed-prefix",
        action="append",
        dest="allowed_prefixes",
        help="path prefix a trusted proxy may forward in X-Forwarded-Prefix, such as /pdpp (repeatable; "
        "env PDPP_ALLOWED_PREFIXES)",
    )
    add(
        "--allowed-origin",
        action="append",
        dest="allowed_origins",
        help="extra browser Origin allowed (repeatable; env PDPP_ALLOWED_ORIGINS)",
    )
    add(
        "--introspection-url",
        help="RFC 7662 endpoint of the authorization server (env PDPP_INTROSPECTION_URL)",
    )
    add("--introspection-client-id", help="env PDPP_INTROSPECTION_CLIENT_ID")
    add(
        "--introspection-client-secret", help="prefer env PDPP_INTROSPECTION_CLIENT_SECRET (flags show in ps)"
    )
    add(
        "--issuer",
        help="expected introspection iss (env PDPP_ISSUER; default the introspection URL's origin)",
    )
    add(
        "--package-file",
        help="operator JSON file: grant_package_id -> child grants, each naming the env var holding "
        "its token (needs introspection; env PDPP_PACKAGE_FILE)",
    )
    add(
        "--introspection-cache-seconds",
        type=float,
        help="verdict cache bound, at most 60 (env PDPP_INTROSPECTION_CACHE_SECONDS)",
    )
    add("--workers", type=int, help="worker processes sharing the port (env PDPP_WORKERS; default 1)")
    add("--max-body-bytes", type=int, help="request body cap (env PDPP_MAX_BODY_BYTES; default 4 MiB)")
    add(
        "--body-timeout-seconds",
        type=float,
        help="a request body must arrive within this, else 408 (env PDPP_BODY_TIMEOUT_SECONDS; default 10)",
    )
    add(
        "--shutdown-grace-seconds",
        type=float,
        help="how long in-flight calls may finish on SIGTERM (default 30)",
    )
    add(
        "--idle-timeout-seconds",
        type=float,
        help="a new connection's first request must begin within this (env PDPP_IDLE_TIMEOUT_SECONDS; "
        "default 10)",
    )
    add(
        "--header-timeout-seconds",
        type=float,
        help="a request line and headers must arrive within this of their first byte "
        "(env PDPP_HEADER_TIMEOUT_SECONDS; default 10)",
    )
    add(
        "--keepalive-timeout-seconds",
        type=float,
        help="how long a connection may wait for its next request (env PDPP_KEEPALIVE_TIMEOUT_SECONDS; "
        "default 75)",
    )
    add(
        "--max-connections",
        type=int,
        help="connections open at once (env PDPP_MAX_CONNECTIONS; default 0: the descriptor limit less 256)",
    )
    add(
        "--rate-limit",
        type=float,
        help=RATE_LIMIT_HELP,
    )
    add("--rate-burst", type=int, help=RATE_BURST_HELP)
    add(
        "--global-rate-limit",
        type=float,
        help="calls per second for all callers together (env PDPP_GLOBAL_RATE_LIMIT; default 0: no ceiling)",
    )
    add("--global-rate-burst", type=int, help="env PDPP_GLOBAL_RATE_BURST; default twice the global rate")
    add(
        "--redis-url",
        help="share rate limits across processes and replicas through Redis (prefer env PDPP_REDIS_URL)",
    )
    add("--log-level", help="env PDPP_LOG_LEVEL; default INFO")
    add("--server-name", help="MCP server name (env PDPP_MCP_SERVER_NAME)")
    add(
        "--config",
        type=Path,
        help="settings file (env PDPP_GATEWAY_CONFIG; default ~/.config/pdpp-gateway/gateway.toml, "
        "or under $XDG_CONFIG_HOME, when it exists)",
    )


def run(args: argparse.Namespace) -> int:
    from pdpp_gateway.hosted.serve import BindError, serve_workers
    from pdpp_gateway.settings import SettingsError, load_settings

    flags = {key: value for key, value in vars(args).items() if key not in {"config", "command", "_run"}}
    try:
        settings = load_settings(flags, config_path=args.config)
    except SettingsError as error:
        print(f"pdpp-gateway serve: {error}", file=sys.stderr)
        return ExitCode.USAGE
    try:
        return serve_workers(settings)
    except BindError as error:
        print(f"pdpp-gateway serve: {error}", file=sys.stderr)
        return ExitCode.USAGE
