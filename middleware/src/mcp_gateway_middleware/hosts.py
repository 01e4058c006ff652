"""Which host a request is for, and whether the door answers it: the Host and Origin guard, framework-free.

Contract (no framework imported; ``http.host_check`` adapts it to aiohttp):

- Hosts and origins are compared in one normal form: ``normal_host(host, scheme)`` is
  ``host[:port]`` lower-cased, without a trailing dot, IPv6 literals in brackets, without the
  scheme's default port (``:80`` for http, ``:443`` for https; either when the scheme is
  unknown), ``None`` when it is not a host name; ``normal_origin(url)`` is
  ``scheme://host[:port]`` of an http(s) URL, or ``None``.
- ``TrustedProxies(networks)`` names the reverse proxies whose forwarding headers count
  (``TrustedProxies.parse(["10.0.0.0/8", ...])``; an IPv4-mapped IPv6 peer such as
  ``::ffff:10.0.0.5`` is unwrapped first). ``forwarded(headers, peer)``: for a request from one
  of them that carries ``X-Forwarded-Host``, a ``Forwarded(proto, host)`` read from the first
  value of ``X-Forwarded-Proto`` (``None`` unless ``http``/``https``) and of
  ``X-Forwarded-Host`` (normalised for that proto; ``None`` when unreadable); else ``None``.
- ``HostPolicy(hosts, origins=None, proxies=TrustedProxies(), any_port=False)``: ``hosts`` in
  normal form (``"*"`` admits every host), ``origins`` normal origins (``"*"``: every origin):

  - ``effective_host``: the forwarded host from a trusted proxy, else ``Host`` (for the request's
    own scheme); ``named_hosts`` adds, for an absolute-form request target (RFC 9112 §3.2.2:
    ``POST http://other.example/mcp``), the target's host: both must be allowed. An entry
    without a port matches only the default port, unless ``any_port`` (then any port of a
    listed name);
  - ``refusal(headers, scheme=, peer=, target=)``: a named host not allowed → 421
    ``misdirected_request`` whose ``subject`` is the host that arrived, normalised (``UNREADABLE``
    when it cannot be read); else an ``Origin`` header not allowed → 403 ``origin_not_allowed``
    (``origins=None``: an origin is allowed when its host is); else ``None``. A request without
    ``Origin`` (not from a browser) passes the origin check.
- ``LOOPBACK_POLICY``: the transport spec's DNS-rebinding guard for a server on a loopback
  address (``LOOPBACK`` names, any port, their own origins): ``LOOPBACK_POLICY.refusal(headers)``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final
from urllib.parse import urlsplit

from mcp_gateway_middleware.doors import Headers, Refusal

__all__ = [
    "DEFAULT_PORTS",
    "LOOPBACK",
    "LOOPBACK_POLICY",
    "UNREADABLE",
    "Forwarded",
    "HostPolicy",
    "TrustedProxies",
    "first_value",
    "normal_host",
    "normal_origin",
]

DEFAULT_PORTS: Final = {"http": "80", "https": "443"}
LOOPBACK: Final = frozenset({"127.0.0.1", "localhost", "[::1]"})
UNREADABLE: Final = "a host name that cannot be read"
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True, slots=True)
class Forwarded:
    proto: str | None  # "http" or "https", else None
    host: str | None  # normal form for ``proto``; None when it cannot be read


@dataclass(frozen=True, slots=True)
class TrustedProxies:
    networks: tuple[Network, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> TrustedProxies:
        return cls(tuple(ipaddress.ip_network(entry, strict=False) for entry in entries))

    def trusts(self, peer: str | None) -> bool:
        """Whether ``peer`` (the TCP peer's address) is one of the trusted proxies."""
        if not self.networks or not peer:
            return False
        try:
            address = ipaddress.ip_address(peer.split("%", 1)[0])
        except ValueError:
            return False
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        return any(address in network for network in self.networks)

    def forwarded(self, headers: Headers, peer: str | None) -> Forwarded | None:
        """What a trusted proxy says the client asked for (module contract)."""
        if not self.trusts(peer):
            return None
        raw = first_value(headers.get("X-Forwarded-Host"))
        if not raw:
            return None
        proto = (first_value(headers.get("X-Forwarded-Proto")) or "").lower()
        known = proto if proto in DEFAULT_PORTS else None
        return Forwarded(known, normal_host(raw, known))


@dataclass(frozen=True, slots=True)
class HostPolicy:
    hosts: frozenset[str]  # normal-form host[:port] entries, or "*"
    origins: frozenset[str] | None = None  # normal-form origins, or "*"; None: those of allowed hosts
    proxies: TrustedProxies = field(default_factory=TrustedProxies)
    any_port: bool = False

    def effective_host(self, headers: Headers, *, scheme: str, peer: str | None = None) -> str | None:
        forwarded = self.proxies.forwarded(headers, peer)
        if forwarded is not None:
            return forwarded.host
        return normal_host(headers.get("Host") or "", scheme)

    def named_hosts(
        self, headers: Headers, *, scheme: str, peer: str | None = None, target: str = "/"
    ) -> list[str | None]:
        """The effective host, plus an absolute-form target's host; ``None``: unreadable."""
        named = [self.effective_host(headers, scheme=scheme, peer=peer)]
        if not target.startswith("/"):
            parts = urlsplit(target)
            scheme = parts.scheme.lower()
            named.append(
                normal_host(parts.netloc.rpartition("@")[2], scheme) if scheme in DEFAULT_PORTS else None
            )
        return named

    def host_allowed(self, host: str | None) -> bool:
        if host is None:
            return False
        if "*" in self.hosts or host in self.hosts:
            return True
        return self.any_port and _name_of(host) in self.hosts

    def origin_allowed(self, origin: str) -> bool:
        normal = normal_origin(origin)
        if self.origins is None:
            return normal is not None and self.host_allowed(normal.partition("://")[2])
        return "*" in self.origins or (normal is not None and normal in self.origins)

    def served(self) -> list[str]:
        """The host names served, sorted (``*`` left out), for a 421's words."""
        return sorted(self.hosts - {"*"})

    def refusal(
        self, headers: Headers, *, scheme: str = "http", peer: str | None = None, target: str = "/"
    ) -> Refusal | None:
        """Why this request's host or origin is refused (module contract), else ``None``."""
        for host in self.named_hosts(headers, scheme=scheme, peer=peer, target=target):
            if not self.host_allowed(host):
                arrived = host or UNREADABLE
                return Refusal(
                    421,
                    "misdirected_request",
                    f"Misdirected request: this server does not answer for {arrived}; it answers for "
                    f"{', '.join(self.served()) or 'no host'}.",
                    subject=arrived,
                )
        origin = headers.get("Origin")
        if origin is not None and not self.origin_allowed(origin):
            return Refusal(
                403,
                "origin_not_allowed",
                "Origin not allowed: call this server from its own host, not a web page.",
            )
        return None


LOOPBACK_POLICY: Final = HostPolicy(LOOPBACK, any_port=True)


@lru_cache(maxsize=256)  # pure, and asked for on every request: bounded against odd Host values
def normal_host(host: str, scheme: str | None = None) -> str | None:
    """``host[:port]`` in normal form (module contract), ``None`` when it is not a host name."""
    host = host.strip().lower()
    if host == "*":
        return host
    if not host or any(c in host for c in "/?#@ \t"):
        return None
    if host.startswith("["):
        end = host.find("]")
        if end < 0:
            return None
        name, rest = host[: end + 1], host[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:] if rest else None
    else:
        name, colon, port_text = host.partition(":")
        port = port_text if colon else None
        if ":" in port_text:
            return None
    name = name.rstrip(".") if not name.startswith("[") else name
    if not name:
        return None
    if port is not None:
        if not port.isdigit() or not 0 < int(port) < 65536:
            return None
        port = str(int(port))
        defaults = {DEFAULT_PORTS[scheme]} if scheme in DEFAULT_PORTS else set(DEFAULT_PORTS.values())
        if port in defaults:
            port = None
    return f"{name}:{port}" if port else name


def normal_origin(url: str | None) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL in normal form, or ``None``."""
    if not url:
        return None
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        return None
    host = normal_host(parts.netloc.rpartition("@")[2], scheme)
    return f"{scheme}://{host}" if host and host != "*" else None


def first_value(value: str | None) -> str | None:
    """The first of a header's comma-separated values, stripped; ``None`` when empty."""
    if not value:
        return None
    first = value.split(",", 1)[0].strip()
    return first or None


def _name_of(host: str) -> str:
    """A normal-form host without its port (``[::1]:80`` → ``[::1]``)."""
    if host.startswith("["):
        return host.partition("]")[0] + "]"
    return host.partition(":")[0]
