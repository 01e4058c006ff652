"""Package fan-out: one caller, several child grants (an ``mcp_package`` token, or a local
package of cached grants), each read with that child's OWN token.

Routing (``plan``), for a context whose ``package`` is non-empty, by the call's parsed
arguments (``tools.args.reads_from``: the stream and the connection it names; a record
handle is parsed once, by validation):

- a ``connection_id`` (argument, or embedded in a record handle) routes to the member
  whose grant lists it (preferring one that grants the stream); none → 404
  ``connection_not_found`` listing the members. A one-member package always routes.
- ``search`` fans out to every member, with ``streams`` narrowed to each member's
  granted streams; members granting none of the requested streams are not called. A
  merged page's ``next_cursor`` continues every member with hits left
  (``package.search``); such a cursor with ``connection_id`` is refused as
  ``invalid_cursor`` (it continues several sources, not one).
- ``schema`` fans out to the members that may hold the stream (all for the index);
  ``detail: "full"`` must resolve to one member, else 409 ``ambiguous_schema_detail``.
- a call on one stream (``query_records``, ``aggregate``, a handle's stream) routes to the
  one member granting that stream; when several do, a typed ``ambiguous_connection``
  lists only their connections (every connection each grant lists); when none does, 403
  ``context.stream_not_allowed`` (``stream_not_granted``), as one grant's RS answers it
  (schema and resource reads alike).
- anything else stays unrouted: the context's ``UnroutedRs`` answers a typed
  ``ambiguous_connection`` built from membership alone (no health probes).

Resource reads route by the same rules (``member_context``): the connection a record or
blob URI names, else the one member granting the stream; stream metadata and the
resource list ask every member granting the stream (``members_granting``).

A fanned-out call gives each member at most ``member_seconds()`` (6 s unless
``PDPP_PACKAGE_MEMBER_SECONDS`` says otherwise): a member still reading then is cut off as an
``upstream_timeout`` naming it, and the merge answers with what the others found.

Merging (``merge``): search pages are merged by ``package.search`` (round-robin by each
member's own rank in member order, de-duplicated by id, at most the caller's ``limit``,
``meta.package.order`` and ``source_mix``). Schemas concatenate connectors. A failed member
becomes a ``source_unavailable`` warning and is listed under ``unavailable_connections``,
never as a usable option; if every member failed, the first member's error is the answer.
"""

from __future__ import annotations

import dataclasses
import enum
import os
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Final

from mcp_gateway_middleware import Deadline, FanOut, Outcome, Parser, ToolError, ToolResult

from pdpp_gateway.caller import Caller, TokenKind
from pdpp_gateway.context import (
    MAX_LISTED_CONNECTIONS,
    Call,
    GatewayContext,
    PackageMember,
    ambiguous_connection,
)
from pdpp_gateway.package.cursor import invalid_cursor, is_package_cursor
from pdpp_gateway.package.members import member_step, source_tag
from pdpp_gateway.package.search import is_continuation, merge_search, search_calls
from pdpp_gateway.tools.args import SchemaArgs, SearchArgs, reads_from

MEMBER_SECONDS: Final = 6.0  # under the RS client's 20 s read bound: a stalled member is cut off


class PackageRoute(enum.Enum):
    """How a tool's call reaches a package's members (each tool's record names one)."""

    SCHEMA = "schema"  # every member that may hold the stream (all for the index), schemas merged
    SEARCH = "search"  # every member, pages merged by ``package.search``
    STREAM = "stream"  # the one member granting ``stream``
    HANDLE = "handle"  # the member of the record handle ``id``, else as STREAM


Routes = Mapping[str, PackageRoute]
Parsers = Mapping[str, Parser]


def fan_out_stage(routes: Routes, parsers: Parsers) -> FanOut[GatewayContext]:
    """The pipeline stage that applies this module's routing and merging to the tools
    ``routes`` names (by tool name); ``parsers`` parse a member's own arguments where a
    route gives it other ones (a search's streams narrowed to what the member grants)."""

    def continues(call: Call) -> bool:
        return routes.get(call.name) is PackageRoute.SEARCH and is_continuation(call)

    return FanOut(
        partial(plan, routes=routes, parsers=parsers),
        partial(merge, routes=routes),
        merge_single=continues,
        deadline=Deadline(member_seconds(), _late),
    )


