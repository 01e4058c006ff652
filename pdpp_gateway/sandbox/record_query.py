"""Request parameters every sandbox record route reads the same way.

Contract (reference RS rules, rs-contract.md):
- ``connection_param``: ``connection_id``, or its deprecated alias
  ``connector_instance_id`` (a ``deprecated_alias_used`` warning; the two disagreeing is
  400 ``invalid_argument``); ``by_connector`` narrows to ``connector_id`` (unknown: 404).
- ``requested_fields``: the ``fields`` projection; unknown names 400 ``unknown_field``,
  names outside the grant 403 ``field_not_granted``, or dropped silently where the
  reference does so (``drop_ungranted``, the detail route); ``fields`` with ``view`` 400.
- ``client_rules``: with ``reference_client_rules`` a client's ``filter``/``expand``/
  ``expand_limit``/``view`` is refused the reference way (400 ``invalid_request``).
- ``connection_entry``: one ``available_connections`` item of a 400/409 that asks the
  caller to pick a connection.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aiohttp import web

from pdpp_gateway.sandbox.access import Access, Source
from pdpp_gateway.sandbox.envelope import RsHttpError
from pdpp_gateway.sandbox.params import list_param
from pdpp_gateway.sandbox.store import Store


def client_rules(request: web.Request, access: Access, reference: bool) -> None:
    if not reference or access.is_owner:
        return
    q = request.query
    if any(k.startswith("filter") for k in q):
        raise RsHttpError(
            400,
            "invalid_request",
            "filter[...] is not supported for client-token reads in PDPP v0.1",
            param="filter",
        )
    if "expand" in q or "expand[]" in q:
        raise RsHttpError(
            400,
            "invalid_request",
            "expand is not supported for client-token reads in PDPP v0.1",
            param="expand",
        )
    if any(k.startswith("expand_limit") for k in q):
        raise RsHttpError(
            400,
            "invalid_request",
            "expand_limit is not supported for client-token reads",
            param="expand_limit",
        )
    if "view" in q:
        raise RsHttpError(
            400,
            "invalid_request",
            "Client record reads must use explicit fields; views are resolved when the grant is issued",
            param="view",
        )


def connection_param(request: web.Request, warnings: list[dict[str, Any]]) -> str | None:
    canonical, alias = request.query.get("connection_id"), request.query.get("connector_instance_id")
    if alias is not None:
        warnings.append(
            {
                "code": "deprecated_alias_used",
                "param": "connector_instance_id",
                "message": "connector_instance_id is deprecated; use connection_id.",
            }
        )
        if canonical is not None and canonical != alias:
            raise RsHttpError(
                400,
                "invalid_argument",
                "connection_id and connector_instance_id disagree",
                param="connection_id",
            )
    return canonical or alias


def by_connector(request: web.Request, sources: list[Source]) -> list[Source]:
    """Narrow to ``connector_id`` (the reference's owner-side connector selector)."""
    connector = request.query.get("connector_id")
    if connector is None:
        return sources
    narrowed = [s for s in sources if connector in (s.connector.key, s.connector.source_id)]
    if not narrowed:
        raise RsHttpError(404, "not_found", f"Unknown source: {connector}", param="connector_id")
    return narrowed


def requested_fields(
    request: web.Request, sources: Sequence[Source], drop_ungranted: bool = False
) -> list[str] | None:
    """The ``fields`` projection: unknown names 400; names outside the grant 403, or
    dropped silently where the reference does so (``drop_ungranted``, the detail route)."""
    names = list_param(request.query, "fields")
    if "fields" in request.query and not names:
        raise RsHttpError(400, "invalid_request", "fields must name at least one field", param="fields")
    if not names:
        return None
    if "view" in request.query:
        raise RsHttpError(400, "invalid_request", "fields cannot be combined with view", param="fields")
    for name in names:
        if all(name not in s.manifest.fields for s in sources):
            raise RsHttpError(400, "unknown_field", f"Unknown field: {name}", param="fields")
        if not drop_ungranted and not any(s.field_granted(name) for s in sources):
            raise RsHttpError(403, "field_not_granted", f"Field {name} is not granted", param="fields")
    return [name for name in names if any(s.field_granted(name) for s in sources)]


def connection_entry(store: Store, connection_id: str) -> dict[str, Any]:
    connection = store.catalog.connection(connection_id)
    entry: dict[str, Any] = {"connection_id": connection_id}
    if connection and connection.display_name:
        entry["display_name"] = connection.display_name
    return entry
