"""``pdpp-gateway read-field``: read a bounded window of one record field from a terminal.

The twin of the ``read_record_field`` tool: ``pdpp-gateway read-field ID FIELD`` with
``--offset``/``--limit-chars`` to page, ``--near`` for the best passage of some words, or
``--q`` with ``--before``/``--after`` to read
around the first match; ``--connection-id`` picks the source when the id does not embed
it (as an ``ambiguous_connection`` error asks). The output names the next and previous
windows as runnable commands.
"""

from __future__ import annotations

import argparse
from typing import Any

from pdpp_gateway.commands import local_call, local_credential

HELP = "Read a bounded window of one text field of one record (the read_record_field tool)."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("id", help="record handle from search, e.g. connection_id/stream:record_id")
    parser.add_argument("field", help="top-level text field, e.g. body_text")
    parser.add_argument(
        "--offset", type=int, dest="offset_chars", help="first character of the window (default 0)"
    )
    parser.add_argument(
        "--limit-chars", type=int, help="characters in the window (default: the resource server's)"
    )
    parser.add_argument("--q", help="literal text to find (first match)")
    parser.add_argument("--near", help="words to find together: the window of their best passage")
    parser.add_argument(
        "--before", type=int, dest="before_chars", help="with --q: characters shown before the match"
    )
    parser.add_argument(
        "--after", type=int, dest="after_chars", help="with --q: characters shown after the match"
    )
    parser.add_argument("--connection-id", help="the source to read from (when the id does not embed it)")
    local_credential.add_arguments(parser, package=True)
    local_call.add_output_argument(parser)


def run(args: argparse.Namespace) -> int:
    members = local_credential.resolve_members(args, "read-field", verify=True)
    if isinstance(members, int):
        return members
    arguments: dict[str, Any] = {"id": args.id, "field": args.field}
    for name in ("connection_id", "offset_chars", "limit_chars", "q", "near", "before_chars", "after_chars"):
        if getattr(args, name) is not None:
            arguments[name] = getattr(args, name)
    return local_call.call_members(
        members,
        "read_record_field",
        arguments,
        as_json=args.json,
        flags=local_call.credential_flags(args),
        cache_root=local_credential.cache_root_of(args),
    )
