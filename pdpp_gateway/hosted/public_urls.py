"""The URLs hung off the gateway's public base (an origin plus a path prefix).

Contract: a base is in ``origin.normal_resource`` form (``https://host/pdpp``, or the
bare origin when there is no prefix). ``<base>/mcp`` is the MCP endpoint and the pages
sit beside it; the RFC 9728 metadata of that endpoint is at ``metadata_url(base)``, the
well-known segment going between the origin and the path (§3.1), which is where a
client looks for it and where a reverse proxy must route it to the gateway.
"""

from __future__ import annotations

from typing import Final

METADATA_ROOT: Final = "/.well-known/oauth-protected-resource"


def split_base(base: str) -> tuple[str, str]:
    """A base as (origin, path prefix): ``("https://h", "/pdpp")``, ``("https://h", "")``."""
    scheme, _, rest = base.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme}://{host}", slash + path


def metadata_url(base: str) -> str:
    """Where the protected-resource metadata of ``<base>/mcp`` is published."""
    origin, prefix = split_base(base)
    return f"{origin}{METADATA_ROOT}{prefix}/mcp"
