"""``pdpp-gateway resource URI``: read one ``pdpp://`` resource (record, stream or blob).

The terminal twin of MCP ``resources/read`` for the URIs results show: JSON resources
print as text; a blob prints its media type and size, and its bytes go to
``--output FILE`` (never raw bytes on the terminal). Exit 0 on success, 1 when the
resource cannot be read (the reason on stderr).
"""

from __future__ import annotations

import argparse
import base64
import sys
from pathlib import Path
from typing import Any

from pdpp_gateway.commands import local_credential

HELP = "Read one pdpp:// resource (record, stream, or blob with --output FILE)."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("uri", help="pdpp://record/..., pdpp://stream/... or pdpp://blob/...")
    parser.add_argument("--output", help="write a blob's bytes to this file")
    local_credential.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    resolved = local_credential.resolve(args, "resource")
    if isinstance(resolved, int):
        return resolved
    import asyncio

    return asyncio.run(_read(*resolved, args.uri, args.output))


async def _read(provider_url: str, token: str, uri: str, output: str | None) -> int:
    from mcp.shared.exceptions import MCPError

    from pdpp_gateway.context import GatewayContext
    from pdpp_gateway.resources import read
    from pdpp_gateway.rs.client import RsClient

    async with RsClient(provider_url) as rs:
        context = GatewayContext(rs=rs.bind(token), provider_url=provider_url, token_kind="client")
        try:
            result = await read(context, uri)
        except MCPError as error:
            print(f"Error reading {uri}: {error}", file=sys.stderr)
            return 1
    _print(uri, result.contents, output)
    return 0


def _print(uri: str, contents: list[Any], output: str | None) -> None:
    import mcp.types as types

    for content in contents:
        if isinstance(content, types.TextResourceContents):
            sys.stdout.write(content.text + "\n")
            continue
        data = base64.b64decode(content.blob)
        kind = f"{content.mime_type or 'application/octet-stream'}, {len(data)} bytes"
        if output:
            Path(output).write_bytes(data)
            sys.stdout.write(f"{uri}: {kind}; written to {output}\n")
        else:
            sys.stdout.write(f"{uri}: {kind} (binary; add --output FILE to save the bytes)\n")
