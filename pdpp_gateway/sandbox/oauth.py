"""The sandbox's authorization server: metadata, registration, consent and tokens.

Contract (all on the sandbox origin, the ``issuer``):

- ``GET /.well-known/oauth-authorization-server`` (RFC 8414) and
  ``/.well-known/openid-configuration`` (the same document, for clients that only try
  the OpenID path): endpoints under ``/oauth/``, ``code`` + S256 only, public clients
  (``none``), grants ``authorization_code`` and ``refresh_token``, the PDPP
  ``authorization_details`` type ``https://pdpp.dev/data-access``.
- ``POST /oauth/register`` (RFC 7591): JSON metadata; ``redirect_uris`` required
  (https, or http on a loopback host; no fragment) else 400 ``invalid_redirect_uri``;
  other bad metadata 400 ``invalid_client_metadata``. A public client is issued
  (a requested secret-based auth method is replaced by ``none``, as §3.2.1 allows).
- ``GET /oauth/authorize``: an unknown client or a redirect URI it did not register
  (loopback URIs match on any port, RFC 8252 §7.3) gets an HTML error page, never a
  redirect. Other faults redirect back with ``error`` (``unsupported_response_type``,
  ``invalid_request`` for missing/non-S256 PKCE, ``invalid_authorization_details``,
  ``invalid_target`` for a resource this sandbox does not serve). A valid request gets
  the consent page: ``authorization_details`` (a JSON array of data-access entries,
  each ``source.id`` a connector, optional ``streams[].name``) or ``connector_id`` narrow
  what is offered; without either every stream of every connector is offered.
- ``POST /oauth/authorize``: the consent form. The request id and CSRF token must match
  a pending request and the browser's consent cookie (else 400, nothing redirected).
  Deny, or approve with no stream ticked, redirects with ``error=access_denied``;
  approve redirects with a single-use ``code`` valid ``CODE_SECONDS`` and the ``state``.
  Every redirect back names the issuer in ``iss`` (RFC 9207, announced in the metadata as
  ``authorization_response_iss_parameter_supported``), so a client can tell which
  authorization server answered (mix-up defence).
- ``POST /oauth/token``: form body. ``authorization_code`` needs ``code``,
  ``redirect_uri`` (identical to the authorize request's), ``client_id`` and a
  ``code_verifier`` whose S256 is the challenge; any mismatch, an expired or replayed
  code gives 400 ``invalid_grant`` and no token. ``refresh_token`` rotates, and a spent
  refresh token presented again revokes its whole family (the reference's theft rule). The answer
  carries ``access_token``, ``token_type``, ``expires_in``, ``refresh_token``, ``scope``,
  ``grant_id`` and the granted ``authorization_details``, with ``Cache-Control: no-store``.
- Issued access tokens are sandbox client grants over exactly the approved streams (all
  connections of the chosen connectors): ``/v1`` and ``/introspect`` honour them.
- Clients, codes and issued tokens live in ``app[OAUTH]`` (``oauth_store``), kept across
  restarts in ``config.state_file`` when one is named (``oauth_state``).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

from aiohttp import web
from multidict import MultiDictProxy

from pdpp_gateway.local.oauth_flow import is_loopback
from pdpp_gateway.sandbox import oauth_state
from pdpp_gateway.sandbox.config import Principal, SandboxConfig, StreamGrant
from pdpp_gateway.sandbox.consent_page import consent_page, error_page
from pdpp_gateway.sandbox.discovery import authorization_details
from pdpp_gateway.sandbox.envelope import json_response, origin
from pdpp_gateway.sandbox.manifests import Catalog
from pdpp_gateway.sandbox.oauth_store import (
    CODE_SECONDS,
    CONSENT_SECONDS,
    OAUTH,
    IssuedCode,
    OAuthStore,
    PendingConsent,
    Selection,
    token_key,
)

DATA_ACCESS: Final = "https://pdpp.dev/data-access"
SCOPE: Final = "pdpp:read"
CSRF_COOKIE: Final = "sbx_consent_csrf"
_NO_STORE: Final = {"Cache-Control": "no-store", "Pragma": "no-cache"}
_PAGE_HEADERS: Final = {
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self' "
    "http: https:; frame-ancestors 'none'",
    "Referrer-Policy": "no-referrer",
}


class RedirectError(Exception):
    """An authorization fault reported to the client at its redirect URI (RFC 6749 §4.1.2.1)."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def metadata(request: web.Request, config: SandboxConfig) -> dict[str, Any]:
    issuer = origin(request, config.public_origin)
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/oauth/authorize",
        "token_endpoint": f"{issuer}/oauth/token",
        "registration_endpoint": f"{issuer}/oauth/register",
        "introspection_endpoint": f"{issuer}/introspect",
        "scopes_supported": [SCOPE],
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": True,
        "token_endpoint_auth_methods_supported": ["none"],
        "authorization_details_types_supported": [DATA_ACCESS],
        "pdpp_authorization_details_types_supported": [DATA_ACCESS],
        "pdpp_registration_modes_supported": ["dynamic"],
    }


