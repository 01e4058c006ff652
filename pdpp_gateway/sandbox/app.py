"""The sandbox RS application: routes, state and the wire conventions, wired once.

Contract: ``create_app(config)`` returns an aiohttp application serving the PDPP ``/v1``
read surface, the discovery documents, ``POST /introspect`` and the authorization server
(``oauth``: metadata, registration, consent, tokens) over the sample data
(loaded into SQLite when the app starts, closed when it stops). ``app[CALLS]`` records
every ``/v1`` request. State lives under typed ``AppKey``s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

from aiohttp import web

from pdpp_gateway.sandbox import aggregate, blobs, discovery, oauth, record_detail, records, schema, search
from pdpp_gateway.sandbox.access import CONNECTION_SUFFIX, STATUS_OVERRIDES, Access, authenticate
from pdpp_gateway.sandbox.config import SandboxConfig
from pdpp_gateway.sandbox.envelope import CALLS, Call, envelope_middleware
from pdpp_gateway.sandbox.store import Store

CONFIG: Final = web.AppKey("config", SandboxConfig)
STORE: Final = web.AppKey("store", Store)

Route = Callable[[web.Request, Access, Store, SandboxConfig], Awaitable[web.StreamResponse]]


def _authenticated(route: Route) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handler(request: web.Request) -> web.StreamResponse:
        store = request.app[STORE]
        return await route(request, Access(authenticate(request), store.catalog), store, request.app[CONFIG])

    return handler


def create_app(config: SandboxConfig | None = None) -> web.Application:
    settings = config or SandboxConfig()
    app = web.Application(middlewares=[envelope_middleware(settings.public_origin)])
    app[CONFIG] = settings
    app[CALLS] = []
    app[STATUS_OVERRIDES] = {}
    app[CONNECTION_SUFFIX] = settings.connection_suffix

    async def storage(app: web.Application) -> AsyncIterator[None]:
        app[STORE] = Store.open(settings)
        yield
        app[STORE].close()

    app.cleanup_ctx.append(storage)
    reference = settings.reference_client_rules
    get = app.router.add_get
    get("/v1/schema", _authenticated(lambda r, a, s, c: schema.get_schema(r, a, s, reference)))
    get("/v1/streams", _authenticated(lambda r, a, s, c: schema.list_streams(r, a, s)))
    get("/v1/connectors", _authenticated(lambda r, a, s, c: schema.list_connectors(r, a, s)))
    get("/v1/streams/{stream}", _authenticated(lambda r, a, s, c: schema.get_stream(r, a, s, reference)))
    get(
        "/v1/streams/{stream}/records",
        _authenticated(lambda r, a, s, c: records.list_records(r, a, s, reference)),
    )
    get(
        "/v1/streams/{stream}/records/{record_id}",
        _authenticated(lambda r, a, s, c: record_detail.get_record(r, a, s, reference)),
    )
    get(
        "/v1/streams/{stream}/records/{record_id}/field-window",
        _authenticated(lambda r, a, s, c: record_detail.field_window(r, a, s)),
    )
    get(
        "/v1/streams/{stream}/aggregate",
        _authenticated(lambda r, a, s, c: aggregate.aggregate(r, a, s, reference)),
    )
    for mode, path in (
        ("lexical", "/v1/search"),
        ("semantic", "/v1/search/semantic"),
        ("hybrid", "/v1/search/hybrid"),
    ):
        get(path, _authenticated(lambda r, a, s, c, m=mode: search.search(r, a, s, reference, m)))  # type: ignore[misc]
    get("/v1/blobs/{blob_id}", _authenticated(lambda r, a, s, c: blobs.get_blob(r, a, s)))

    async def resource_metadata(request: web.Request) -> web.Response:
        return discovery.protected_resource(request, settings)

    async def mcp_resource_metadata(request: web.Request) -> web.Response:
        return discovery.protected_resource_mcp(request, settings)

    async def index(request: web.Request) -> web.Response:
        return discovery.root_index(request, settings)

    async def introspect(request: web.Request) -> web.Response:
        return await discovery.introspect(request, settings, request.app[STORE].catalog)

    get("/.well-known/oauth-protected-resource", resource_metadata)
    get("/.well-known/oauth-protected-resource/mcp", mcp_resource_metadata)
    get("/", index)
    app.router.add_post("/introspect", introspect)
    oauth.install(app, settings, lambda request: request.app[STORE].catalog)
    return app


__all__ = ["CALLS", "CONFIG", "STATUS_OVERRIDES", "STORE", "Call", "create_app"]
