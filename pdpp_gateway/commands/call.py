"""``pdpp-gateway call TOOL JSON``: run any read tool with the JSON arguments a result showed.

The terminal twin of an MCP ``tools/call``: ``TOOL`` is one of the six read tools and
``JSON`` its arguments object, exactly as printed after the tool name in a result (for
example ``pdpp-gateway call fetch '{"id":"cin_a/messages:m1"}'``). Same pipeline, same
validation, same text as an agent gets.
"""

from __future__ import annotations

import argparse

import orjson

from pdpp_gateway.commands import local_call, local_credential
from pdpp_gateway.refusals import ExitCode

HELP = "Run one read tool with a JSON arguments object (as shown in results), e.g. call fetch '{\"id\":...}'."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tool", choices=local_call.TOOLS, help="read tool name")
    parser.add_argument("arguments", nargs="?", default="{}", help="JSON object of tool arguments")
    local_credential.add_arguments(parser, package=True)
    local_call.add_output_argument(parser)


def run(args: argparse.Namespace) -> int:
    try:
        arguments = orjson.loads(args.arguments)
    except orjson.JSONDecodeError as error:
        local_credential.say(f'ARGUMENTS is not JSON ({error}); pass one object, e.g. \'{{"id": "..."}}\'.')
        return ExitCode.USAGE
    if not isinstance(arguments, dict):
        local_credential.say('ARGUMENTS must be a JSON object, e.g. \'{"id": "..."}\'.')
        return ExitCode.USAGE
    members = local_credential.resolve_members(args, "call", verify=True)
    if isinstance(members, int):
        return members
    return local_call.call_members(
        members,
        args.tool,
        arguments,
        as_json=args.json,
        flags=local_call.credential_flags(args),
        cache_root=local_credential.cache_root_of(args),
    )