def _oauth_error(error: str, description: str, status: int = 400) -> web.Response:
    return json_response({"error": error, "error_description": description}, status, dict(_NO_STORE))


def _valid_redirect(uri: str) -> bool:
    parts = urlsplit(uri)
    if parts.fragment or not parts.hostname:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and is_loopback(parts.hostname))


def _registered(uri: str, registered: tuple[str, ...]) -> bool:
    """Exact match, except that a loopback redirect may use any port (RFC 8252 §7.3)."""
    if uri in registered:
        return True
    asked = urlsplit(uri)
    if asked.scheme != "http" or not is_loopback(asked.hostname):
        return False
    for candidate in registered:
        known = urlsplit(candidate)
        if (known.scheme, known.hostname, known.path, known.query) == (
            asked.scheme,
            asked.hostname,
            asked.path,
            asked.query,
        ):
            return True
    return False


async def register(request: web.Request) -> web.Response:
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        body = None
    if not isinstance(body, dict):
        return _oauth_error("invalid_client_metadata", "The registration body must be a JSON object.")
    uris = body.get("redirect_uris")
    if not isinstance(uris, list) or not uris or not all(isinstance(u, str) and u for u in uris):
        return _oauth_error("invalid_redirect_uri", "redirect_uris must be a non-empty array of URLs.")
    bad = next((u for u in uris if not _valid_redirect(u)), None)
    if bad is not None or len(uris) > 10:
        return _oauth_error(
            "invalid_redirect_uri",
            "Each redirect URI must be https, or http on a loopback host, without a fragment (at most 10).",
        )
    grants = body.get("grant_types", ["authorization_code"])
    responses = body.get("response_types", ["code"])
    if not isinstance(grants, list) or not set(grants) <= {"authorization_code", "refresh_token"}:
        return _oauth_error(
            "invalid_client_metadata", "grant_types may be authorization_code and refresh_token."
        )
    if not isinstance(responses, list) or not set(responses) <= {"code"}:
        return _oauth_error("invalid_client_metadata", "response_types may only be code.")
    name = body.get("client_name")
    name = name.strip()[:100] if isinstance(name, str) and name.strip() else "Unnamed app"
    client = request.app[OAUTH].register(name, tuple(uris))
    return json_response(
        {
            "client_id": client.client_id,
            "client_id_issued_at": client.issued_at,
            "client_name": client.client_name,
            "redirect_uris": list(client.redirect_uris),
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
            "token_endpoint_auth_method": "none",
            "scope": SCOPE,
        },
        201,
        dict(_NO_STORE),
    )


