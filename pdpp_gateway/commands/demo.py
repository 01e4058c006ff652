"""``pdpp-gateway demo``: the hosted gateway on the embedded sandbox RS, ready to connect.

Contract: starts the sandbox RS and the hosted gateway (``/mcp``, bearer introspection
against the sandbox) on loopback, proves the pair works with one real session through
the SDK's HTTP client (tools/list, then the ``schema`` index and a ``search`` as a model
reads them), then prints the MCP URL, a demo client token and copy-paste setup for
Claude Code, Codex and a generic client, and serves until Ctrl-C. OAuth MCP clients can
sign in with no token: the hosted metadata names the sandbox's authorization server,
which issues tokens for this gateway's ``/mcp`` after consent. It also caches the demo
grant the way ``pdpp-gateway connect`` would (``--cache-root``, by default a ``demo`` folder of
the per-user data directory: the demo writes nothing in the current directory) and prints the stdio
alternative; ``/connect`` and ``/llms.txt`` show the demo token and that cache root.
The demo token is sandbox material; printing it is intended.

A first contact lasts: the sandbox's clients, grants and refresh tokens are kept in the
per-user data directory (``sandbox.command.add_state_options``: ``--state-dir``,
``--no-state``), and with no ``--port``/``--gateway-port`` each server takes the port it
took last time when that is free (said on stderr), so an entry pasted into a client keeps
working at the next start. A saved state that cannot be read is one line and exit 64.

Exit codes: 0 (``--once``, or Ctrl-C), 64 when a port cannot be bound (busy port: one
line on stderr naming it and the flag that moves it, no traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import sys
from pathlib import Path

from pdpp_gateway.commands.serve import RATE_BURST_HELP, RATE_LIMIT_HELP
from pdpp_gateway.files.ports import LastPorts
from pdpp_gateway.refusals import ExitCode
from pdpp_gateway.sandbox.command import Lasting, add_state_options, describe, last_ports, lasting, state_root

HELP = "Run the hosted gateway on the embedded sandbox RS and print how to connect an MCP client."
DEMO_TOKEN_NAME = "client_broad"
DEMO_QUESTION = "what did I pay for the Lisbon apartment deposit"  # in a person's words, as asked


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address both servers listen on")
    parser.add_argument(
        "--port",
        type=int,
        help="sandbox RS port (default 7663, or a free one when that is taken; 0 picks a free one)",
    )
    parser.add_argument(
        "--gateway-port",
        type=int,
        help="hosted gateway port (default 7664, or a free one when that is taken; 0 picks a free one)",
    )
    parser.add_argument(
        "--cache-root",
        help="where the demo grant is cached for stdio (default: a demo folder in the per-user data "
        "directory, $XDG_DATA_HOME/pdpp-gateway/demo, else ~/.local/share/pdpp-gateway/demo; never the "
        "current directory)",
    )
    parser.add_argument("--once", action="store_true", help="exit after the smoke session instead of serving")
    parser.add_argument(
        "--rate-limit", type=float, default=20.0, help=RATE_LIMIT_HELP.replace("env PDPP_RATE_LIMIT; ", "")
    )
    parser.add_argument(
        "--rate-burst", type=int, default=40, help=RATE_BURST_HELP.replace("env PDPP_RATE_BURST; ", "")
    )
    add_state_options(parser)


def run(args: argparse.Namespace) -> int:
    import asyncio

    from pdpp_gateway.files.ports import port_or_free
    from pdpp_gateway.hosted.serve import BindError
    from pdpp_gateway.local.cache_root import user_cache_root
    from pdpp_gateway.sandbox.oauth_state import StateError

    root = state_root(args)
    ports = last_ports(root)
    chosen = {
        role: asked is None for role, asked in (("demo-rs", args.port), ("demo-gateway", args.gateway_port))
    }
    args.port = port_or_free(args.host, args.port, 7663, "sandbox RS", ports.get("demo-rs", args.host))
    args.gateway_port = port_or_free(
        args.host, args.gateway_port, 7664, "hosted gateway", ports.get("demo-gateway", args.host)
    )
    try:
        kept = lasting(root, args.host, args.port, fixed_ids=True)
    except StateError as error:
        print(f"pdpp-gateway demo: {error}", file=sys.stderr)
        return ExitCode.USAGE
    try:
        with contextlib.suppress(KeyboardInterrupt):
            cache_root = Path(args.cache_root).resolve() if args.cache_root else user_cache_root() / "demo"
            return asyncio.run(_demo(args, cache_root, kept, (ports, chosen)))
    except BindError as error:
        print(f"pdpp-gateway demo: {error} (choose another with --gateway-port)", file=sys.stderr)
        return ExitCode.USAGE
    except OSError as error:
        if error.errno != errno.EADDRINUSE:
            raise
        print(
            f"pdpp-gateway demo: cannot listen on {args.host}:{args.port}: address already in use "
            "(choose another with --port)",
            file=sys.stderr,
        )
        return ExitCode.USAGE
    return 0


async def _demo(
    args: argparse.Namespace, cache_root: Path, kept: Lasting, memory: tuple[LastPorts, dict[str, bool]]
) -> int:
    import asyncio
    import json
    import shlex
    from urllib.parse import urlsplit

    from pdpp_gateway.commands.client_config import entries, launcher, server_args
    from pdpp_gateway.hosted.embedded import mcp_http, start_gateway
    from pdpp_gateway.hosted.pages import PageFacts
    from pdpp_gateway.local.credentials import write_credential
    from pdpp_gateway.observe.logs import configure_logging
    from pdpp_gateway.sandbox.config import SandboxConfig
    from pdpp_gateway.sandbox.fronting import sandbox_settings
    from pdpp_gateway.sandbox.runner import start_sandbox

    configure_logging("WARNING", json_lines=True)
    config = SandboxConfig(state_file=str(kept.state_file) if kept.state_file is not None else None)
    async with start_sandbox(config, host=args.host, port=args.port) as sandbox:
        token = sandbox.tokens[DEMO_TOKEN_NAME]
        settings = sandbox_settings(
            sandbox.url,
            host=args.host,
            port=args.gateway_port,
            rate_limit=args.rate_limit,
            rate_burst=args.rate_burst,
        )
        facts = PageFacts(demo_token=token, cache_root=str(cache_root), server_name="pdpp-sandbox")
        async with start_gateway(settings, public_self=True, demo=facts) as url:
            sandbox.allow_resource(url)  # OAuth clients ask the sandbox AS for a token for this /mcp
            ports, chosen = memory  # remember the ports the demo chose itself, not ones typed
            bound = {"demo-rs": sandbox.port, "demo-gateway": urlsplit(url).port or 0}
            ports.remember(args.host, {role: port for role, port in bound.items() if chosen[role]})
            print(f"Sandbox RS:      {sandbox.url}   (also its authorization server: consent page, tokens)")
            print(f"                 {describe(kept)}")
            print(f"MCP server URL:  {url}")
            print(f"Demo token:      {token}   (client grant: every stream, both mail connections)\n")
            async with mcp_http(url, token, "auto") as client:
                tools = await client.list_tools()
                print(
                    f"Connected over Streamable HTTP ({client.protocol_version}); "
                    f"tools: {', '.join(t.name for t in tools.tools)}\n"
                )
                for tool, arguments in (("schema", {}), ("search", {"query": DEMO_QUESTION, "limit": 3})):
                    result = await client.call_tool(tool, arguments)
                    text = (
                        result.content[0].text if result.content and result.content[0].type == "text" else ""
                    )
                    print(f"--- {tool} {json.dumps(arguments)} ---\n{text}\n")
            header = f"Authorization: Bearer {token}"
            print(
                "Connect an MCP client that signs in with OAuth (you approve on the sandbox's consent page):"
            )
            print(f"  Claude Code: claude mcp add --transport http pdpp-sandbox {url}")
            print("Or a client that only sends a header, with the demo token:")
            print(f'  Claude Code: claude mcp add --transport http pdpp-sandbox {url} --header "{header}"')
            print(f"  Codex:       export PDPP_SANDBOX_TOKEN={token}")
            print(
                f"               codex mcp add pdpp-sandbox --url {url} --bearer-token-env-var PDPP_SANDBOX_TOKEN"
            )
            generic = {
                "mcpServers": {
                    "pdpp-sandbox": {
                        "type": "http",
                        "url": url,
                        "headers": {"Authorization": f"Bearer {token}"},
                    }
                }
            }
            print("  Any client (JSON config):")
            print(json.dumps(generic, indent=2))
            print(
                f"\nConnect page: {url.removesuffix('/mcp')}/connect   Agent summary: {url.removesuffix('/mcp')}/llms.txt"
            )

            write_credential(cache_root, sandbox.url, token, grant_id="grt_broad")
            command = shlex.join(launcher())
            desktop = entries({"pdpp-sandbox": server_args(sandbox.url, cache_root)}, "claude-desktop")
            print(
                f"\nOr run it locally over stdio (the demo grant is cached in {cache_root}). Claude Desktop, "
                f"the exact entry (the same as `{command} client-config --client claude-desktop` prints):\n"
                f"{desktop}\n"
                f"  By hand: {command} stdio --provider-url {sandbox.url} --cache-root {cache_root}\n"
                f"  (to approve your own grant in the browser first: "
                f"{command} connect {sandbox.url} --cache-root {cache_root})"
            )
            if args.once:
                return 0
            print("\nServing until Ctrl-C.", flush=True)
            await asyncio.Event().wait()
    return 0
