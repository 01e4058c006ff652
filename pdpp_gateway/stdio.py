"""The stdio front door: one caller, one token, one MCP server over stdin/stdout.

Contract: ``serve_stdio`` serves until stdin closes. Everything Python prints while
serving goes to stderr (``redirect_stdout``), and the SDK's ``stdio_server`` points
fd 1 at stderr too, so stray output from us or a library can never corrupt the
protocol stream. The RS client is opened once and closed on the way out.
"""

from __future__ import annotations

import contextlib
import sys

from mcp.server.stdio import stdio_server

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.server import build_server


async def serve_stdio(provider_url: str, token: str, server_name: str) -> None:
    async with RsClient(provider_url) as rs:
        context = GatewayContext(rs=rs.bind(token), provider_url=provider_url)
        server = build_server(lambda _ctx: context, name=server_name)
        with contextlib.redirect_stdout(sys.stderr):
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
