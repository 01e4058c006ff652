"""Who is calling and what their grant lets them read.

Contract: ``authenticate`` turns the ``Authorization`` header into a ``Principal`` or
raises the reference RS's error: 401 ``authentication_error`` (no or malformed bearer),
401 ``context.active_false`` (unknown token), 401 ``context.audience_mismatch`` (a token
issued for another resource), 403 ``grant_revoked``/``grant_expired`` (``grant_expired``
"Grant has expired" also for an access token the sandbox AS issued that has lapsed, as
the reference RS answers one),
and 404 ``not_found`` for an ``mcp_package`` token on ``/v1`` (packages are for /mcp).
``Access`` resolves a principal's view: which (connector, stream, connections, fields)
sources it may read. An owner sees everything; a client only its grant (a fixture
grant, or one the sandbox AS issued after consent, see ``oauth_store``). On ``{stream}``
routes a client asking for an ungranted stream or connection gets the reference's
401 ``context.stream_not_allowed`` / ``context.instance_mismatch``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Final

from aiohttp import web

from pdpp_gateway.sandbox.config import PRINCIPALS, TOKEN_NAMES, GrantStatus, Principal, with_suffix
from pdpp_gateway.sandbox.envelope import RsHttpError
from pdpp_gateway.sandbox.manifests import Catalog, Connector, StreamManifest
from pdpp_gateway.sandbox.oauth_store import OAUTH, OAuthStore


@dataclass(frozen=True, slots=True)
class Source:
    """One readable (connector, stream) under a grant, with its readable connections."""

    connector: Connector
    manifest: StreamManifest
    connections: tuple[str, ...]
    fields: tuple[str, ...] | None  # None: every field

    def field_granted(self, name: str) -> bool:
        return self.fields is None or name in self.fields

    def project(self, data: dict[str, object]) -> dict[str, object]:
        return data if self.fields is None else {k: v for k, v in data.items() if k in self.fields}


def token_of(request: web.Request) -> str:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Bearer ") or not header[7:].strip():
        raise RsHttpError(401, "authentication_error", "Missing Bearer token")
    return header[7:].strip()


# token name -> status that replaces the fixture's, for this app (revocation at run time)
STATUS_OVERRIDES: Final = web.AppKey("status_overrides", dict[str, GrantStatus])


# appended to every fixture connection id this app serves (``SandboxConfig.connection_suffix``)
CONNECTION_SUFFIX: Final = web.AppKey("connection_suffix", str)


def principal_of(
    token: str,
    overrides: dict[str, GrantStatus] | None = None,
    issued: OAuthStore | None = None,
    suffix: str = "",
) -> Principal | None:
    """The fixture principal behind ``token`` (its connection ids with this app's ``suffix``),
    or the grant the sandbox AS issued it for."""
    name = TOKEN_NAMES.get(token)
    if name is None and issued is not None:
        return issued.principal(token)
    principal = PRINCIPALS.get(name) if name else None
    if principal is None or name is None:
        return principal
    principal = with_suffix(principal, suffix)
    if not overrides or name not in overrides:
        return principal
    return replace(principal, status=overrides[name])


def authenticate(request: web.Request) -> Principal:
    app = request.app
    principal = principal_of(
        token_of(request), app.get(STATUS_OVERRIDES), app.get(OAUTH), app.get(CONNECTION_SUFFIX, "")
    )
    if principal is None:
        raise RsHttpError(401, "context.active_false", "Token introspection failed closed")
    if principal.audience is not None:  # the reference RS checks ``aud`` against its own URL
        raise RsHttpError(401, "context.audience_mismatch", "Token introspection failed closed")
    if principal.kind == "mcp_package":
        raise RsHttpError(404, "not_found", "Unknown source: unknown")
    if principal.status == "revoked":
        raise RsHttpError(403, "grant_revoked", "The grant behind this token was revoked by the owner.")
    if principal.status == "expired":
        raise RsHttpError(403, "grant_expired", "The grant behind this token has expired.")
    if principal.expires_at is not None and principal.expires_at < time.time():
        raise RsHttpError(403, "grant_expired", "Grant has expired")
    return principal


@dataclass(frozen=True, slots=True)
class Access:
    principal: Principal
    catalog: Catalog

    @property
    def is_owner(self) -> bool:
        return self.principal.kind == "owner"

    def sources(self, stream: str | None = None, connection_id: str | None = None) -> list[Source]:
        found: list[Source] = []
        for connector in self.catalog.connectors:
            for manifest in connector.streams:
                if stream is not None and manifest.name != stream:
                    continue
                source = self._source(connector, manifest)
                if source is None:
                    continue
                if connection_id is not None:
                    if connection_id not in source.connections:
                        continue
                    source = Source(connector, manifest, (connection_id,), source.fields)
                found.append(source)
        return found

    def _source(self, connector: Connector, manifest: StreamManifest) -> Source | None:
        owned = tuple(c.connection_id for c in connector.connections)
        if self.is_owner:
            return Source(connector, manifest, owned, None)
        grant = self.principal.streams.get(manifest.name)
        if grant is None:
            return None
        connections = tuple(c for c in owned if c in grant.connections)
        return Source(connector, manifest, connections, grant.fields) if connections else None

    def stream_sources(self, stream: str, connection_id: str | None) -> list[Source]:
        """Sources for a ``{stream}`` route, with the reference's client pre-checks."""
        everything = self.sources(stream)
        if not everything:
            if self.is_owner:
                raise RsHttpError(404, "not_found", f"Unknown stream: {stream}")
            raise RsHttpError(401, "context.stream_not_allowed", "Token introspection failed closed")
        if connection_id is None:
            return everything
        scoped = self.sources(stream, connection_id)
        if not scoped:
            if self.is_owner:
                raise RsHttpError(
                    404,
                    "connection_not_found",
                    f"Unknown connection_id: {connection_id}",
                    param="connection_id",
                )
            raise RsHttpError(401, "context.instance_mismatch", "Token introspection failed closed")
        return scoped