def _offered(query: Mapping[str, str], catalog: Catalog) -> tuple[tuple[Selection, ...], str | None]:
    """What the consent page offers: the request's narrowing, else everything."""
    raw = query.get("authorization_details")
    connector_id = query.get("connector_id", "").strip()
    if not raw and not connector_id:
        everything = tuple(Selection(c.source_id, s.name) for c in catalog.connectors for s in c.streams)
        return everything, None
    by_key = {c.key: c for c in catalog.connectors} | {c.source_id: c for c in catalog.connectors}
    if not raw:
        connector = by_key.get(connector_id)
        if connector is None:
            raise RedirectError("invalid_request", f"Unknown connector: {connector_id[:100]}")
        return tuple(Selection(connector.source_id, s.name) for s in connector.streams), None
    try:
        details = json.loads(raw)
    except ValueError:
        details = None
    if not isinstance(details, list) or not details:
        raise RedirectError("invalid_authorization_details", "authorization_details must be a JSON array.")
    chosen: list[Selection] = []
    purposes: list[str] = []
    for entry in details:
        if not isinstance(entry, dict) or entry.get("type") != DATA_ACCESS:
            raise RedirectError("invalid_authorization_details", f"Each entry must have type {DATA_ACCESS}.")
        if entry.get("access_mode", "read") != "read":
            raise RedirectError("invalid_authorization_details", "This provider grants read access only.")
        source = entry.get("source")
        source_id = source.get("id") if isinstance(source, dict) else None
        connector = by_key.get(source_id) if isinstance(source_id, str) else None
        if connector is None:
            raise RedirectError("invalid_authorization_details", f"Unknown source: {str(source_id)[:100]}")
        streams = entry.get("streams")
        names = (
            [s.get("name") if isinstance(s, dict) else None for s in streams]
            if isinstance(streams, list) and streams
            else [s.name for s in connector.streams]
        )
        for name in names:
            if not isinstance(name, str) or connector.stream(name) is None:
                raise RedirectError(
                    "invalid_authorization_details", f"Unknown stream {str(name)[:100]} in {connector.key}."
                )
            chosen.append(Selection(connector.source_id, name))
        for key in ("purpose_description", "purpose_code"):
            if isinstance(entry.get(key), str) and entry[key].strip():
                purposes.append(entry[key].strip()[:200])
                break
    return tuple(dict.fromkeys(chosen)), "; ".join(dict.fromkeys(purposes)) or None


def _redirect(uri: str, issuer: str, params: dict[str, str | None]) -> web.HTTPFound:
    query = urlencode({k: v for k, v in {**params, "iss": issuer}.items() if v is not None})
    joiner = "&" if urlsplit(uri).query else "?"
    return web.HTTPFound(f"{uri}{joiner}{query}", headers={"Cache-Control": "no-store"})


def _page(html: str, status: int = 200) -> web.Response:
    return web.Response(text=html, status=status, content_type="text/html", headers=dict(_PAGE_HEADERS))


def _resource_ok(resource: str | None, issuer: str, allowed: set[str]) -> bool:
    if resource is None:
        return True
    trimmed = resource.rstrip("/")
    return trimmed in allowed or trimmed == issuer or trimmed.startswith(f"{issuer}/")


