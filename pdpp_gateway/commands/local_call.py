"""Run one read tool from the terminal through the same pipeline the MCP server uses.

Contract: ``call_tool`` builds the pipeline, calls ``tool`` with ``arguments`` on the
caller's scoped credential, prints the tool's text (what a model would read) to stdout,
or the structured output as JSON with ``--json``, and returns the exit code: 0 on
success, 1 when the tool answered an error (printed to stderr, same text as the model
gets). Validation, error preservation and rendering are identical to MCP.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import orjson


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the structured output as JSON instead.")


def call_tool(provider_url: str, token: str, tool: str, arguments: dict[str, Any], *, as_json: bool) -> int:
    import asyncio

    return asyncio.run(_call(provider_url, token, tool, arguments, as_json=as_json))


async def _call(provider_url: str, token: str, tool: str, arguments: dict[str, Any], *, as_json: bool) -> int:
    from middleware import ToolCall
    from pdpp_gateway.context import GatewayContext
    from pdpp_gateway.rs.client import RsClient
    from pdpp_gateway.tools.pipeline import build_pipeline

    async with RsClient(provider_url) as rs:
        context = GatewayContext(rs=rs.bind(token), provider_url=provider_url)
        result = await build_pipeline()(ToolCall(tool, arguments, context))
    if result.is_error:
        print(result.text, file=sys.stderr)
        return 1
    if as_json:
        sys.stdout.write(orjson.dumps(result.structured, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write((result.text or "") + "\n")
    return 0
