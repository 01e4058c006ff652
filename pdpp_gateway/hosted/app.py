"""The hosted gateway's aiohttp application, wired once from ``HostedSettings``.

Contract: ``create_app(settings)`` returns an application serving

- ``POST /mcp``: header checks → bearer check → body checks → the Streamable HTTP
  endpoint (any other method answers a JSON-RPC 405). A request malformed in its
  headers never causes an upstream call; a body is read only once its bearer is
  accepted (so an unauthenticated caller never makes the gateway buffer or parse one),
  and a malformed body costs at most the bearer check, never a read. Every ``/mcp`` refusal is a JSON-RPC
  error object (``refusals``); every ``/mcp`` answer carries the icon ``Link`` header and
  is counted once with its outcome (``refused`` when it was answered before the endpoint);
- ``/.well-known/oauth-protected-resource/mcp``, ``/icon.svg``, ``/connect``,
  ``/llms.txt``; behind a path prefix (``origin.OriginPolicy``) the metadata is also served
  at ``/.well-known/oauth-protected-resource<prefix>/mcp``, the path RFC 9728 gives it
  (``public_urls.metadata_url``), for the request's own prefix only (any other: 404);
- ``/healthz``, ``/readyz``, ``/metrics``;

behind two app-wide middlewares: ``observe`` (request id, access log, counts, in-flight
tracking) then the Host/Origin guard. Upstream clients (one pooled ``RsClient`` on the
internal RS URL, one session for introspection and AS metadata) open when the app
starts and close when it stops. The app's ``Drain`` is turned to draining by the serve
loop (``serve``) on SIGTERM, so ``/readyz`` answers 503 while in-flight requests drain.

Token audiences accepted by introspection are exactly ``OriginPolicy.audiences()``:
the bases (origin and path prefix) the gateway can advertise (so every ``resource`` its metadata names is
accepted) plus the provider's origin and its full URL (path included), each bare and
as its ``/mcp`` URL. Without introspection the RS judges issuer and audience itself,
and the gateway says so in one start-up log line.

There is one MCP ``Server`` per public base (so ``serverInfo.icons`` names the
``/icon.svg`` of the base the client actually reached). Bases come only from
settings or from trusted proxies naming an operator-listed host and prefix, so the set is finite;
the cache is also bounded (``MAX_SERVERS``, least recently used first out). Every one
of them runs the same tool pipeline, built once per process.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import aiohttp
import mcp.types as types
import orjson
from aiohttp import web
from aiohttp.typedefs import Handler
from mcp.server import Server, ServerRequestContext
from mcp_gateway_middleware import compose

from pdpp_gateway.context import CallNext, GatewayContext
from pdpp_gateway.hosted import pages
from pdpp_gateway.hosted.bearer import GATEWAY_CONTEXT, BearerCheck
from pdpp_gateway.hosted.discovery import RsDiscovery, mcp_authorization, mcp_resource_metadata
from pdpp_gateway.hosted.fast_call import FastToolCall
from pdpp_gateway.hosted.inbound import INBOUND, MCP_LABELS, body_checks, header_checks
from pdpp_gateway.hosted.limits import RateLimits, rate_limits
from pdpp_gateway.hosted.metrics import Metrics
from pdpp_gateway.hosted.ops import DRAIN, METRICS, Drain, healthz, metrics_route, observe, readyz
from pdpp_gateway.hosted.origin import OriginPolicy, host_guard
from pdpp_gateway.hosted.packages import FilePackageResolver, IntrospectionPackageResolver, PackageResolver
from pdpp_gateway.hosted.public_urls import METADATA_ROOT, metadata_url, split_base
from pdpp_gateway.hosted.readiness import ReadinessProbe
from pdpp_gateway.hosted.refusals import icon_link
from pdpp_gateway.hosted.shared_state import SharedRefusals, shared_store
from pdpp_gateway.hosted.tokens import (
    BearerValidator,
    CachedValidator,
    IntrospectionValidator,
    SchemaProbeValidator,
)
from pdpp_gateway.hosted.transport import MCP_OUTCOME, McpEndpoint, method_not_allowed
from pdpp_gateway.observe import tracing
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.resilience import Breakers
from pdpp_gateway.server import build_server
from pdpp_gateway.settings import HostedSettings
from pdpp_gateway.tools.pipeline import build_pipeline
from pdpp_gateway.tools.registry import REGISTRY, Registry

MAX_SERVERS: Final = 16
_log = logging.getLogger("pdpp_gateway.hosted")


@dataclass
class Gateway:
    """Everything the routes share; upstream parts are set when the app starts."""

    settings: HostedSettings
    metrics: Metrics
    policy: OriginPolicy
    packages: PackageResolver | None
    rs: RsClient | None = None
    discovery: RsDiscovery | None = None
    readiness: ReadinessProbe | None = None
    limits: RateLimits | None = None
    shared: SharedRefusals | None = None
    endpoint_chain: Handler | None = None
    endpoints: OrderedDict[str, McpEndpoint] = field(default_factory=OrderedDict)
    registry: Registry = REGISTRY
    # One per process, shared by every origin; ready before it serves, so no first refusal
    # loads jsonschema on the event loop while other callers wait.
    pipeline: CallNext = field(init=False)

    def __post_init__(self) -> None:
        self.pipeline = build_pipeline(self.registry, ready=True)

    def endpoint_for(self, base: str) -> McpEndpoint:
        endpoint = self.endpoints.get(base)
        if endpoint is not None:
            self.endpoints.move_to_end(base)
            return endpoint
        icon = types.Icon(src=f"{base}/icon.svg", mime_type="image/svg+xml", sizes=["any"])
        server: Server[Any] = build_server(
            _caller_context,
            name=self.settings.server_name,
            icons=[icon],
            registry=self.registry,
            pipeline=self.pipeline,
        )
        fast = FastToolCall(server, self.pipeline, _request_context, self.registry.names)
        endpoint = self.endpoints[base] = McpEndpoint(server, {}, fast)
        while len(self.endpoints) > MAX_SERVERS:
            self.endpoints.popitem(last=False)
        self.metrics.servers.set(len(self.endpoints))
        return endpoint


def _caller_context(ctx: ServerRequestContext) -> GatewayContext:
    """The context the bearer check put on this HTTP request."""
    request = ctx.request
    if not isinstance(request, web.Request):
        raise TypeError("the hosted MCP server only serves requests from its aiohttp endpoint")
    return _request_context(request)


def _request_context(request: web.Request) -> GatewayContext:
    return request[GATEWAY_CONTEXT]


@web.middleware
async def traced_requests(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The server span of each request (``tracing.request_span``): the client's trace continues
    through the gateway to the RS; its status and ``Request-Id`` noted on the way out."""
    resource = request.match_info.route.resource
    route = resource.canonical if resource is not None else "unmatched"  # never the raw path
    with tracing.request_span(request.method, route, request.headers) as span:
        try:
            response = await handler(request)
        except web.HTTPException as error:
            if span is not None:
                span.set_attribute("http.response.status_code", error.status)
            raise
        if span is not None:
            span.set_attribute("http.response.status_code", response.status)
            request_id = response.headers.get("Request-Id")
            if request_id:
                span.set_attribute("pdpp.request_id", request_id)
        return response


