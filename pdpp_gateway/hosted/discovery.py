"""What the hosted gateway tells clients about itself, and what it learns from the RS.

Contract:

- ``mcp_resource_metadata(origin, ...)``: the RFC 9728 document served at
  ``/.well-known/oauth-protected-resource/mcp``: ``resource`` is the public ``/mcp`` URL,
  the token kinds are the client-bearer kinds only (``client``, plus ``mcp_package``
  when this gateway can resolve packages; never ``owner``), the RS's own authorization
  servers, the PDPP core query base left pointing at the RS's ``/v1``, and the hosted
  endpoint under ``pdpp_agent_discovery.mcp``. Standard fields and PDPP extensions
  only: no ``logo_uri``, and no tool-surface variants to choose from.
- ``RsDiscovery``: reads the RS's ``/.well-known/oauth-protected-resource`` (no bearer)
  for its ``authorization_servers`` and remembers them for ``REFRESH_SECONDS``; a failed
  read is not remembered, and the document is then served without them rather than
  with invented ones. ``reachable()`` backs ``/readyz``.
"""

from __future__ import annotations

import time
from typing import Any, Final

from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.errors import RsError

RS_METADATA_PATH: Final = "/.well-known/oauth-protected-resource"
REFRESH_SECONDS: Final = 300.0


class RsDiscovery:
    def __init__(self, rs: RsClient) -> None:
        self._rs = rs
        self._servers: list[str] | None = None
        self._fetched_at = 0.0

    async def authorization_servers(self) -> list[str] | None:
        if self._servers is not None and time.monotonic() - self._fetched_at < REFRESH_SECONDS:
            return self._servers
        try:
            document = (await self._rs.get_json(RS_METADATA_PATH, token="")).body
        except RsError:
            return self._servers
        servers = document.get("authorization_servers")
        if isinstance(servers, list) and all(isinstance(s, str) for s in servers):
            self._servers = list(servers)
            self._fetched_at = time.monotonic()
        return self._servers

    async def reachable(self) -> bool:
        try:
            await self._rs.get_json(RS_METADATA_PATH, token="")
        except RsError:
            return False
        return True


def mcp_resource_metadata(
    origin: str, provider_url: str, authorization_servers: list[str] | None, *, packages: bool
) -> dict[str, Any]:
    endpoint = f"{origin}/mcp"
    document: dict[str, Any] = {
        "resource": endpoint,
        "resource_name": "PDPP Hosted MCP Resource",
        "bearer_methods_supported": ["header"],
        "pdpp_core_query_base": f"{provider_url}/v1",
        "pdpp_token_kinds_supported": ["client", "mcp_package"] if packages else ["client"],
        "pdpp_agent_discovery": {
            "recommended_flow": "pdpp connect",
            "mcp": {
                "endpoint": endpoint,
                "transport": "streamable_http",
                "no_owner_token": True,
                "setup_intent": "grant_scoped_read",
                "connect_page": f"{origin}/connect",
                "llms_txt": f"{origin}/llms.txt",
            },
        },
    }
    if authorization_servers:
        document["authorization_servers"] = authorization_servers
    return document
