"""What the hosted gateway tells clients about itself, and what it learns from the RS and AS.

Contract:

- ``mcp_resource_metadata(base, ...)``: the RFC 9728 document of the public ``<base>/mcp``
  (served where ``public_urls.metadata_url`` says): ``resource`` is that URL, path prefix included,
  the token kinds are the client-bearer kinds only (``client``, plus ``mcp_package``
  when this gateway can resolve packages; never ``owner``), the RS's own authorization
  servers, the PDPP core query base left pointing at the RS's ``/v1``, and the hosted
  endpoint under ``pdpp_agent_discovery.mcp``. Standard fields and PDPP extensions
  only: no ``logo_uri``, and no tool-surface variants to choose from.
- ``pdpp_agent_discovery.mcp.authorization`` (the reference's block, capture 02) is
  built only from what the authorization server's own RFC 8414 metadata states:
  ``authorization_code_pkce`` when it has an authorization endpoint, the ``code``
  response type and S256; ``device_code`` when it has a device authorization endpoint,
  a token endpoint and the device grant (its ``authorization_details_type`` and
  ``required_parameters`` only when the AS advertises them for client tokens). Both
  name this gateway's public ``/mcp`` URL as the ``resource`` to request (a token for
  any other resource is refused here, hence ``resource_parameter: required``) and the
  ``client`` token kind. The reference's ``owner_agent_device_code`` entry is left
  out: it describes owner-agent onboarding, which this door never serves. When the AS
  metadata cannot be read (or its ``issuer`` does not match), the block is absent
  rather than guessed.
- ``RsDiscovery``: reads the RS's ``/.well-known/oauth-protected-resource`` (no bearer)
  for its ``authorization_servers``, then the first one's metadata, and remembers each
  for ``REFRESH_SECONDS``; a failed read is not remembered (an AS metadata read is
  retried no sooner than ``MISS_SECONDS``), and the document is then served with what
  was last known (or without it) rather than with invented values.
- An RS the gateway reaches at a private address (``--rs-internal-url``) may name its
  authorization server by the address it was reached at. Such a server is advertised at
  the provider's public origin instead (same path): clients cannot reach the private one,
  and the public metadata never names it. Its RFC 8414 metadata is read at the private
  address and must state the public issuer (``public_issuer``).
"""

from __future__ import annotations

import time
from typing import Any, Final
from urllib.parse import urlsplit

import aiohttp
import orjson
from mcp_gateway_middleware.hosts import normal_origin

from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.errors import RsError

RS_METADATA_PATH: Final = "/.well-known/oauth-protected-resource"
AS_METADATA_PATH: Final = "/.well-known/oauth-authorization-server"
REFRESH_SECONDS: Final = 300.0
MISS_SECONDS: Final = 30.0  # a failed AS metadata read is retried no sooner than this
AS_TIMEOUT: Final = aiohttp.ClientTimeout(total=5.0, sock_connect=2.0)
AS_METADATA_MAX_BYTES: Final = 256 * 1024
DEVICE_GRANT: Final = "urn:ietf:params:oauth:grant-type:device_code"
PDPP_DATA_ACCESS: Final = "https://pdpp.dev/data-access"


class RsDiscovery:
    def __init__(
        self,
        rs: RsClient,
        session: aiohttp.ClientSession | None = None,
        *,
        reached_at: str | None = None,
        public_origin: str | None = None,
    ) -> None:
        self._rs = rs
        self._session = session
        # the private origin the RS is reached at, and the public one clients know it by
        self._private = normal_origin(reached_at) if reached_at and public_origin else None
        self._public = normal_origin(public_origin) if reached_at and public_origin else None
        self._servers: list[str] | None = None
        self._fetched_at = 0.0
        self._as_metadata: dict[str, Any] | None = None
        self._as_fetched_at = 0.0
        self._as_missed_at = -MISS_SECONDS

    async def authorization_servers(self) -> list[str] | None:
        if self._servers is not None and time.monotonic() - self._fetched_at < REFRESH_SECONDS:
            return self._servers
        try:
            document = (await self._rs.get_json(RS_METADATA_PATH, token="")).body
        except RsError:
            return self._servers
        servers = document.get("authorization_servers")
        if isinstance(servers, list) and all(isinstance(s, str) for s in servers):
            self._servers = [public_issuer(server, self._private, self._public) for server in servers]
            self._fetched_at = time.monotonic()
        return self._servers

    async def authorization_server_metadata(self, issuer: str) -> dict[str, Any] | None:
        """The RFC 8414 metadata of ``issuer`` (validated: its ``issuer`` must match)."""
        now = time.monotonic()
        known = self._as_metadata if self._as_metadata and self._as_metadata.get("issuer") == issuer else None
        if known is not None and now - self._as_fetched_at < REFRESH_SECONDS:
            return known
        if self._session is None or now - self._as_missed_at < MISS_SECONDS:
            return known
        document = await self._fetch_as_metadata(issuer)
        if document is None:
            self._as_missed_at = now
            return known
        self._as_metadata = document
        self._as_fetched_at = now
        return document

    async def _fetch_as_metadata(self, issuer: str) -> dict[str, Any] | None:
        assert self._session is not None
        # a public issuer of the RS's own is read where the gateway reaches the RS
        reached = public_issuer(issuer, self._public, self._private)
        try:
            async with self._session.get(
                as_metadata_url(reached), headers={"Accept": "application/json"}, timeout=AS_TIMEOUT
            ) as response:
                raw = await response.content.read(AS_METADATA_MAX_BYTES + 1)
                status = response.status
        except (aiohttp.ClientError, TimeoutError, ValueError):
            return None
        if status != 200 or len(raw) > AS_METADATA_MAX_BYTES:
            return None
        try:
            document = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(document, dict) or document.get("issuer") != issuer:
            return None
        return document


