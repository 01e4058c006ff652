"""The gateway's public base URL, the audiences it accepts, and the Host / Origin checks.

Contract:

- Origins and host names are compared in one normal form (the library's
  ``hosts.normal_host`` and ``hosts.normal_origin``): lower-case scheme and host,
  no default port (``:80`` for http, ``:443`` for https), IPv6 literals in brackets.
  A host allow-list entry without a port matches only that host on its default port:
  ``data.example.org`` does not admit ``data.example.org:9999``.
- The gateway names itself by a *base*: a public origin plus the path prefix a reverse
  proxy serves it under (``https://host/pdpp``; no prefix: the bare origin). Every URL it
  advertises hangs off that base (``<base>/mcp``, ``<base>/connect``, ...), except the
  RFC 9728 metadata document, which sits at ``<origin>/.well-known/oauth-protected-resource
  <prefix>/mcp`` (``public_urls.metadata_url``).
- ``public_base(request)``: the configured ``public_url`` (its path kept as the prefix)
  when set; else, only when the TCP peer is a configured trusted proxy (IPv4-mapped IPv6
  peers such as ``::ffff:10.0.0.5`` are unwrapped first), ``X-Forwarded-Proto`` +
  ``X-Forwarded-Host`` (first value of each), and only when that host is one the operator
  named (the provider's or public URL's host, or an ``allowed_hosts`` entry; the ``*``
  wildcard admits requests but never makes a host advertisable), plus the
  ``X-Forwarded-Prefix`` when it is one of ``allowed_prefixes`` (any other prefix is left
  out and named in a warning, once per prefix); else the provider URL's origin.
  So the set of bases the gateway can ever advertise is finite and known at start-up:
  ``advertisable_bases()``, and ``advertised()`` says it in words for the start-up log.
- ``audiences()``: those bases, the provider URL's origin and the full provider URL
  (normalised, path included: ``https://rs.example/pdpp``), each bare and as its
  ``/mcp`` URL. A token is accepted only for an audience the gateway could have
  advertised to the client that got it, or for the RS resource it fronts
  (introspection mode; see ``tokens``).
- ``host_guard`` (aiohttp middleware): the library's Host and Origin guard
  (``mcp_gateway_middleware.http.host_check`` of ``OriginPolicy.guard``, a
  ``mcp_gateway_middleware.hosts.HostPolicy`` over the allow-lists and the trusted proxies) in
  this door's words: the request's effective host (the forwarded host from a trusted proxy,
  else ``Host``) and, for an absolute-form request target (``POST http://other.example/mcp``),
  the target's host must both be on the allow-list, else 421 ``misdirected_request`` (its
  message, a warning line and the request's access line name the host that arrived,
  normalised, and the hosts served); a present ``Origin`` must be an allowed origin, else 403
  ``origin_not_allowed``. Health probes (``/healthz``, ``/readyz``, ``/metrics``) are
  exempt: platforms call them on internal host names.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

from aiohttp import web
from aiohttp.typedefs import Middleware
from mcp_gateway_middleware.doors import Refusal
from mcp_gateway_middleware.hosts import (
    DEFAULT_PORTS,
    UNREADABLE,
    HostPolicy,
    TrustedProxies,
    first_value,
    normal_host,
    normal_origin,
)
from mcp_gateway_middleware.http import host_check

from pdpp_gateway.hosted.ops import ACCESS_FIELDS
from pdpp_gateway.hosted.refusals import refusal
from pdpp_gateway.settings import HostedSettings, path_prefix

EXEMPT_PATHS: Final = frozenset({"/healthz", "/readyz", "/metrics"})
PUBLIC_BASE: Final = web.RequestKey("public_base", str)  # ``base_of``'s per-request memo
MAX_LOGGED_HOST: Final = (
    255  # a refused host as logged: a DNS name's longest, so a junk header stays one short line
)
MAX_WARNED_PREFIXES: Final = 16  # refused forwarded prefixes named in a warning, once each
_log = logging.getLogger("pdpp_gateway.hosted")
_warned_prefixes: set[str] = set()


@dataclass(frozen=True, slots=True)
class OriginPolicy:
    configured_base: str | None  # the public URL: origin + path prefix
    fallback_origin: str
    guard: HostPolicy  # the allowed hosts and origins, the trusted proxies
    forwardable: frozenset[str]  # hosts a trusted proxy may make the advertised origin
    prefixes: frozenset[str]  # path prefixes a trusted proxy may add to it
    provider_resource: str | None = None  # the provider URL in ``normal_resource`` form

    @classmethod
    def from_settings(cls, settings: HostedSettings) -> OriginPolicy:
        named = [settings.provider_url, *([settings.public_url] if settings.public_url else [])]
        forwardable = {host for url in named if (host := _url_host(url))}
        forwardable |= {host for entry in settings.allowed_hosts if (host := normal_host(entry))}
        forwardable.discard("*")
        hosts = {host for entry in settings.host_allow_list() if (host := normal_host(entry))}
        if "*" in settings.allowed_hosts:
            hosts.add("*")
        configured = normal_resource(settings.public_url) if settings.public_url else None
        fallback = normal_origin(settings.provider_url)
        if fallback is None:
            raise ValueError(f"provider URL {settings.provider_url!r} has no origin")
        return cls(
            configured_base=configured,
            fallback_origin=fallback,
            guard=HostPolicy(
                frozenset(hosts),
                frozenset(o for entry in settings.origin_allow_list() if (o := normal_origin(entry))),
                TrustedProxies.parse(settings.trusted_proxies),
            ),
            forwardable=frozenset(forwardable),
            prefixes=frozenset(settings.allowed_prefixes),
            provider_resource=normal_resource(settings.provider_url),
        )

    @property
    def trusted(self) -> bool:
        """Whether any proxy is trusted to name the host (else the base never varies)."""
        return bool(self.guard.proxies.networks)

    def forwarded_base(self, request: web.Request) -> str | None:
        """The trusted proxy's public origin, when it names a host the operator listed,
        with its forwarded prefix when the operator listed that too."""
        forwarded = self.guard.proxies.forwarded(request.headers, request.remote)
        if forwarded is None or forwarded.proto is None or forwarded.host not in self.forwardable:
            return None
        return f"{forwarded.proto}://{forwarded.host}{self._forwarded_prefix(request)}"

    def _forwarded_prefix(self, request: web.Request) -> str:
        raw = first_value(request.headers.get("X-Forwarded-Prefix"))
        if raw is None:
            return ""
        prefix = path_prefix(raw)
        if prefix is not None and (not prefix or prefix in self.prefixes):
            return prefix
        if len(_warned_prefixes) < MAX_WARNED_PREFIXES and raw not in _warned_prefixes:
            _warned_prefixes.add(raw)
            _log.warning(
                "a trusted proxy forwarded the prefix %r, which is not an allowed prefix: the gateway "
                "advertises its URLs without it; list it in --allowed-prefix (PDPP_ALLOWED_PREFIXES) "
                "or set --public-url",
                raw[:100],
                extra={"fields": {"event": "forwarded_prefix_ignored", "prefix": raw[:100]}},
            )
        return ""

    def public_base(self, request: web.Request) -> str:
        if self.configured_base:
            return self.configured_base
        return self.forwarded_base(request) or self.fallback_origin

    def base_of(self, request: web.Request) -> str:
        """``public_base(request)``, computed once per request and kept on it (without a
        trusted proxy it is the same for every request)."""
        if self.configured_base:
            return self.configured_base
        if not self.trusted:
            return self.fallback_origin
        base = request.get(PUBLIC_BASE)
        if base is None:
            base = request[PUBLIC_BASE] = self.public_base(request)
        return base

    def advertisable_bases(self) -> frozenset[str]:
        """Every base ``public_base`` can return."""
        if self.configured_base:
            return frozenset({self.configured_base})
        found = {self.fallback_origin}
        if self.trusted:
            found |= {
                f"{scheme}://{host}{prefix}"
                for scheme in DEFAULT_PORTS
                for host in self.forwardable
                for prefix in ("", *self.prefixes)
            }
        return frozenset(found)

    def advertised(self) -> str:
        """What the gateway advertises as its MCP URL, in words (the start-up log line)."""
        if self.configured_base:
            return f"{self.configured_base}/mcp (the public URL)"
        if not self.trusted:
            return f"{self.fallback_origin}/mcp (the provider's origin; no public URL or trusted proxy set)"
        hosts = ", ".join(sorted(self.forwardable))
        prefixes = ", ".join(sorted(self.prefixes)) or "none"
        return (
            f"{self.fallback_origin}/mcp, or the origin a trusted proxy forwards for {hosts} "
            f"under an allowed forwarded prefix (allowed: {prefixes})"
        )

    def audiences(self) -> frozenset[str]:
        """The ``aud`` values a token may carry, in ``normal_resource`` form: the
        advertisable bases and the provider's origin, plus the full provider URL (the
        RS resource this gateway fronts, path included), each bare and as its ``/mcp`` URL."""
        bases = self.advertisable_bases() | {self.fallback_origin}
        if self.provider_resource:
            bases |= {self.provider_resource}
        return frozenset(url for base in bases for url in (base, f"{base}/mcp"))


def host_guard(policy: OriginPolicy) -> Middleware:
    """The library's host check over ``policy.guard``, refusing in this door's words."""

    def refuse(request: web.Request, refused: Refusal) -> web.Response:
        if refused.status != 421:
            return refusal(
                403,
                "origin_not_allowed",
                "Browser requests from this origin are not allowed. Call the gateway from an MCP client.",
                policy.base_of(request),
            )
        arrived = (refused.subject or UNREADABLE)[:MAX_LOGGED_HOST]
        served = ", ".join(policy.guard.served())
        request[ACCESS_FIELDS] = {"host": arrived, "served": served}
        _log.warning(
            "refused a request for %s (421): this gateway serves %s",
            arrived,
            served,
            extra={"fields": {"event": "misdirected_request", "host": arrived, "served": served}},
        )
        return refusal(
            421,
            "misdirected_request",
            f"This gateway does not serve the host {arrived}: it serves {served}. Use the provider's "
            f"public MCP URL ({policy.configured_base or policy.fallback_origin}/mcp); behind a proxy, "
            "have it pass the host and port the client used (nginx: proxy_set_header Host $http_host).",
            policy.configured_base or policy.fallback_origin,  # its icon under the prefix too
            # The RS types its own 421 api_error; here the request itself is at fault
            # (a Host this door does not serve), as its JSON-RPC code -32600 says.
            error_type="invalid_request_error",
        )

    return host_check(policy.guard, refuse, exempt=EXEMPT_PATHS)


def normal_resource(url: str) -> str | None:
    """A resource URL (an ``aud`` value) in normal form: normal origin + path without a
    trailing slash; no query or fragment."""
    origin = normal_origin(url)
    if origin is None:
        return None
    parts = urlsplit(url.strip())
    if parts.query or parts.fragment:
        return None
    return origin + parts.path.rstrip("/")


def normal_resources(urls: Iterable[object]) -> set[str]:
    return {normal for url in urls if isinstance(url, str) and (normal := normal_resource(url))}


def _url_host(url: str) -> str | None:
    parts = urlsplit(url)
    return normal_host(parts.netloc.rpartition("@")[2], parts.scheme.lower())
