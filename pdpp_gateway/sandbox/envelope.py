"""The sandbox RS's wire conventions: error envelopes, request ids, versions, call log.

Contract:

- ``RsHttpError(status, code, message, ...)`` anywhere in a handler becomes the RS error
  envelope ``{"error": {type, code, message, param?, request_id, ...}}`` with ``type``
  derived from the status (``pdpp_gateway.error_types``, the table the client reads
  with); 401s carry ``WWW-Authenticate: Bearer resource_metadata=...`` plus
  ``error.resource_metadata`` and ``error.next_step``.
- Unknown routes are 404 ``not_found`` envelopes; any unexpected exception is a 500
  ``api_error`` envelope (logged), never an HTML traceback.
- Every response echoes ``Request-Id`` (the inbound one, or a new ``req_…``) and
  ``PDPP-Version``; an unsupported ``PDPP-Version`` is a 400 ``unsupported_version``.
- ``finalise`` adds the ``links``/``meta`` defaults the RS puts on JSON success bodies;
  ``next_link`` builds a list page's ``links.next`` from its ``next_cursor``.
- Every ``/v1`` request is appended to ``app[CALLS]`` (method, path, query string, and the NAME of the token presented), so
  tests can prove a refused gateway call never reached the RS.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote_plus

import orjson
from aiohttp import web

from pdpp_gateway.error_types import error_type_for
from pdpp_gateway.sandbox.config import TOKEN_NAMES

PDPP_VERSION: Final = "2026-04-06"
NEXT_STEP_401: Final = (
    "Fetch error.resource_metadata, then follow pdpp_agent_discovery.cli when token completion is available; "
    "otherwise request a scoped client grant without using an owner bearer token."
)
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    query: str
    token_name: str | None = None  # which fixture token was presented (its NAME, never the token)


CALLS: Final = web.AppKey("calls", list[Call])
REQUEST_ID: Final = web.RequestKey("request_id", str)


class RsHttpError(Exception):
    def __init__(
        self, status: int, code: str, message: str, *, param: str | None = None, **members: Any
    ) -> None:
        super().__init__(f"{status} {code}")
        self.status = status
        self.code = code
        self.message = message
        self.param = param
        self.members = members


def origin(request: web.Request, public_origin: str | None) -> str:
    return (public_origin or f"{request.scheme}://{request.host}").rstrip("/")


def json_response(body: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(
        body=orjson.dumps(body), status=status, content_type="application/json", headers=headers
    )


def finalise(
    request: web.Request,
    body: dict[str, Any],
    *,
    is_list: bool = False,
    next_url: str | None = None,
    warnings: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    links: dict[str, Any] = {"self": request.path_qs}
    if is_list:
        links["next"] = next_url
    meta = body.setdefault("meta", {})
    meta.setdefault("count", {"kind": "none"})
    meta.setdefault("warnings", warnings or [])
    body["links"] = links
    return body


def next_link(request: web.Request, cursor: str) -> str:
    """``links.next``: this request's path and query as sent, its ``cursor`` replaced by ``cursor``.

    The reference keeps the other parameters verbatim and appends ``&cursor=<next_cursor>``
    (captures 14, 15, 28, 30, 32).
    """
    url = request.rel_url
    kept = [
        part
        for part in url.raw_query_string.split("&")
        if part and unquote_plus(part.partition("=")[0]) != "cursor"
    ]
    return f"{url.raw_path}?{'&'.join([*kept, f'cursor={cursor}'])}"


def error_body(
    request: web.Request, error: RsHttpError, public_origin: str | None
) -> tuple[dict[str, Any], dict[str, str]]:
    envelope: dict[str, Any] = {
        "type": error_type_for(error.status),
        "code": error.code,
        "message": error.message,
    }
    if error.param is not None:
        envelope["param"] = error.param
    envelope.update(error.members)
    headers: dict[str, str] = {}
    if error.status == 401:
        metadata = origin(request, public_origin) + "/.well-known/oauth-protected-resource"
        envelope.update(resource_metadata=metadata, next_step=NEXT_STEP_401)
        headers["WWW-Authenticate"] = f'Bearer resource_metadata="{metadata}"'
    envelope["request_id"] = request.get(REQUEST_ID, "")
    return {"error": envelope}, headers


def envelope_middleware(public_origin: str | None) -> Callable[..., Awaitable[web.StreamResponse]]:
    @web.middleware
    async def middleware(
        request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        inbound = request.headers.get("Request-Id", "")
        request[REQUEST_ID] = (
            inbound if 0 < len(inbound) <= 128 and inbound.isprintable() else f"req_{secrets.token_hex(8)}"
        )
        if request.path.startswith("/v1"):
            request.app[CALLS].append(
                Call(request.method, request.path, request.query_string, _token_name(request))
            )
        try:
            version = request.headers.get("PDPP-Version")
            if version is not None and version != PDPP_VERSION:
                raise RsHttpError(
                    400,
                    "unsupported_version",
                    f"Unsupported PDPP-Version {version[:40]!r}; use {PDPP_VERSION}.",
                    param="PDPP-Version",
                )
            response = await handler(request)
        except RsHttpError as error:
            body, headers = error_body(request, error, public_origin)
            response = json_response(body, error.status, headers)
        except web.HTTPException as http_error:
            if http_error.status < 400:
                raise
            code = (
                "not_found"
                if http_error.status == 404
                else "invalid_request"
                if http_error.status < 500
                else "api_error"
            )
            body, headers = error_body(
                request, RsHttpError(http_error.status, code, http_error.reason), public_origin
            )
            response = json_response(body, http_error.status, headers)
        except Exception:
            _log.exception("sandbox RS handler failed")
            body, headers = error_body(
                request, RsHttpError(500, "api_error", "Internal error"), public_origin
            )
            response = json_response(body, 500, headers)
        response.headers["Request-Id"] = request[REQUEST_ID]
        response.headers["PDPP-Version"] = PDPP_VERSION
        return response

    return middleware


def _token_name(request: web.Request) -> str | None:
    header = request.headers.get("Authorization", "")
    return TOKEN_NAMES.get(header[7:].strip()) if header.startswith("Bearer ") else None
