"""Run one read tool from the terminal through the same pipeline the MCP server uses.

Contract: ``call_tool`` builds the pipeline, calls ``tool`` with ``arguments`` on the
caller's scoped credential (``call_members``: or on a package of cached grants, routed and
merged as the MCP server does), prints the tool's text (what a model would read) to stdout,
or the structured output as JSON with ``--json``, and returns the exit code: 0 on
success, 1 when the tool answered an error (printed to stderr, same text as the model
gets). Validation, error preservation and rendering are identical to MCP.

CLI parity: every continuation in the text (``tool {json}`` calls, ``pdpp://`` resource
URIs) is printed as a shell command a person can run as-is: ``read_record_field`` as
``pdpp-gateway read-field ID FIELD --q ...``, the other tools as
``pdpp-gateway call TOOL '<json>'``, resources as ``pdpp-gateway resource URI``; each
repeats the ``--provider-url`` (each, for a package), ``--package``, ``--cache-root`` and ``--trust-cwd-cache``
this command was given. ``fetch``
prints its document as readable lines (id, title, url, metadata, then the text)
instead of one JSON object, so the continuation inside a cut text is runnable too.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from pdpp_gateway.tools.specs import TOOL_NAMES

if TYPE_CHECKING:
    from mcp_gateway_middleware import ToolResult

    from pdpp_gateway.local.package import MemberStart

PROG = "pdpp-gateway"
TOOLS = TOOL_NAMES
_CALL = re.compile(r"\b(" + "|".join(TOOLS) + r") (?=\{)")
_URI = re.compile(r"pdpp://(?:record|blob|stream)/[^\s\"'<>)\]}]+")
_FIELD_FLAGS = (
    ("connection_id", "--connection-id"),
    ("offset_chars", "--offset"),
    ("limit_chars", "--limit-chars"),
    ("q", "--q"),
    ("near", "--near"),
    ("before_chars", "--before"),
    ("after_chars", "--after"),
)


def add_output_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the structured output as JSON instead.")


def credential_flags(args: argparse.Namespace) -> list[str]:
    """The credential options this command was given, for the commands it prints."""
    flags: list[str] = []
    for name, flag in (
        ("provider_url", "--provider-url"),
        ("package", "--package"),
        ("cache_root", "--cache-root"),
        ("trust_cwd_cache", "--trust-cwd-cache"),
    ):
        value = getattr(args, name, None)
        if value is True:  # a switch
            flags.append(flag)
            continue
        for one in value if isinstance(value, list) else [value] if value else []:
            flags += [flag, str(one)]
    return flags


def call_members(
    members: Sequence[MemberStart],
    tool: str,
    arguments: dict[str, Any],
    *,
    as_json: bool,
    flags: Sequence[str],
    cache_root: Path,
) -> int:
    """Run ``tool`` as the caller these cached grants make: one grant, or a package (each
    member checked with its RS first, all at once, and read with its own token). Reads renew
    a lapsing or lapsed access token (``local.readers``)."""
    import asyncio

    if len(members) > 1:
        from pdpp_gateway.commands.local_credential import say
        from pdpp_gateway.local.package import check_members
        from pdpp_gateway.rs.start_probe import check_and_describe

        stop = check_members(members, check_and_describe, say, None)
        if stop is not None:
            return stop
    return asyncio.run(_call(members, tool, arguments, as_json=as_json, flags=flags, cache_root=cache_root))


async def _call(
    members: Sequence[MemberStart],
    tool: str,
    arguments: dict[str, Any],
    *,
    as_json: bool,
    flags: Sequence[str],
    cache_root: Path,
) -> int:
    from contextlib import AsyncExitStack

    from mcp_gateway_middleware import ToolCall

    from pdpp_gateway.local.readers import caller_context
    from pdpp_gateway.tools.pipeline import build_pipeline

    async with AsyncExitStack() as stack:
        context = await caller_context(stack, members, cache_root)
        result = await build_pipeline()(ToolCall(tool, arguments, context))
    return _print_result(result, tool, as_json=as_json, flags=flags)


def _print_result(result: ToolResult, tool: str, *, as_json: bool, flags: Sequence[str]) -> int:
    if result.is_error:
        print(cli_text(result.text or "", flags), file=sys.stderr)
        return 1
    if as_json:
        sys.stdout.write(orjson.dumps(result.structured, option=orjson.OPT_INDENT_2).decode() + "\n")
    elif tool == "fetch":
        sys.stdout.write(cli_text(_document_text(result.structured), flags) + "\n")
    else:
        sys.stdout.write(cli_text(result.text or "", flags) + "\n")
    return 0


def cli_text(text: str, flags: Sequence[str] = ()) -> str:
    """``text`` with every ``tool {json}`` continuation turned into a runnable command,
    and a runnable command listed for every ``pdpp://`` URI it shows."""
    out: list[str] = []
    position = 0
    decoder = orjson.loads
    for match in _CALL.finditer(text):
        if match.start() < position:
            continue
        parsed = _json_object_at(text, match.end(), decoder)
        if parsed is None:
            continue
        arguments, end = parsed
        out.append(text[position : match.start()])
        out.append(command_for(match.group(1), arguments, flags))
        position = end
    out.append(text[position:])
    rewritten = "".join(out)
    uris = list(dict.fromkeys(_URI.findall(text)))
    if uris:
        rewritten += "\nRead a resource shown above from a terminal:\n" + "\n".join(
            "  " + shlex.join([PROG, "resource", uri, *flags]) for uri in uris
        )
    return rewritten


def command_for(tool: str, arguments: Mapping[str, Any], flags: Sequence[str] = ()) -> str:
    """The shell command running ``tool`` with ``arguments`` from a terminal."""
    if (
        tool == "read_record_field"
        and "field" in arguments
        and ("id" in arguments or "record_id" in arguments)
    ):
        record = arguments.get("id")
        if record is None:
            from pdpp_gateway.ids import format_handle  # lazily: keeps --help free of middleware imports

            record = format_handle(str(arguments.get("stream")), str(arguments.get("record_id")))
        options: list[str] = []
        for key, flag in _FIELD_FLAGS:
            if arguments.get(key) is not None:
                options.append(f"{flag}={arguments[key]}")  # "=": a value may start with "-"
        positional = [str(record), str(arguments["field"])]
        if any(word.startswith("-") for word in positional):
            return shlex.join([PROG, "read-field", *options, *flags, "--", *positional])
        return shlex.join([PROG, "read-field", *positional, *options, *flags])
    return shlex.join([PROG, "call", tool, orjson.dumps(dict(arguments)).decode(), *flags])


def _json_object_at(text: str, start: int, decoder: Any) -> tuple[dict[str, Any], int] | None:
    """The JSON object starting at ``text[start]`` and where it ends, if it parses."""
    depth = 0
    in_string = escaped = False
    for index in range(start, len(text)):
        char = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
            if depth == 0:
                try:
                    value = decoder(text[start : index + 1])
                except orjson.JSONDecodeError:
                    return None
                return (value, index + 1) if isinstance(value, dict) else None
    return None


def _document_text(document: Mapping[str, Any]) -> str:
    metadata = document.get("metadata")
    lines = [
        f"id: {document.get('id')}",
        f"title: {document.get('title')}",
        f"url: {document.get('url')}",
        "metadata: " + orjson.dumps(metadata if isinstance(metadata, Mapping) else {}).decode(),
        "---",
        str(document.get("text", "")),
    ]
    return "\n".join(lines)