def public_issuer(server: str, private: str | None, public: str | None) -> str:
    """``server`` with its origin ``private`` replaced by ``public`` (its path kept); any other
    server, or no such pair, unchanged."""
    if private is None or public is None or normal_origin(server) != private:
        return server
    parts = urlsplit(server)
    return public + parts.path + (f"?{parts.query}" if parts.query else "")


def as_metadata_url(issuer: str) -> str:
    """RFC 8414 §3.1: the well-known segment goes between the host and the issuer's path."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{parts.netloc}{AS_METADATA_PATH}{path}"


def mcp_authorization(resource: str, metadata: dict[str, Any] | None) -> dict[str, Any]:
    """The ``pdpp_agent_discovery.mcp.authorization`` entries the AS metadata supports."""
    if not metadata:
        return {}
    found: dict[str, Any] = {}
    authorize = _text(metadata.get("authorization_endpoint"))
    token_endpoint = _text(metadata.get("token_endpoint"))
    if (
        authorize
        and "code" in _strings(metadata.get("response_types_supported"))
        and "S256" in _strings(metadata.get("code_challenge_methods_supported"))
    ):
        found["authorization_code_pkce"] = {
            "authorization_endpoint": authorize,
            "flow": "authorization_code_pkce",
            "pdpp_token_kind": "client",
            "resource": resource,
            "resource_parameter": "required",
        }
    device = _text(metadata.get("device_authorization_endpoint"))
    grants = _strings(metadata.get("grant_types_supported"))
    if device and token_endpoint and DEVICE_GRANT in grants:
        entry: dict[str, Any] = {
            "device_authorization_endpoint": device,
            "flow": "device_code",
            "grant_type": DEVICE_GRANT,
            "owner_bearer_accepted": False,
            "pdpp_token_kind": "client",
            "resource": resource,
            "token_endpoint": token_endpoint,
        }
        if PDPP_DATA_ACCESS in _strings(metadata.get("pdpp_authorization_details_types_supported")):
            entry["authorization_details_type"] = PDPP_DATA_ACCESS
        for profile in metadata.get("pdpp_device_authorization_profiles_supported") or ():
            if isinstance(profile, dict) and profile.get("pdpp_token_kind") == "client":
                required = _strings(profile.get("required_parameters"))
                if required:
                    entry["required_parameters"] = required
                break
        found["device_code"] = entry
    return found


def mcp_resource_metadata(
    base: str,
    provider_url: str,
    authorization_servers: list[str] | None,
    *,
    packages: bool,
    as_metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    endpoint = f"{base}/mcp"
    mcp: dict[str, Any] = {
        "endpoint": endpoint,
        "transport": "streamable_http",
        "no_owner_token": True,
        "setup_intent": "grant_scoped_read",
        "connect_page": f"{base}/connect",
        "llms_txt": f"{base}/llms.txt",
    }
    authorization = mcp_authorization(endpoint, as_metadata)
    if authorization:
        mcp["authorization"] = authorization
    document: dict[str, Any] = {
        "resource": endpoint,
        "resource_name": "PDPP Hosted MCP Resource",
        "bearer_methods_supported": ["header"],
        "pdpp_core_query_base": f"{provider_url}/v1",
        "pdpp_token_kinds_supported": ["client", "mcp_package"] if packages else ["client"],
        "pdpp_agent_discovery": {"recommended_flow": "pdpp connect", "mcp": mcp},
    }
    if authorization_servers:
        document["authorization_servers"] = authorization_servers
    return document


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _strings(value: object) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []
