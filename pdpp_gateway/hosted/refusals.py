"""HTTP-level refusals of the hosted door, in the RS's own error envelope.

Contract: ``refusal(status, code, message, origin)`` is a JSON response
``{"error": {type, code, message, request_id, ...}}`` (``type`` derived from the status,
as the RS does) with a ``Link`` header naming the public ``/icon.svg``. A 401 is a
challenge: ``WWW-Authenticate: Bearer resource_metadata="<origin>/.well-known/
oauth-protected-resource/mcp"``, the same URL in ``error.resource_metadata``, and
``error.next_step`` saying how to get a scoped grant. No refusal ever echoes the
bearer it refused.
"""

from __future__ import annotations

from typing import Any, Final

import orjson
from aiohttp import web

from pdpp_gateway.logs import REQUEST_ID
from pdpp_gateway.rs.errors import error_type_for

MCP_METADATA_PATH: Final = "/.well-known/oauth-protected-resource/mcp"
NEXT_STEP: Final = (
    "Fetch error.resource_metadata and complete the authorization flow it names to get a scoped, "
    "read-only client grant (or run `pdpp-gateway connect <provider-url>`); owner bearer tokens are never accepted."
)
_TYPES: Final = {421: "invalid_request_error", 503: "api_error"}


def icon_link(origin: str) -> str:
    return f'<{origin}/icon.svg>; rel="icon"; type="image/svg+xml"'


def metadata_url(origin: str) -> str:
    return origin + MCP_METADATA_PATH


def refusal(
    status: int,
    code: str,
    message: str,
    origin: str,
    *,
    headers: dict[str, str] | None = None,
    **members: Any,
) -> web.Response:
    error: dict[str, Any] = {
        "type": _TYPES.get(status) or error_type_for(status),
        "code": code,
        "message": message,
        **members,
    }
    sent = {"Link": icon_link(origin), **(headers or {})}
    if status == 401:
        url = metadata_url(origin)
        sent["WWW-Authenticate"] = f'Bearer resource_metadata="{url}"'
        error["resource_metadata"] = url
        error["next_step"] = NEXT_STEP
    request_id = REQUEST_ID.get()
    if request_id:
        error["request_id"] = request_id
    return web.Response(
        status=status, body=orjson.dumps({"error": error}), content_type="application/json", headers=sent
    )
