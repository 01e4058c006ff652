"""The expand gate: refuse ``expand`` on streams whose schema advertises no such relation.

Contract (spec 004): before a records or record read that asks for ``expand``, read
``GET /v1/schema?view=compact&stream=S[&connection_id=C]`` through the caller's memo
(``rs.memo``: learned once per caller, kept at most a minute, the bearer verdict cache's
bound, so a schema change is enforced within it). If the stream is found and none of its
rows advertise a requested relation in ``expand_capabilities``, raise a typed
``invalid_expand`` naming the stream and the relations. If the schema read fails, or
the stream is not in it, defer to the RS (fail open): the gate may only narrow, never
widen, and the RS stays the authority.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mcp_gateway_middleware import ToolError, gateway_error

from pdpp_gateway.context import RsReader
from pdpp_gateway.rs.errors import RsError
from pdpp_gateway.rs.memo import memoised_read

_log = logging.getLogger(__name__)


async def check_expand(
    rs: RsReader, stream: str, relations: Sequence[str], connection_id: str | None
) -> None:
    """Raise ``invalid_expand`` when ``stream`` advertises none of ``relations``."""
    if not relations:
        return
    query = [("view", "compact"), ("stream", stream)]
    if connection_id:
        query.append(("connection_id", connection_id))
    try:
        response = await memoised_read(rs, "/v1/schema", query)
    except RsError as error:
        _log.info("expand gate: schema unavailable (%s); deferring to the RS", error.code)
        return
    rows = [row for row in _stream_rows(response.body) if _row_name(row) == stream]
    if not rows:
        return
    advertised = {name for row in rows for name in _relation_names(row)}
    missing = [relation for relation in relations if relation not in advertised]
    if missing:
        raise _refusal(stream, missing, advertised)


def _refusal(stream: str, missing: Sequence[str], advertised: set[str]) -> ToolError:
    if advertised:
        offer = f"it advertises: {', '.join(sorted(advertised))}"
    else:
        offer = "it has no advertised expand_capabilities"
    return gateway_error(
        "invalid_expand",
        f"Stream {stream!r} cannot expand {', '.join(missing)}: {offer}. "
        "Check schema(stream) expand_capabilities (GET /v1/schema) before passing expand.",
        param="expand",
    )


def _stream_rows(body: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    document = body.get("data") if isinstance(body.get("data"), Mapping) else body
    assert isinstance(document, Mapping)
    for connector in document.get("connectors") or ():
        if isinstance(connector, Mapping):
            yield from (s for s in connector.get("streams") or () if isinstance(s, Mapping))
    yield from (s for s in document.get("streams") or () if isinstance(s, Mapping))


def _row_name(row: Mapping[str, Any]) -> object:
    return row.get("name", row.get("stream"))


def _relation_names(row: Mapping[str, Any]) -> Iterator[str]:
    for capability in row.get("expand_capabilities") or ():
        if isinstance(capability, Mapping):
            name = capability.get("name", capability.get("relation"))
            if isinstance(name, str) and capability.get("usable", True) is not False:
                yield name
