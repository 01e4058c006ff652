"""The gateway's public origin, and the Host / Origin checks against DNS rebinding.

Contract:

- ``public_origin(request)``: the configured ``public_url`` when set; else, only when
  the TCP peer is a configured trusted proxy, ``X-Forwarded-Proto`` + ``X-Forwarded-Host``
  (first value of each); else the provider URL's origin. Forwarded headers from any
  other peer are ignored, so a caller cannot choose the URLs the gateway advertises.
- ``host_guard`` (aiohttp middleware): the request's effective host (the forwarded host
  from a trusted proxy, else ``Host``) must be on the allow-list, else 421
  ``misdirected_request``; a present ``Origin`` must be an allowed origin, else 403
  ``origin_not_allowed``. Health probes (``/healthz``, ``/readyz``, ``/metrics``) are
  exempt: platforms call them on internal host names.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware

from pdpp_gateway.hosted.refusals import refusal
from pdpp_gateway.settings import HostedSettings

EXEMPT_PATHS: Final = frozenset({"/healthz", "/readyz", "/metrics"})
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    configured_origin: str | None
    fallback_origin: str
    trusted: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    hosts: frozenset[str]
    origins: frozenset[str]

    @classmethod
    def from_settings(cls, settings: HostedSettings) -> OriginPolicy:
        return cls(
            configured_origin=_origin_of(settings.public_url) if settings.public_url else None,
            fallback_origin=_origin_of(settings.provider_url),
            trusted=tuple(ipaddress.ip_network(p, strict=False) for p in settings.trusted_proxies),
            hosts=settings.host_allow_list(),
            origins=settings.origin_allow_list(),
        )

    def from_trusted_proxy(self, request: web.Request) -> bool:
        peer = request.remote
        if not peer or not self.trusted:
            return False
        try:
            address = ipaddress.ip_address(peer)
        except ValueError:
            return False
        return any(address in network for network in self.trusted)

    def public_origin(self, request: web.Request) -> str:
        if self.configured_origin:
            return self.configured_origin
        if self.from_trusted_proxy(request):
            proto = _first(request.headers.get("X-Forwarded-Proto"))
            host = _first(request.headers.get("X-Forwarded-Host"))
            if proto in {"http", "https"} and host:
                return f"{proto}://{host}"
        return self.fallback_origin

    def effective_host(self, request: web.Request) -> str:
        if self.from_trusted_proxy(request):
            forwarded = _first(request.headers.get("X-Forwarded-Host"))
            if forwarded:
                return forwarded.lower()
        return request.headers.get("Host", "").lower()

    def host_allowed(self, host: str) -> bool:
        if "*" in self.hosts:
            return True
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return host in self.hosts or name in self.hosts

    def origin_allowed(self, origin: str) -> bool:
        return "*" in self.origins or origin.rstrip("/").lower() in self.origins


def host_guard(policy: OriginPolicy) -> Middleware:
    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in EXEMPT_PATHS:
            return await handler(request)
        host = policy.effective_host(request)
        if not policy.host_allowed(host):
            return refusal(
                421,
                "misdirected_request",
                "This gateway does not serve that host name. Use the provider's public MCP URL.",
                policy.fallback_origin,
            )
        origin = request.headers.get("Origin")
        if origin is not None and not policy.origin_allowed(origin):
            return refusal(
                403,
                "origin_not_allowed",
                "Browser requests from this origin are not allowed. Call the gateway from an MCP client.",
                policy.public_origin(request),
            )
        return await handler(request)

    return guard


def _origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _first(value: str | None) -> str | None:
    if not value:
        return None
    first = value.split(",", 1)[0].strip()
    return first or None