def create_app(
    settings: HostedSettings,
    *,
    packages: PackageResolver | None = None,
    demo: pages.PageFacts | None = None,
    registry: Registry = REGISTRY,
) -> web.Application:
    metrics = Metrics()
    policy = OriginPolicy.from_settings(settings)
    resolver = packages if packages is not None else _package_resolver(settings)
    gateway = Gateway(settings, metrics, policy, resolver, registry=registry)
    traced = [traced_requests] if tracing.enabled() else []  # a span per request, when tracing is on
    app = web.Application(
        middlewares=[*traced, observe(metrics), host_guard(policy)], client_max_size=settings.max_body_bytes
    )
    app[DRAIN] = Drain()
    app[METRICS] = metrics
    app.cleanup_ctx.append(_upstream(gateway))

    async def mcp_post(request: web.Request) -> web.StreamResponse:
        assert gateway.endpoint_chain is not None
        started = time.perf_counter()
        response = await gateway.endpoint_chain(request)
        response.headers.setdefault("Link", icon_link(policy.base_of(request)))
        method, tool = request.get(MCP_LABELS, ("unparsed", ""))
        outcome = request.get(MCP_OUTCOME) or _unserved_outcome(response.status)
        metrics.observe_request(method, tool, outcome, time.perf_counter() - started)
        return response

    async def mcp_other(request: web.Request) -> web.StreamResponse:
        response = await method_not_allowed(request)
        response.headers["Link"] = icon_link(policy.base_of(request))
        return response

    # base -> (the discovery answers it was built from, the encoded document); the
    # discovery keeps the same objects while they are fresh, so identity says "unchanged".
    metadata_cache: dict[str, tuple[list[str] | None, dict[str, Any] | None, bytes]] = {}

    async def resource_metadata(request: web.Request) -> web.Response:
        assert gateway.discovery is not None
        servers = await gateway.discovery.authorization_servers()
        as_metadata = await gateway.discovery.authorization_server_metadata(servers[0]) if servers else None
        base = policy.base_of(request)
        prefix = request.match_info.get("prefix")
        if prefix is not None and f"/{prefix}" != split_base(base)[1]:
            raise web.HTTPNotFound(text=f"The metadata of this gateway is at {metadata_url(base)}.")
        cached = metadata_cache.get(base)
        if cached is None or cached[0] is not servers or cached[1] is not as_metadata:
            document = mcp_resource_metadata(
                base, settings.provider_url, servers, packages=resolver is not None, as_metadata=as_metadata
            )
            cached = metadata_cache[base] = (servers, as_metadata, orjson.dumps(document))
        return web.Response(
            body=cached[2], content_type="application/json", headers={"Cache-Control": "public, max-age=300"}
        )

    async def icon(request: web.Request) -> web.Response:
        return web.Response(
            body=pages.ICON_SVG,
            content_type="image/svg+xml",
            headers={"Cache-Control": "public, max-age=86400"},
        )

    async def page_facts(endpoint: str) -> pages.PageFacts:
        """What the pages may say: sign-in only when the AS metadata offers the code + PKCE flow."""
        assert gateway.discovery is not None
        servers = await gateway.discovery.authorization_servers()
        as_metadata = await gateway.discovery.authorization_server_metadata(servers[0]) if servers else None
        sign_in = "authorization_code_pkce" in mcp_authorization(endpoint, as_metadata)
        return replace(demo or pages.PageFacts(), sign_in=sign_in)

    async def connect(request: web.Request) -> web.Response:
        endpoint = f"{policy.base_of(request)}/mcp"
        text = pages.connect_page(endpoint, settings.provider_url, await page_facts(endpoint))
        return web.Response(text=text, content_type="text/html")

    async def llms(request: web.Request) -> web.Response:
        endpoint = f"{policy.base_of(request)}/mcp"
        text = pages.llms_txt(endpoint, settings.provider_url, await page_facts(endpoint))
        return web.Response(text=text, content_type="text/plain")

    def current_readiness() -> ReadinessProbe:
        assert gateway.readiness is not None
        return gateway.readiness

    router = app.router
    router.add_post("/mcp", mcp_post)
    router.add_route("*", "/mcp", mcp_other)  # every other method: a JSON-RPC 405
    router.add_get(f"{METADATA_ROOT}/mcp", resource_metadata)
    router.add_get(METADATA_ROOT + "/{prefix:.+}/mcp", resource_metadata)  # RFC 9728's, prefixed
    router.add_get("/icon.svg", icon)
    router.add_get("/connect", connect)
    router.add_get("/llms.txt", llms)
    router.add_get("/healthz", healthz)

    def degraded() -> dict[str, str]:
        notes = {
            "rate_limits": gateway.limits.degraded if gateway.limits is not None else None,
            "verdicts": gateway.shared.degraded if gateway.shared is not None else None,
        }
        return {part: note for part, note in notes.items() if note}

    router.add_get("/readyz", readyz(current_readiness, degraded))
    router.add_get("/metrics", metrics_route(metrics))
    return app


