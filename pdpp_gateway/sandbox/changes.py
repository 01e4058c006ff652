"""The changes feed of a record list: ``?changes_since=...`` on one connection.

Contract (reference RS rules, rs-contract.md): ``changes_since`` needs one connection
(else 400 ``invalid_argument`` listing them), refuses ``sort``/``order``/``count``/
``window``/``expand``, applies ``filter`` and ``fields`` like a list (a tombstone appears
only if the record's last data matched), pages with ``next_cursor``, always returns
``next_changes_since`` and yields tombstones. A malformed token (or a position this
history never reached) is 400 ``invalid_cursor``, a token from another history epoch
(``HISTORY_EPOCH``) 410 ``cursor_expired``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from aiohttp import web

from pdpp_gateway.sandbox.access import Access, Source
from pdpp_gateway.sandbox.envelope import RsHttpError, finalise, json_response, next_link
from pdpp_gateway.sandbox.params import decode_token, encode_token, filters, page_limit
from pdpp_gateway.sandbox.record_json import record_json
from pdpp_gateway.sandbox.record_query import connection_entry, requested_fields
from pdpp_gateway.sandbox.store import Store

HISTORY_EPOCH: Final = "e2026"


def changes_since(
    request: web.Request,
    sources: Sequence[Source],
    store: Store,
    access: Access,
    warnings: list[dict[str, Any]],
) -> web.Response:
    for clash in ("sort", "order", "count", "window"):
        if clash in request.query:
            raise RsHttpError(
                400, "invalid_request", f"changes_since cannot be combined with {clash}", param=clash
            )
    if "expand" in request.query or "expand[]" in request.query:
        raise RsHttpError(
            400, "invalid_expand", "changes_since cannot be combined with expand", param="expand"
        )
    connections = [(s, c) for s in sources for c in s.connections]
    if len(connections) != 1:
        raise RsHttpError(
            400,
            "invalid_argument",
            "changes_since reads one connection; pass connection_id.",
            param="changes_since",
            retry_with="connection_id",
            available_connections=[connection_entry(store, c) for _, c in connections],
        )
    source, connection = connections[0]
    stream = source.manifest.name
    limit = page_limit(request.query, warnings)
    fields = requested_fields(request, sources)
    conditions = filters(request.query, source)
    newest = store.max_seq()
    if "cursor" in request.query:
        after, horizon = _changes_page(request.query["cursor"], stream, connection, newest)
    else:
        raw = request.query["changes_since"]
        after = 0 if raw == "beginning" else _changes_token(raw, newest)
        horizon = newest
    rows = store.changes(stream, connection, after, horizon, limit + 1, conditions)
    more = len(rows) > limit
    rows = rows[:limit]
    data = [
        {
            "object": "record",
            "id": r.record_id,
            "stream": r.stream,
            "deleted": True,
            "deleted_at": r.deleted_at,
            "emitted_at": r.emitted_at,
        }
        if r.deleted_at
        else record_json(r, source, store, fields=fields)
        for r in rows
    ]
    body: dict[str, Any] = {
        "object": "list",
        "url": request.path,
        "has_more": more,
        "data": data,
        "next_changes_since": encode_token({"v": 1, "epoch": HISTORY_EPOCH, "seq": horizon}),
    }
    next_url = None
    if more:
        body["next_cursor"] = encode_token(
            {
                "kind": "page",
                "session": "changes",
                "stream": stream,
                "connection_id": connection,
                "after": rows[-1].seq,
                "horizon": horizon,
            }
        )
        next_url = next_link(request, body["next_cursor"])
    return json_response(finalise(request, body, is_list=True, next_url=next_url, warnings=warnings))


def _seq(value: object) -> int | None:
    """A history position: a non-negative integer (not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _changes_page(raw: str, stream: str, connection: str, newest: int) -> tuple[int, int]:
    """(after, horizon) of a changes-session cursor; junk, or another stream's, is 400."""
    page = decode_token(raw, "cursor", hint="restart from next_changes_since")
    after, horizon = _seq(page.get("after")), _seq(page.get("horizon"))
    if (
        page.get("kind") != "page"
        or page.get("session") != "changes"
        or page.get("stream") != stream
        or page.get("connection_id") != connection
        or after is None
        or horizon is None
        or not after <= horizon <= newest
    ):
        raise RsHttpError(
            400,
            "invalid_cursor",
            "Not a changes cursor for this stream; restart from next_changes_since.",
            param="cursor",
        )
    return after, horizon


def _changes_token(raw: str, newest: int) -> int:
    """The sequence a ``next_changes_since`` token resumes after: junk 400, another epoch 410."""
    malformed = RsHttpError(
        400,
        "invalid_cursor",
        'Malformed changes_since; use "beginning" or a next_changes_since value.',
        param="changes_since",
    )
    token = decode_token(raw, "changes_since", hint='use "beginning" or a next_changes_since value')
    version, epoch, seq = token.get("v"), token.get("epoch"), _seq(token.get("seq"))
    if type(version) is not int or version != 1 or not isinstance(epoch, str) or seq is None:
        raise malformed
    if epoch != HISTORY_EPOCH:
        raise RsHttpError(
            410,
            "cursor_expired",
            "This changes_since is older than the retained history; resync with changes_since=beginning.",
            param="changes_since",
        )
    if seq > newest:
        raise malformed  # never issued: this history has not reached that point
    return seq
