"""``GET /v1/blobs/{blob_id}``: raw bytes, only through a record the caller may read.

Contract: a blob is served only if a record visible to the caller (its stream,
connection and the blob field all granted) references it; otherwise 404
``blob_not_found``. Referenced from several readable connections without
``connection_id``: 409 ``ambiguous_connection``. Headers: ``Content-Type``,
``Content-Length``, ``Cache-Control: private, no-store``, ``X-Content-Type-Options:
nosniff``, and ``Content-Disposition: attachment`` unless PDF or a common image.
"""

from __future__ import annotations

from aiohttp import web

from pdpp_gateway.sandbox.access import Access
from pdpp_gateway.sandbox.envelope import RsHttpError
from pdpp_gateway.sandbox.store import Store

INLINE_TYPES = ("application/pdf", "image/png", "image/jpeg", "image/gif", "image/webp")


async def get_blob(request: web.Request, access: Access, store: Store) -> web.StreamResponse:
    blob_id = request.match_info["blob_id"]
    connection_id = request.query.get("connection_id")
    readable = set()
    for record in store.blob_holders(blob_id):
        for source in access.sources(record.stream, record.connection_id):
            if source.connector.key != record.connector:
                continue
            blob_fields = [
                f for f, v in record.data.items() if isinstance(v, dict) and v.get("blob_id") == blob_id
            ]
            if any(source.field_granted(f) for f in blob_fields):
                readable.add(record.connection_id)
    if connection_id is not None:
        readable &= {connection_id}
    stored = store.blob(blob_id)
    if not readable or stored is None:
        raise RsHttpError(404, "blob_not_found", "Blob not found")
    if len(readable) > 1:
        raise RsHttpError(
            409,
            "ambiguous_connection",
            "This blob is referenced from several connections; pass connection_id.",
            param="connection_id",
            retry_with="connection_id",
            available_connections=[{"connection_id": c} for c in sorted(readable)],
        )
    mime, content = stored
    headers = {"Cache-Control": "private, no-store", "X-Content-Type-Options": "nosniff"}
    if mime not in INLINE_TYPES:
        headers["Content-Disposition"] = "attachment"
    return web.Response(body=content, content_type=mime, headers=headers)