def member_seconds(env: Mapping[str, str] | None = None) -> float:
    """How long one member of a fanned-out call may take (``PDPP_PACKAGE_MEMBER_SECONDS``,
    default ``MEMBER_SECONDS``): shorter than an RS read's own bound, so a stalled member
    costs the merged answer that long at most, and the others' hits still arrive."""
    raw = (os.environ if env is None else env).get("PDPP_PACKAGE_MEMBER_SECONDS", "")
    try:
        seconds = float(raw) if raw.strip() else MEMBER_SECONDS
    except ValueError:
        return MEMBER_SECONDS
    return seconds if 0 < seconds <= MEMBER_SECONDS * 5 else MEMBER_SECONDS


def _late(call: Call, seconds: float) -> ToolError:
    """A member that did not answer within the deadline, named, as an upstream timeout."""
    member = call.context.source
    name = (member.display_name or member.connector_key or member.grant_id) if member else None
    return ToolError(
        {
            "type": "api_error",
            "code": "upstream_timeout",
            "message": f"Source {name or 'a package member'} did not answer within {seconds:g} s; "
            "the other sources' answer stands without it.",
        }
    )


def plan(call: Call, *, routes: Routes, parsers: Parsers) -> Sequence[Call] | None:
    context = call.context
    members = context.package
    if not members:
        return None
    route = routes.get(call.name)
    where = call.parsed
    stream, target = reads_from(where)
    if target is not None:
        if isinstance(where, SearchArgs) and is_package_cursor(where.cursor):
            raise invalid_cursor(
                "it continues a merged search of several sources; drop connection_id to follow it, "
                "or drop cursor to page this source alone"
            )
        return [_routed(call, _member_for(members, target, stream))]
    if len(members) == 1 and not (route is PackageRoute.SEARCH and is_continuation(call)):
        return [_routed(call, members[0])]
    if route is PackageRoute.SEARCH:
        parse = parsers[call.name]

        def member_call(parent: Call, member: PackageMember, given: Mapping[str, Any]) -> Call:
            return _routed(parent.with_arguments(given, parse(given)), member)

        return search_calls(call, members, member_call)
    if stream is not None and not any(_grants_stream(m, stream) for m in members):
        raise stream_not_granted(stream)
    if stream is not None and route is not PackageRoute.SCHEMA:
        holders = [m for m in members if _grants_stream(m, stream)]
        if len(holders) == 1:
            return [_routed(call, holders[0])]
        if 1 < len(holders) < len(members):
            raise ambiguous_connection(holders)
    if route is PackageRoute.SCHEMA:
        candidates = [m for m in members if stream is None or _grants_stream(m, stream)]
        if isinstance(where, SchemaArgs) and where.full and len(candidates) > 1:
            raise _ambiguous_schema_detail(candidates, str(stream))
        return [_routed(call, member) for member in candidates]
    return None


def merge(
    call: Call, sub_calls: Sequence[Call], outcomes: Sequence[Outcome], *, routes: Routes
) -> ToolResult:
    members = call.context.package
    sources = [_source_of(sub) for sub in sub_calls]
    ok = [(m, o) for m, o in zip(sources, outcomes, strict=True) if isinstance(o, ToolResult)]
    failed = [(m, o) for m, o in zip(sources, outcomes, strict=True) if isinstance(o, ToolError)]
    if outcomes and not ok:
        raise failed[0][1]
    if routes.get(call.name) is PackageRoute.SEARCH:
        return merge_search(call, members, sources, outcomes)
    return _merge_schema(ok, failed, len(members), call.context)


def stream_not_granted(stream: str) -> ToolError:
    """403 ``context.stream_not_allowed``: no member grants ``stream``, answered as one grant's
    RS answers it (``schema()`` lists what is granted), not as a choice of connections."""
    return ToolError(
        {
            "type": "permission_error",
            "code": "context.stream_not_allowed",
            "message": f"Stream {stream} is not in this grant package",
            "param": "stream",
        },
        http_status=403,
    )


# --- routing -----------------------------------------------------------------------


def _grants_stream(member: PackageMember, stream: str) -> bool:
    return "*" in member.streams or stream in member.streams


def _member_for(members: Sequence[PackageMember], connection_id: str, stream: str | None) -> PackageMember:
    holders = [m for m in members if connection_id in m.connection_ids]
    if stream is not None:
        holders = [m for m in holders if _grants_stream(m, stream)] or holders
    if not holders:
        raise ToolError(
            {
                "type": "not_found_error",
                "code": "connection_not_found",
                "message": f"connection_id {connection_id!r} is not part of this grant package"
                + (f" for stream {stream!r}" if stream else "")
                + ". Use one of available_connections, or call schema() for the full index.",
                "param": "connection_id",
                "available_connections": _listing(members),
                "available_connection_count": len(members),
            },
            http_status=404,
        )
    return holders[0]


