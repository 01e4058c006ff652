"""``pdpp-gateway demo``: the gateway on the embedded sandbox RS, ready to connect.

Contract: starts the sandbox RS on loopback, caches a demo client grant the way
``pdpp connect`` would (in ``--cache-root``, default ``.pdpp-demo``), proves the gateway
works by running one real stdio session through the SDK client (tools/list, then the
``schema`` index and a ``search`` as a model would read them), prints copy-paste MCP
client configuration for that stdio server, and keeps the RS running until Ctrl-C.
The demo token is sandbox material; printing it is intended.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path

HELP = "Run the gateway on the embedded sandbox RS and print how to connect an MCP client."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=7663, help="sandbox RS port (0 picks a free one)")
    parser.add_argument("--cache-root", default=".pdpp-demo", help="where the demo grant is cached")
    parser.add_argument("--once", action="store_true", help="exit after the smoke session instead of serving")


def run(args: argparse.Namespace) -> int:
    import asyncio

    with contextlib.suppress(KeyboardInterrupt):
        return asyncio.run(_demo(args, Path(args.cache_root).resolve()))
    return 0


async def _demo(args: argparse.Namespace, cache_root: Path) -> int:
    import asyncio
    import json
    import shutil

    from mcp import Client, StdioServerParameters

    from pdpp_gateway.credentials import write_credential
    from pdpp_gateway.sandbox.testing import start_sandbox

    async with start_sandbox(host=args.host, port=args.port) as sandbox:
        token = sandbox.tokens["client_broad"]
        write_credential(cache_root, sandbox.url, token, grant_id="grt_broad")
        command = shutil.which("pdpp-gateway") or sys.executable
        prefix = [] if command != sys.executable else ["-m", "pdpp_gateway"]
        stdio_args = [*prefix, "stdio", "--provider-url", sandbox.url, "--cache-root", str(cache_root)]
        print(f"Sandbox RS: {sandbox.url}  (demo client grant: every stream, both mail connections)")
        print(f"Demo grant cached in {cache_root} (token {token})\n")
        params = StdioServerParameters(command=command, args=stdio_args)
        async with Client(params, cache=None) as client:
            tools = await client.list_tools()
            print(
                f"Connected over stdio ({client.protocol_version}); tools: {', '.join(t.name for t in tools.tools)}\n"
            )
            for tool, arguments in (("schema", {}), ("search", {"query": "Lisbon deposit", "limit": 3})):
                result = await client.call_tool(tool, arguments)
                text = result.content[0].text if result.content and result.content[0].type == "text" else ""
                print(f"--- {tool} {json.dumps(arguments)} ---\n{text}\n")
        config = {"mcpServers": {"pdpp-sandbox": {"command": command, "args": stdio_args}}}
        print("Add this server to an MCP client (Claude Desktop, Claude Code, Codex, ...):")
        print(json.dumps(config, indent=2))
        print(f"\nClaude Code: claude mcp add pdpp-sandbox -- {command} {' '.join(stdio_args)}")
        print(f"Codex:       codex mcp add pdpp-sandbox -- {command} {' '.join(stdio_args)}")
        if args.once:
            return 0
        print("\nThe sandbox RS keeps running for your client; Ctrl-C to stop.", flush=True)
        await asyncio.Event().wait()
    return 0