def _upstream(gateway: Gateway) -> Callable[[web.Application], AsyncIterator[None]]:
    settings = gateway.settings

    async def lifecycle(app: web.Application) -> AsyncIterator[None]:
        async with (
            RsClient(
                settings.upstream_url,
                observer=gateway.metrics.observe_upstream,
                breakers=Breakers(
                    observer=gateway.metrics.observe_circuit, on_held=gateway.metrics.count_held
                ),
            ) as rs,
            aiohttp.ClientSession() as introspection,
            shared_store(settings) as store,
        ):
            gateway.limits = limits = rate_limits(settings, store)
            gateway.shared = (
                None if store is None else SharedRefusals(store, settings.introspection_cache_seconds)
            )
            gateway.rs = rs
            gateway.discovery = RsDiscovery(
                rs, introspection, reached_at=settings.rs_internal_url, public_origin=settings.provider_url
            )
            gateway.readiness = ReadinessProbe(rs)
            validator = CachedValidator(
                _validator(settings, gateway.policy, rs, introspection),
                settings.introspection_cache_seconds,
                on_lookup=gateway.metrics.observe_token_cache,
                shared=gateway.shared,
            )
            bearer = BearerCheck(validator, gateway.packages, rs, settings.provider_url, gateway.policy)

            async def dispatch(request: web.Request) -> web.StreamResponse:
                return await gateway.endpoint_for(gateway.policy.base_of(request)).post(request)

            gateway.endpoint_chain = compose(
                [
                    header_checks(settings.max_body_bytes),
                    bearer.middleware(),
                    body_checks(settings.max_body_bytes, settings.body_timeout_seconds),
                    *limits.stages(gateway.policy.base_of, reads_the_rs),
                ],
                dispatch,
            )
            yield

    return lifecycle


