"""``pdpp-gateway resource URI``: read one ``pdpp://`` resource (record, stream or blob).

The terminal twin of MCP ``resources/read`` for the URIs results show: JSON resources
print as text; a blob prints its media type and size, and its bytes go to
``--output FILE`` (never raw bytes on the terminal). Exit 0 on success, 1 when the
resource cannot be read (the reason on stderr). On a package (``--provider-url`` repeated,
``--package NAME``) a record or blob URI is read from the member holding its connection; a
URI naming none is refused as ``ambiguous_connection``.
"""

from __future__ import annotations

import argparse
import base64
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pdpp_gateway.commands import local_credential

if TYPE_CHECKING:
    from pdpp_gateway.local.package import MemberStart

HELP = "Read one pdpp:// resource (record, stream, or blob with --output FILE)."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("uri", help="pdpp://record/..., pdpp://stream/... or pdpp://blob/...")
    parser.add_argument("--output", help="write a blob's bytes to this file")
    local_credential.add_arguments(parser, package=True)


def run(args: argparse.Namespace) -> int:
    members = local_credential.resolve_members(args, "resource", verify=True)
    if isinstance(members, int):
        return members
    import asyncio

    if len(members) > 1:
        from pdpp_gateway.local.package import check_members
        from pdpp_gateway.rs.start_probe import check_and_describe

        stop = check_members(members, check_and_describe, local_credential.say, None)
        if stop is not None:
            return stop
    return asyncio.run(_read(members, args.uri, args.output, local_credential.cache_root_of(args)))


async def _read(members: Sequence[MemberStart], uri: str, output: str | None, cache_root: Path) -> int:
    from mcp.shared.exceptions import MCPError

    from pdpp_gateway.local.readers import caller_context
    from pdpp_gateway.resources.handlers import read

    async with AsyncExitStack() as stack:
        # a package routes to the member the URI names, as at the other doors
        context = await caller_context(stack, members, cache_root)
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