async def authorize(request: web.Request, config: SandboxConfig, catalog: Catalog) -> web.Response:
    store = request.app[OAUTH]
    query = request.query
    client = store.clients.get(query.get("client_id", ""))
    redirect_uri = query.get("redirect_uri", "")
    if client is None:
        return _page(error_page("Unknown app", "This app is not registered with the sandbox."), 400)
    if not redirect_uri or not _registered(redirect_uri, client.redirect_uris):
        return _page(
            error_page(
                "Unregistered return address",
                "The app asked to be sent back to an address it "
                "did not register, so the request was stopped here.",
            ),
            400,
        )
    state = query.get("state")
    issuer = origin(request, config.public_origin)
    try:
        if query.get("response_type") != "code":
            raise RedirectError("unsupported_response_type", "Only response_type=code is supported.")
        challenge = query.get("code_challenge", "")
        if query.get("code_challenge_method") != "S256" or not 43 <= len(challenge) <= 128:
            raise RedirectError("invalid_request", "PKCE is required: code_challenge with method S256.")
        resource = query.get("resource")
        if not _resource_ok(resource, issuer, request.app[OAUTH_RESOURCES]):
            raise RedirectError("invalid_target", "This sandbox does not serve the requested resource.")
        offered, purpose = _offered(query, catalog)
    except RedirectError as error:
        raise _redirect(
            redirect_uri,
            issuer,
            {"error": error.error, "error_description": error.description, "state": state},
        ) from None
    pending = PendingConsent(
        request_id=secrets.token_urlsafe(24),
        client=client,
        redirect_uri=redirect_uri,
        state=state,
        code_challenge=challenge,
        resource=resource,
        offered=offered,
        purpose=purpose,
        csrf=secrets.token_urlsafe(24),
        expires=time.time() + CONSENT_SECONDS,
        issuer=issuer,
    )
    store.add_pending(pending)
    groups: dict[str, list[tuple[str, str]]] = {}
    labels = {c.source_id: c.key for c in catalog.connectors}
    for item in offered:
        groups.setdefault(labels.get(item.source_id, item.source_id), []).append((item.value, item.stream))
    html = consent_page(
        action="/oauth/authorize",
        request_id=pending.request_id,
        csrf=pending.csrf,
        client_name=client.client_name,
        redirect_uri=redirect_uri,
        groups=list(groups.items()),
        purpose=purpose,
    )
    response = _page(html)
    response.set_cookie(
        CSRF_COOKIE,
        pending.csrf,
        max_age=int(CONSENT_SECONDS),
        httponly=True,
        samesite="Strict",
        path="/oauth",
    )
    return response


async def decide(request: web.Request, catalog: Catalog) -> web.Response:
    store = request.app[OAUTH]
    try:
        form: MultiDictProxy[Any] = await request.post()
    except (ValueError, UnicodeDecodeError):
        return _page(error_page("Bad request", "The consent form could not be read."), 400)
    request_id, csrf = form.get("request_id"), form.get("csrf_token")
    pending = store.pending.get(request_id) if isinstance(request_id, str) else None
    cookie = request.cookies.get(CSRF_COOKIE, "")
    if (
        pending is None
        or not isinstance(csrf, str)
        or not hmac.compare_digest(csrf, pending.csrf)
        or not hmac.compare_digest(cookie, pending.csrf)
    ):
        return _page(
            error_page(
                "Request expired",
                "This consent request is unknown, expired or was already answered. Start again from the app.",
            ),
            400,
        )
    if store.take_pending(pending.request_id) is None:  # answered only once, and only in time
        return _page(
            error_page("Request expired", "This consent request expired. Start again from the app."), 400
        )
    offered = {item.value: item for item in pending.offered}
    approved = [offered[v] for v in form.getall("stream", []) if isinstance(v, str) and v in offered]
    if form.get("decision") != "approve" or not approved:
        description = (
            "The person denied the request."
            if form.get("decision") != "approve"
            else ("The person approved no stream.")
        )
        raise _redirect(
            pending.redirect_uri,
            pending.issuer,
            {"error": "access_denied", "error_description": description, "state": pending.state},
        )
    principal = _grant(pending.client.client_id, approved, catalog)
    code = store.add_code(
        IssuedCode(
            client_id=pending.client.client_id,
            redirect_uri=pending.redirect_uri,
            code_challenge=pending.code_challenge,
            resource=pending.resource,
            principal=principal,
            expires=time.time() + CODE_SECONDS,
        )
    )
    raise _redirect(pending.redirect_uri, pending.issuer, {"code": code, "state": pending.state})


def _grant(client_id: str, approved: list[Selection], catalog: Catalog) -> Principal:
    streams: dict[str, set[str]] = {}
    for item in approved:
        connector = next(c for c in catalog.connectors if c.source_id == item.source_id)
        streams.setdefault(item.stream, set()).update(c.connection_id for c in connector.connections)
    return Principal(
        "client",
        client_id,
        f"grt_{secrets.token_hex(8)}",
        {name: StreamGrant(tuple(sorted(ids))) for name, ids in streams.items()},
    )


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii", "replace")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