def member_context(context: GatewayContext, connection_id: str | None, stream: str | None) -> GatewayContext:
    """The context of the member a read names (a resource URI's connection, else the one
    member granting ``stream``); unchanged, so its read is refused as ambiguous, when
    that does not pick one. ``connection_not_found`` when the connection is not granted,
    ``stream_not_granted`` when no member grants the stream."""
    members = context.package
    if not members:
        return context
    if connection_id is not None:
        return for_member(context, _member_for(members, connection_id, stream))
    holders = members_granting(context, stream)
    if not holders:
        raise stream_not_granted(str(stream))
    return for_member(context, holders[0]) if len(holders) == 1 else context


def members_granting(context: GatewayContext, stream: str | None) -> list[PackageMember]:
    """The package members whose grant may hold ``stream`` (every member for ``None``)."""
    return [m for m in context.package if stream is None or _grants_stream(m, stream)]


def _routed(call: Call, member: PackageMember) -> Call:
    return dataclasses.replace(call, context=for_member(call.context, member))


def for_member(parent: GatewayContext, member: PackageMember) -> GatewayContext:
    """The context that reads from ``member`` alone, with its own token and origin."""
    return dataclasses.replace(
        parent,
        rs=member.rs,
        provider_url=member.provider_url or parent.provider_url,
        caller=Caller(TokenKind.CLIENT, grant_id=member.grant_id),
        source=member,
    )


def _source_of(call: Call) -> PackageMember:
    source = call.context.source
    assert source is not None, "package sub-calls are always routed"
    return source


def _listing(members: Sequence[PackageMember]) -> list[dict[str, Any]]:
    return [m.connection_entry() for m in members[:MAX_LISTED_CONNECTIONS]]


def _ambiguous_schema_detail(candidates: Sequence[PackageMember], stream: str) -> ToolError:
    return ToolError(
        {
            "type": "api_error",
            "code": "ambiguous_schema_detail",
            "message": f"Stream {stream!r} exists in several sources of this package; pass connection_id "
            'with detail: "full".',
            "param": "connection_id",
            "retry_with": "connection_id",
            "available_connections": _listing(candidates),
            "available_connection_count": len(candidates),
        },
        http_status=409,
    )


# --- merging -----------------------------------------------------------------------


def _unavailable(
    failed: Sequence[tuple[PackageMember, ToolError]], provider_url: str
) -> list[dict[str, Any]]:
    return [
        {
            **source_tag(member),
            "error_code": error.code,
            "next_step": member_step(member, error, provider_url)
            or "Choose another connection, or retry later.",
        }
        for member, error in failed
    ]


def _warnings(failed: Sequence[tuple[PackageMember, ToolError]]) -> list[dict[str, Any]]:
    return [
        {
            "code": "source_unavailable",
            "message": f"Source {member.connection_entry()['connection_id'] or member.grant_id} failed with "
            f"{error.code}; its results are missing.",
            "detail": source_tag(member),
        }
        for member, error in failed
    ]


def _merge_schema(
    ok: Sequence[tuple[PackageMember, ToolResult]],
    failed: Sequence[tuple[PackageMember, ToolError]],
    member_count: int,
    context: GatewayContext,
) -> ToolResult:
    kind = context.caller.kind
    connectors: list[Any] = []
    extras: dict[str, Any] = {}
    for member, result in ok:
        document = _data(result)
        for connector in document.get("connectors") or ():
            if isinstance(connector, Mapping):
                connectors.append(
                    {**connector, "source": {**source_tag(member), **(connector.get("source") or {})}}
                )
        for key, value in document.items():
            if key not in {"connectors", "bearer", "connector_count", "stream_count", "object"}:
                extras.setdefault(key, value)
    document = {
        "object": "schema",
        # what the caller is: an mcp_package token, or a local package of client grants
        "bearer": {"token_kind": str(kind), "scope": "package"},
        **extras,
        "connector_count": len(connectors),
        "stream_count": sum(len(c.get("streams") or ()) for c in connectors),
        "connectors": connectors,
        "package": {"member_count": member_count, "partial": bool(failed)},
    }
    if failed:
        document["unavailable_connections"] = _unavailable(failed, context.provider_url)
        document["warnings"] = _warnings(failed)
    provider_url = ok[0][1].structured.get("provider_url") if ok else None
    return ToolResult(structured={"data": document, "provider_url": provider_url, "request_id": None})


def _data(result: ToolResult) -> Mapping[str, Any]:
    data = result.structured.get("data")
    return data if isinstance(data, Mapping) else {}
