"""``pdpp-gateway search``: the search tool from a terminal, with evidence previews.

Each hit proven in a text field shows a bounded preview and the exact
``pdpp-gateway read-field ...`` command (the terminal twin of ``read_record_field``), so
a person can go from a hit to the evidence around it without exporting the record;
fetch and next-page continuations print as ``pdpp-gateway call TOOL '<json>'``.
Every printed command runs as printed.
"""

from __future__ import annotations

import argparse
from typing import Any

from pdpp_gateway.commands import local_call, local_credential

HELP = "Search granted records (same tool and text an agent gets), with evidence previews."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", help="search text")
    parser.add_argument("--stream", action="append", dest="streams", help="only this stream (repeatable)")
    parser.add_argument(
        "--mode",
        choices=["lexical", "semantic", "hybrid"],
        help="search mode (default: the resource server's, lexical on the reference)",
    )
    parser.add_argument("--limit", type=int, help="hits per page (default: the resource server's)")
    parser.add_argument("--cursor", help="next_cursor of the previous page, to continue it")
    parser.add_argument("--connection-id", help="search this source only")
    local_credential.add_arguments(parser, package=True)
    local_call.add_output_argument(parser)


def run(args: argparse.Namespace) -> int:
    members = local_credential.resolve_members(args, "search", verify=True)
    if isinstance(members, int):
        return members
    arguments: dict[str, Any] = {"query": args.query}
    for name in ("streams", "mode", "limit", "cursor", "connection_id"):
        if getattr(args, name) is not None:
            arguments[name] = getattr(args, name)
    return local_call.call_members(
        members,
        "search",
        arguments,
        as_json=args.json,
        flags=local_call.credential_flags(args),
        cache_root=local_credential.cache_root_of(args),
    )
