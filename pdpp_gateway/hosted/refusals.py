"""HTTP-level refusals of the hosted door, as JSON-RPC error objects.

Contract: every 4xx/5xx answer of ``/mcp`` keeps its HTTP status and headers, and its
body is one JSON-RPC 2.0 error object that MCP clients can read::

    {"jsonrpc": "2.0", "id": <request id, or null>,
     "error": {"code": <int>, "message": <what happened and what to do>,
               "data": {"type", "code", "request_id", ...}}}

- ``id`` is the JSON-RPC request's id only when the body was read and the id is valid;
  a refusal decided on headers alone (the bearer check included) never reads the body,
  so its id is ``null`` (JSON-RPC 2.0 §5).
- ``error.message`` stands on its own: a client that shows only the message still tells
  the user what to do (a refused credential's names the metadata URL to follow for a
  scoped grant).
- ``error.data`` carries the typed members: ``type`` (derived from the status as the RS
  does, ``pdpp_gateway.error_types``, unless the refusing stage names another with
  ``error_type``: the Host check types its 421 ``invalid_request_error``), ``code`` (a string such as ``permission_error`` or ``context.active_false``),
  the HTTP ``request_id``, and on a 401 ``resource_metadata`` and ``next_step``.
- A 401 is a challenge: ``WWW-Authenticate: Bearer resource_metadata="<origin>/.well-known/
  oauth-protected-resource<prefix>/mcp"`` (``public_urls.metadata_url`` of the public base). Every
  refusal names the public ``/icon.svg`` in ``Link``.
- No refusal ever echoes the bearer it refused, a header or the request line.

Integer codes: by HTTP status from the one table (``wire.codes.for_status``, a caller's
mistake being ``-32600``) unless a refusing stage names another:

=========  ==========================================================================
``-32700``  parse error: the body is not JSON (400)
``-32600``  invalid request: method, ``Accept``, ``Content-Type``, ``Content-Encoding``,
            size, body timeout, Host, two ``Authorization`` headers, malformed HTTP or
            JSON-RPC envelope (400, 405, 406, 408, 413, 415, 421)
``-32602``  invalid params: ``params`` is not an object (400)
``-32022``  unsupported ``MCP-Protocol-Version`` (400; ``data.supported`` lists them)
``-32001``  refused credential: no/invalid/expired bearer (401), owner or unresolvable
            package token, browser Origin not allowed (403)
``-32000``  temporarily unavailable: the token could not be checked (503, ``Retry-After``),
            or the answer took too long (504)
``-32029``  too many calls from this caller (429, ``Retry-After``; ``hosted.limits``)
``-32603``  internal error (500)
=========  ==========================================================================

2026-era ladder rejections keep the SDK's own codes (``-32020`` header mismatch, ...).

A refused credential is rendered by ``rejected`` from the one refusal table
(``pdpp_gateway.refusals``): its status, JSON-RPC code, ``Retry-After``, message and
next step all come from there; only the way to a grant (``grant_route``) is this door's.
"""

from __future__ import annotations

from typing import Any

import orjson
from aiohttp import web

from pdpp_gateway.caller import Rejection
from pdpp_gateway.error_types import error_type_for
from pdpp_gateway.hosted.public_urls import metadata_url
from pdpp_gateway.observe.request_id import REQUEST_ID
from pdpp_gateway.refusals import REFUSALS, explain
from pdpp_gateway.wire.codes import INVALID_REQUEST, for_status


def grant_route(base: str) -> str:
    """How a hosted caller gets a grant: the ``{connect}`` of the refusal table's text, with this
    gateway's own public MCP URL in the command (``connect`` takes it as it is)."""
    return (
        f"fetch {metadata_url(base)} and complete the authorization flow it names "
        f"(or run `pdpp-gateway connect {base}/mcp`)"
    )


def rejected(rejection: Rejection, base: str) -> web.Response:
    """A refused credential's answer, all of it from the refusal table."""
    entry = REFUSALS[rejection.code]
    message, step = explain(rejection, grant_route(base))
    headers = {"Retry-After": str(entry.retry_after)} if entry.retry_after is not None else None
    return refusal(
        entry.http_status,
        rejection.code,
        f"{message} {step}",
        base,
        rpc_code=entry.rpc_code,
        headers=headers,
        next_step=step,
    )


def icon_link(base: str) -> str:
    return f'<{base}/icon.svg>; rel="icon"; type="image/svg+xml"'


def rpc_error_body(
    status: int,
    code: str,
    message: str,
    *,
    rpc_code: int | None = None,
    request_id: Any = None,
    error_type: str | None = None,
    **data: Any,
) -> bytes:
    """The JSON-RPC error object of a refusal (see the module contract)."""
    members: dict[str, Any] = {"type": error_type or error_type_for(status), "code": code, **data}
    http_request_id = REQUEST_ID.get()
    if http_request_id:
        members["request_id"] = http_request_id
    error = {
        "code": rpc_code if rpc_code is not None else for_status(status, caller_fault=INVALID_REQUEST),
        "message": message,
        "data": members,
    }
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})


def refusal(
    status: int,
    code: str,
    message: str,
    base: str | None = None,
    *,
    rpc_code: int | None = None,
    request_id: Any = None,
    headers: dict[str, str] | None = None,
    error_type: str | None = None,
    **data: Any,
) -> web.Response:
    """A refusal response. ``base`` (the public base URL) adds the ``Link`` header and, on
    a 401, the challenge naming the metadata URL (header and ``data``)."""
    sent = {"Link": icon_link(base)} if base else {}
    sent.update(headers or {})
    if base and status == 401:
        url = metadata_url(base)
        sent["WWW-Authenticate"] = f'Bearer resource_metadata="{url}"'
        data["resource_metadata"] = url
    body = rpc_error_body(
        status, code, message, rpc_code=rpc_code, request_id=request_id, error_type=error_type, **data
    )
    return web.Response(status=status, body=body, content_type="application/json", headers=sent)