def reads_the_rs(request: web.Request) -> bool:
    """Whether a request is one the rate limit counts: a call that reads the RS."""
    message = request[INBOUND].message
    return message is not None and message.method in ("tools/call", "resources/read")


def _validator(
    settings: HostedSettings, policy: OriginPolicy, rs: RsClient, session: aiohttp.ClientSession
) -> BearerValidator:
    if settings.introspection is None:
        _log.warning(
            "no introspection configured: bearers are validated by GET /v1/schema on the RS, which "
            "judges issuer and audience itself (this gateway cannot check them); MCP package tokens "
            "are refused",
            extra={"fields": {"event": "bearer_validation", "mode": "schema_probe"}},
        )
        return SchemaProbeValidator(rs)
    url, client_id, client_secret = settings.introspection
    audiences = policy.audiences()
    _log.info(
        "bearers are validated by introspection at %s",
        url,
        extra={
            "fields": {"event": "bearer_validation", "mode": "introspection", "audiences": sorted(audiences)}
        },
    )
    return IntrospectionValidator(
        session,
        url,
        client_id,
        client_secret,
        issuer=settings.expected_issuer,
        audiences=audiences,
    )


def _package_resolver(settings: HostedSettings) -> PackageResolver | None:
    if not settings.uses_introspection:
        return None
    if settings.package_file:
        return FilePackageResolver(Path(settings.package_file))
    return IntrospectionPackageResolver()


def _unserved_outcome(status: int) -> str:
    if status == 429:
        return "rate_limited"
    if status >= 500:
        return "unavailable"
    return "refused" if status >= 400 else "ok"