async def token(request: web.Request, catalog: Catalog) -> web.Response:
    store = request.app[OAUTH]
    try:
        form = await request.post()
    except (ValueError, UnicodeDecodeError):
        return _oauth_error("invalid_request", "The token request must be a UTF-8 form body.")
    values = {k: v for k, v in form.items() if isinstance(v, str)}
    grant_type = values.get("grant_type")
    client_id = values.get("client_id", "")
    if client_id not in store.clients:
        return _oauth_error("invalid_client", "Unknown client_id.", 401)
    if grant_type == "authorization_code":
        missing = [k for k in ("code", "redirect_uri", "code_verifier") if not values.get(k)]
        if missing:
            return _oauth_error("invalid_request", f"Missing {', '.join(missing)}.")
        code = values["code"]
        issued = store.take_code(code)
        if issued is None or issued.expires < time.time():
            return _oauth_error(
                "invalid_grant", "The authorization code is unknown, expired or already used."
            )
        family = token_key(code)
        if issued.client_id != client_id or issued.redirect_uri != values["redirect_uri"]:
            store.revoke_family(family)
            return _oauth_error("invalid_grant", "The code was issued to another client or redirect_uri.")
        if not hmac.compare_digest(_s256(values["code_verifier"]), issued.code_challenge):
            store.revoke_family(family)
            return _oauth_error("invalid_grant", "The code_verifier does not match the code_challenge.")
        resource = values.get("resource")
        if resource is not None and issued.resource is not None and resource != issued.resource:
            return _oauth_error("invalid_target", "resource differs from the authorization request's.")
        principal = issued.principal
    elif grant_type == "refresh_token":
        entry = store.take_refresh(values.get("refresh_token", ""))
        if entry is None or entry.client_id != client_id:
            return _oauth_error("invalid_grant", "The refresh token is unknown, expired or already used.")
        principal, family = entry.principal, entry.family
    else:
        return _oauth_error("unsupported_grant_type", "Use authorization_code or refresh_token.")
    access, refresh, stamped = store.issue(client_id, principal, family)
    return json_response(
        {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": int(store.access_seconds),
            "refresh_token": refresh,
            "scope": SCOPE,
            "grant_id": stamped.grant_id,
            "authorization_details": authorization_details(stamped, catalog),
        },
        headers=dict(_NO_STORE),
    )


# resources (RFC 8707) tokens may be requested for besides this origin's own URLs; the
# demo adds its gateway's /mcp once that is listening
OAUTH_RESOURCES: Final = web.AppKey("oauth_resources", set[str])


def install(app: web.Application, config: SandboxConfig, catalog_of: Any) -> None:
    """Add the AS routes to the sandbox app; ``catalog_of(request)`` gives the live catalog."""
    store = OAuthStore(access_seconds=float(config.access_token_ttl))
    if config.state_file is not None:
        oauth_state.attach(store, Path(config.state_file), config.connection_suffix)
    app[OAUTH] = store
    app[OAUTH_RESOURCES] = {r.rstrip("/") for r in config.oauth_resources}

    async def as_metadata(request: web.Request) -> web.Response:
        return json_response(metadata(request, config))

    async def get_authorize(request: web.Request) -> web.Response:
        return await authorize(request, config, catalog_of(request))

    async def post_authorize(request: web.Request) -> web.Response:
        return await decide(request, catalog_of(request))

    async def post_token(request: web.Request) -> web.Response:
        return await token(request, catalog_of(request))

    app.router.add_get("/.well-known/oauth-authorization-server", as_metadata)
    app.router.add_get("/.well-known/openid-configuration", as_metadata)
    app.router.add_post("/oauth/register", register)
    app.router.add_get("/oauth/authorize", get_authorize)
    app.router.add_post("/oauth/authorize", post_authorize)
    app.router.add_post("/oauth/token", post_token)
