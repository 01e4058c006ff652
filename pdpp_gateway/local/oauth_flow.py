"""The OAuth client behind ``pdpp-gateway connect``: discovery, registration, code + PKCE, refresh.

Contract:

- ``locate(session, url)``: the provider (RS) a URL a person has leads to: the RS's own
  URL, or any gateway's MCP endpoint on any origin and path. RFC 9728 metadata for the
  URL's path first (``/.well-known/oauth-protected-resource/mcp`` for ``…/mcp``), then
  the origin's root; the document's ``pdpp_core_query_base`` names the RS, else its
  ``resource`` does. Neither document: ``ConnectError`` naming both URLs.
- ``discover(session, provider_url)``: the RS's RFC 9728 metadata names the authorization
  server (``authorization_servers[0]``; a ``resource`` naming another URL is refused), whose
  RFC 8414 metadata is read, with the OpenID Connect discovery path as fallback; its
  ``issuer`` must be the one named, and it must offer ``code`` with PKCE S256.
- ``register(...)``: RFC 7591, a public client (``none``) with the one loopback redirect URI.
- ``authorization_url(...)``: response_type ``code``, S256 challenge, ``state``, ``resource``
  (RFC 8707, the provider URL) and the PDPP request: ``authorization_details`` entries of type
  ``https://pdpp.dev/data-access`` (``source{kind: connector, id}``, ``access_mode: read``,
  ``purpose_description``, ``streams[{name}]``) when streams are named, ``connector_id``
  when only a connector is, nothing (the AS offers everything) when neither is.
- The loopback redirect that receives the browser's answer is ``loopback.LoopbackReceiver``
  (apart, so that renewing a grant never imports aiohttp's server).
- ``exchange_code`` / ``refresh``: RFC 6749 token requests (form body); a refusal, or an
  answer without a bearer ``access_token``, raises ``ConnectError``.
- Every failure is a ``ConnectError``: one line saying what happened and what to do, and
  the exit code listed in the README. No token appears in a message.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

import aiohttp

from pdpp_gateway.local.credentials import normalize_provider_url, normalize_url
from pdpp_gateway.refusals import ExitCode

DATA_ACCESS: Final = "https://pdpp.dev/data-access"
SCOPE: Final = "pdpp:read"
CLIENT_NAME: Final = "pdpp-gateway"
TIMEOUT: Final = aiohttp.ClientTimeout(total=15.0, sock_connect=5.0)
MAX_DOCUMENT_BYTES: Final = 256 * 1024


class ConnectError(Exception):
    """``message`` is one stderr-ready line; ``exit_code`` is the process's; ``http_status``
    the authorization server's answer when it refused a token request."""

    def __init__(self, message: str, exit_code: int, *, http_status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.http_status = http_status


@dataclass(frozen=True, slots=True)
class Provider:
    url: str
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    registration_endpoint: str | None
    scopes: tuple[str, ...]
    # RFC 9207: the server names itself (``iss``) in every redirect back, so one without
    # it, or naming another server, is refused (mix-up defence).
    names_itself: bool = False


def well_known(url: str, suffix: str) -> str:
    """RFC 8414 §3.1 / RFC 9728 §3.1: the well-known segment goes between host and path."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}/.well-known/{suffix}{parts.path.rstrip('/')}"


async def _get_json(
    session: aiohttp.ClientSession, url: str, what: str, *, strict: bool = True
) -> dict[str, Any] | None:
    """The JSON object at ``url``; ``None`` on 404 (``strict=False``: on any answer that is
    not a JSON object); ``ConnectError`` when unreachable."""
    try:
        async with session.get(url, headers={"Accept": "application/json"}, timeout=TIMEOUT) as response:
            raw = await response.content.read(MAX_DOCUMENT_BYTES + 1)
            status = response.status
    except (aiohttp.ClientError, TimeoutError) as error:
        raise ConnectError(
            f"cannot reach {what} at {url} ({type(error).__name__}). Check the URL and your network, then "
            f"retry.{_plain_http_hint(url)}",
            ExitCode.UNAVAILABLE,
        ) from None
    if status in (404, 405) or len(raw) > MAX_DOCUMENT_BYTES:
        return None
    try:
        document = json.loads(raw) if status == 200 else None
    except ValueError:
        document = None
    if not isinstance(document, dict):
        if not strict:
            return None
        raise ConnectError(
            f"{what} at {url} answered HTTP {status} without a JSON document. Is this a PDPP provider?",
            ExitCode.UNAVAILABLE,
        )
    return document


@dataclass(frozen=True, slots=True)
class Located:
    """The provider a URL leads to: ``provider_url`` (the RS), named by ``metadata_url``."""

    provider_url: str
    metadata_url: str


async def locate(session: aiohttp.ClientSession, url: str) -> Located:
    """The provider behind ``url`` (the RS's own URL, or an MCP endpoint that fronts it, on
    any origin and path): RFC 9728 §3.1 metadata for ``url``'s path first, then its
    origin's root; the document's ``pdpp_core_query_base`` names the RS (a gateway's
    metadata describes its ``/mcp`` and points there), else its ``resource`` does."""
    target = normalize_url(url)
    parts = urlsplit(target)
    candidates = [well_known(target, "oauth-protected-resource")]
    if parts.path:
        candidates.append(f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource")
    for metadata_url in candidates:
        document = await _get_json(session, metadata_url, "the protected-resource metadata", strict=False)
        provider = _provider_named(document) if document is not None else None
        if provider is not None:
            return Located(provider, metadata_url)
    raise ConnectError(
        f"{target} leads to no PDPP provider: no protected-resource metadata at {' or '.join(candidates)}. "
        "Give the provider's URL or a gateway's MCP endpoint URL.",
        ExitCode.UNAVAILABLE,
    )


def _provider_named(document: Mapping[str, Any]) -> str | None:
    base, resource = document.get("pdpp_core_query_base"), document.get("resource")
    if isinstance(base, str) and base.rstrip("/").endswith("/v1"):
        return normalize_provider_url(base.rstrip("/").removesuffix("/v1"))
    if isinstance(resource, str) and resource:
        return normalize_provider_url(resource)
    return None


async def discover(session: aiohttp.ClientSession, provider_url: str) -> Provider:
    prm_url = well_known(provider_url, "oauth-protected-resource")
    resource = await _get_json(session, prm_url, "the provider's protected-resource metadata")
    if resource is None:
        raise ConnectError(
            f"{provider_url} publishes no protected-resource metadata ({prm_url}). Check the provider URL.",
            ExitCode.UNAVAILABLE,
        )
    named = resource.get("resource")
    if isinstance(named, str) and named.rstrip("/") != provider_url:
        raise ConnectError(
            f"{prm_url} describes {named}, not {provider_url}; use the provider URL it names.",
            ExitCode.UNAVAILABLE,
        )
    servers = resource.get("authorization_servers")
    issuer = servers[0] if isinstance(servers, list) and servers and isinstance(servers[0], str) else None
    if not issuer:
        raise ConnectError(
            f"{provider_url} names no authorization server in {prm_url}; it cannot issue grants to apps yet.",
            ExitCode.UNAVAILABLE,
        )
    issuer = issuer.rstrip("/")
    metadata = None
    for url in (
        well_known(issuer, "oauth-authorization-server"),
        well_known(issuer, "openid-configuration"),
        f"{issuer}/.well-known/openid-configuration",
    ):
        metadata = await _get_json(session, url, "the authorization server's metadata")
        if metadata is not None:
            break
    if metadata is None:
        raise ConnectError(
            f"the authorization server {issuer} publishes no RFC 8414 or OpenID metadata; it cannot be used.",
            ExitCode.UNAVAILABLE,
        )
    if str(metadata.get("issuer", "")).rstrip("/") != issuer:
        raise ConnectError(
            f"the authorization server metadata names issuer {metadata.get('issuer')!r}, not {issuer}; refusing it.",
            ExitCode.UNAVAILABLE,
        )
    authorize, token = metadata.get("authorization_endpoint"), metadata.get("token_endpoint")
    methods = metadata.get("code_challenge_methods_supported")
    if not isinstance(authorize, str) or not isinstance(token, str):
        raise ConnectError(
            f"the authorization server {issuer} offers no authorization-code flow (no authorization or token "
            "endpoint).",
            ExitCode.UNAVAILABLE,
        )
    if isinstance(methods, list) and "S256" not in methods:
        raise ConnectError(
            f"the authorization server {issuer} does not support PKCE S256.", ExitCode.UNAVAILABLE
        )
    registration = metadata.get("registration_endpoint")
    scopes = metadata.get("scopes_supported")
    return Provider(
        url=provider_url,
        issuer=issuer,
        authorization_endpoint=authorize,
        token_endpoint=token,
        registration_endpoint=registration if isinstance(registration, str) else None,
        scopes=tuple(s for s in scopes if isinstance(s, str)) if isinstance(scopes, list) else (),
        names_itself=metadata.get("authorization_response_iss_parameter_supported") is True,
    )


def _refusal(status: int, body: bytes) -> str:
    try:
        document = json.loads(body)
    except ValueError:
        document = None
    if isinstance(document, dict):
        error: Any = document.get("error")
        description = document.get("error_description")
        if isinstance(error, dict):
            error, description = error.get("code"), error.get("message")  # the PDPP error envelope
        text = ": ".join(str(p) for p in (error, description) if p)
        if text:
            return text[:300]
    return f"HTTP {status}"


async def register(session: aiohttp.ClientSession, provider: Provider, redirect_uri: str) -> dict[str, Any]:
    if provider.registration_endpoint is None:
        raise ConnectError(
            f"the authorization server {provider.issuer} offers no dynamic client registration (RFC 7591); "
            "ask the provider to enable it.",
            ExitCode.REGISTRATION_REFUSED,
        )
    metadata = {
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    }
    try:
        async with session.post(provider.registration_endpoint, json=metadata, timeout=TIMEOUT) as response:
            raw, status = await response.content.read(MAX_DOCUMENT_BYTES), response.status
    except (aiohttp.ClientError, TimeoutError) as error:
        raise ConnectError(
            f"cannot reach {provider.registration_endpoint} ({type(error).__name__}); retry later.",
            ExitCode.UNAVAILABLE,
        ) from None
    if status not in (200, 201):
        raise ConnectError(
            f"the authorization server refused to register this app ({_refusal(status, raw)}).",
            ExitCode.REGISTRATION_REFUSED,
        )
    try:
        client = json.loads(raw)
    except ValueError:
        client = None
    if not isinstance(client, dict) or not isinstance(client.get("client_id"), str):
        raise ConnectError(
            "the registration answer carried no client_id; the authorization server is not RFC 7591 conformant.",
            ExitCode.REGISTRATION_REFUSED,
        )
    return {
        "client_id": client["client_id"],
        "client_name": client.get("client_name", CLIENT_NAME),
        "token_endpoint_auth_method": client.get("token_endpoint_auth_method", "none"),
    }


def pkce_pair() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def requested_details(connector: str | None, streams: Sequence[str], purpose: str) -> tuple[str, str] | None:
    """The request's narrowing as one query parameter, or ``None`` for "offer everything"."""
    if connector and streams:
        entry = {
            "type": DATA_ACCESS,
            "source": {"kind": "connector", "id": connector},
            "access_mode": "read",
            "purpose_description": purpose,
            "streams": [{"name": name} for name in streams],
        }
        return "authorization_details", json.dumps([entry], separators=(",", ":"))
    if connector:
        return "connector_id", connector
    return None


def authorization_url(
    provider: Provider,
    client_id: str,
    redirect_uri: str,
    state: str,
    challenge: str,
    narrowing: tuple[str, str] | None,
) -> str:
    params = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "resource": provider.url,
    }
    if SCOPE in provider.scopes:
        params["scope"] = SCOPE
    if narrowing is not None:
        params[narrowing[0]] = narrowing[1]
    joiner = "&" if urlsplit(provider.authorization_endpoint).query else "?"
    return f"{provider.authorization_endpoint}{joiner}{urlencode(params)}"


