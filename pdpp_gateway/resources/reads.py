"""Resource reads as pipeline calls: a URI parsed once, routed like a tool call, its RS
failures worded by the same stage.

Contract (no SDK: ``resources`` puts the answers on the wire):

- A read is a ``ToolCall`` named for its URI's kind (``STREAM``, ``RECORD``, ``BLOB``;
  ``LIST`` for ``resources/list``) with ``{"uri": ...}`` as its arguments, run through
  ``PIPELINE``: its own stage list, of the tool pipeline's stages where they apply:

  1. ``ValidateArguments`` with a parser per kind: the URI becomes a ``ResourceArgs`` (the RS
     path and query to read; its stream and connection for routing) once, its segments
     checked for traversal before any RS call (``ids.check_segment``, ``ids.parse_handle``);
  2. ``FanOut`` for a package caller, by the package's own rules (``package.member_context``,
     ``package.members_granting``): a record or blob goes to the member its connection (or
     its stream) names; stream metadata and the list ask every member granting the
     stream (all of them when none does, so the RS words the refusal). Several answers
     are merged in member order; for metadata any failure is the answer, for the list
     the failures ride along (``FAILED``) unless nothing answered;
  3. ``upstream_errors`` (the tool pipeline's): an RS failure becomes its ``ToolError``
     (``render.upstream.tool_error``), exactly as a tool call's would;
  4. ``read_upstream``: one GET, JSON bodies under ``structured[BODIES]``, a blob's bytes in
     ``annotations[BLOB_DATA]`` (refused past ``MAX_BLOB_BYTES`` rather than cut).

- Every refusal is a ``ToolError``; ``resources`` turns it into the JSON-RPC error.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple
from urllib.parse import unquote

from mcp_gateway_middleware import (
    FanOut,
    Outcome,
    ToolError,
    ToolResult,
    ValidateArguments,
    compose,
    gateway_error,
)

from pdpp_gateway.context import Call, CallNext, Stage
from pdpp_gateway.ids import RECORD_URI_PREFIX, check_segment, parse_handle
from pdpp_gateway.package.fan_out import for_member, member_context, members_granting, stream_not_granted
from pdpp_gateway.rs.client import rs_path
from pdpp_gateway.tools.args import Pairs, args_of
from pdpp_gateway.tools.pipeline import upstream_errors

STREAM_PREFIX: Final = "pdpp://stream/"
BLOB_PREFIX: Final = "pdpp://blob/"
STREAM: Final = "resource:stream"
RECORD: Final = "resource:record"
BLOB: Final = "resource:blob"
LIST: Final = "resource:list"
BODIES: Final = "bodies"
BLOB_DATA: Final = "blob"  # annotations key of a blob read's bytes (an RsBlob)
FAILED: Final = "failed_sources"
MAX_BLOB_BYTES: Final = 8 * 1024 * 1024
READABLE: Final = "pdpp://stream/{name}, pdpp://record/{handle}, pdpp://blob/{connection_id}/{blob_id}"


class ResourceArgs(NamedTuple):
    """One resource read: where it routes (``stream``, ``connection_id``, as a tool's parsed
    arguments name them), and what to GET."""

    stream: str | None
    connection_id: str | None
    path: str
    query: Pairs
    every_holder: bool = False  # ask every package member granting ``stream``


def kind_of(uri: str) -> str | None:
    """The call name for ``uri``'s kind of resource, or None for a URI no read serves."""
    for prefix, kind in ((STREAM_PREFIX, STREAM), (RECORD_URI_PREFIX, RECORD), (BLOB_PREFIX, BLOB)):
        if uri.startswith(prefix):
            return kind
    return None


def unknown_uri(uri: str) -> ToolError:
    return gateway_error(
        "invalid_uri", f"Unknown resource URI {uri[:200]!r}; readable: {READABLE}.", param="uri"
    )


def _parse_stream(arguments: Mapping[str, Any]) -> ResourceArgs:
    name = check_segment(unquote(arguments["uri"][len(STREAM_PREFIX) :]), "stream name", param="uri")
    return ResourceArgs(
        stream=name, connection_id=None, path=rs_path("v1", "streams", name), query=(), every_holder=True
    )


def _parse_record(arguments: Mapping[str, Any]) -> ResourceArgs:
    ref = parse_handle(arguments["uri"], param="uri")
    return ResourceArgs(
        stream=ref.stream,
        connection_id=ref.connection_id,
        path=rs_path("v1", "streams", ref.stream, "records", ref.record_id),
        query=(("connection_id", ref.connection_id),) if ref.connection_id else (),
    )


def _parse_blob(arguments: Mapping[str, Any]) -> ResourceArgs:
    parts = arguments["uri"][len(BLOB_PREFIX) :].split("/")
    if len(parts) not in (1, 2):
        raise gateway_error(
            "invalid_uri", "Blob URI must be pdpp://blob/{connection_id}/{blob_id}.", param="uri"
        )
    segments = [check_segment(unquote(part), "blob URI segment", param="uri") for part in parts]
    connection_id = segments[0] if len(segments) == 2 else None
    return ResourceArgs(
        stream=None,
        connection_id=connection_id,
        path=rs_path("v1", "blobs", segments[-1]),
        query=(("connection_id", connection_id),) if connection_id else (),
    )


def _parse_list(arguments: Mapping[str, Any]) -> ResourceArgs:
    return ResourceArgs(stream=None, connection_id=None, path="/v1/streams", query=(), every_holder=True)


PARSERS: Final = {STREAM: _parse_stream, RECORD: _parse_record, BLOB: _parse_blob, LIST: _parse_list}


def plan(call: Call) -> Sequence[Call] | None:
    """A package caller's read: to the member it names, or to every member granting its stream."""
    context = call.context
    if not context.package:
        return None
    args = args_of(call, ResourceArgs)
    if args.every_holder:
        holders = members_granting(context, args.stream)
        if not holders:
            raise stream_not_granted(str(args.stream))
        return [dataclasses.replace(call, context=for_member(context, member)) for member in holders]
    return [dataclasses.replace(call, context=member_context(context, args.connection_id, args.stream))]


def merge(call: Call, sub_calls: Sequence[Call], outcomes: Sequence[Outcome]) -> ToolResult:
    ok = [outcome for outcome in outcomes if isinstance(outcome, ToolResult)]
    failed = [outcome for outcome in outcomes if isinstance(outcome, ToolError)]
    if failed and (call.name != LIST or not ok):
        raise failed[0]
    bodies = [body for result in ok for body in result.structured[BODIES]]
    return ToolResult(structured={BODIES: bodies}, annotations={FAILED: failed})


async def read_upstream(call: Call) -> ToolResult:
    """The one GET of a resource read."""
    args = args_of(call, ResourceArgs)
    if call.name == BLOB:
        blob = await call.context.rs.get_bytes(args.path, args.query, max_bytes=MAX_BLOB_BYTES)
        if blob.truncated:
            size = f"{blob.total_bytes} bytes" if blob.total_bytes is not None else "too large"
            raise gateway_error(
                "blob_too_large",
                f"Blob {args.path.rsplit('/', 1)[-1]} is {size}; resource reads stop at {MAX_BLOB_BYTES} "
                "bytes. Use its record's metadata (mime type, size) instead.",
                param="uri",
            )
        return ToolResult(structured={}, annotations={BLOB_DATA: blob})
    response = await call.context.rs.get_json(args.path, args.query)
    return ToolResult(structured={BODIES: [response.body]})


def build_resource_pipeline() -> CallNext:
    stages: list[Stage] = [ValidateArguments({}, parsers=PARSERS), FanOut(plan, merge), upstream_errors]
    return compose(stages, read_upstream)


PIPELINE: Final = build_resource_pipeline()