async def _token_request(
    session: aiohttp.ClientSession, endpoint: str, form: Mapping[str, str]
) -> dict[str, Any]:
    try:
        async with session.post(
            endpoint, data=dict(form), headers={"Accept": "application/json"}, timeout=TIMEOUT
        ) as response:
            raw, status = await response.content.read(MAX_DOCUMENT_BYTES), response.status
    except (aiohttp.ClientError, TimeoutError) as error:
        raise ConnectError(
            f"cannot reach {endpoint} ({type(error).__name__}); retry later.", ExitCode.UNAVAILABLE
        ) from None
    if status != 200:
        raise ConnectError(
            f"the token endpoint refused the {form['grant_type']} exchange ({_refusal(status, raw)}). "
            "Run `pdpp-gateway connect` again.",
            ExitCode.TOKEN_REFUSED,
            http_status=status,
        )
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if (
        not isinstance(answer, dict)
        or not isinstance(answer.get("access_token"), str)
        or str(answer.get("token_type", "")).lower() != "bearer"
    ):
        raise ConnectError(
            "the token endpoint answered without a bearer access_token.", ExitCode.TOKEN_REFUSED
        )
    return answer


async def exchange_code(
    session: aiohttp.ClientSession,
    provider: Provider,
    client_id: str,
    code: str,
    verifier: str,
    redirect_uri: str,
) -> dict[str, Any]:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "client_id": client_id,
        "code_verifier": verifier,
        "resource": provider.url,
    }
    return await _token_request(session, provider.token_endpoint, form)


async def refresh(
    session: aiohttp.ClientSession, token_endpoint: str, client_id: str, refresh_token: str, resource: str
) -> dict[str, Any]:
    form = {
        "grant_type": "refresh_token",
        "refresh_token": refresh_token,
        "client_id": client_id,
        "resource": resource,
    }
    return await _token_request(session, token_endpoint, form)


def _plain_http_hint(url: str) -> str:
    """For an https URL of a loopback address (a URL given without a scheme reads as https):
    say to give it as plain http, which a local server usually speaks."""
    parts = urlsplit(url)
    if parts.scheme != "https" or not is_loopback(parts.hostname):
        return ""
    return f" A server on this machine usually speaks plain http: start the URL with http://{parts.netloc}"


def is_loopback(host: str | None) -> bool:
    """Whether ``host`` names this machine: ``localhost`` or a loopback address (not a name
    that merely starts with "127.")."""
    if host == "localhost":
        return True
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
