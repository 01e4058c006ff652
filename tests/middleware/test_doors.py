"""The HTTP door's decisions, the same on aiohttp and on ASGI, over real HTTP.

Each test runs against both adapters (``http`` on an aiohttp app, ``asgi.McpDoor`` around a
plain ASGI app served by uvicorn): the transport spec's methods, the bearer check handing the
accepted caller to the handler, the per-message rate limit, and every refusal as a JSON-RPC
error body that says its status, code and wait.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any, Final

import aiohttp
import pytest
from aiohttp import web
from mcp_gateway_middleware.asgi import McpDoor, accepted
from mcp_gateway_middleware.doors import Refusal
from mcp_gateway_middleware.http import bearer_check, rate_limit, refusal_response, shape_checks
from mcp_gateway_middleware.ratelimit import Decision, LocalLimiter, Rate

from tests.middleware.asgi_server import serving

WHO: Final = web.RequestKey("who", str)
POST_HEADERS: Final = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def authenticate(header: str | None) -> str | Refusal:
    if header in ("Bearer ada-key", "Bearer bob-key"):
        return header.removeprefix("Bearer ").removesuffix("-key")
    return Refusal(401, "unknown_key", "Send a known key: Authorization: Bearer <key>.")


def aiohttp_door(limiter: LocalLimiter) -> web.Application:
    async def whoami(request: web.Request) -> web.Response:
        return web.json_response({"who": request.get(WHO), "method": request.method})

    def refuse_rate(request: web.Request, decision: Decision) -> web.Response:
        return refusal_response(
            request, Refusal(429, "rate_limited", "Slow down.", decision.retry_after_seconds)
        )

    app = web.Application(
        middlewares=[
            shape_checks(max_body_bytes=100),
            bearer_check(
                authenticate, refusal_response, WHO, rejection=Refusal, duplicate=Refusal(400, "two", "One.")
            ),
            rate_limit(limiter, lambda request: request[WHO], refuse_rate),
        ]
    )
    app.router.add_route("*", "/mcp", whoami)
    return app


async def asgi_whoami(scope: Any, receive: Any, send: Any) -> None:
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return

    class Request:  # what the SDK hands a handler: an object with the request's scope
        def __init__(self) -> None:
            self.scope = scope

    body = json.dumps({"who": accepted(Request()), "method": scope["method"]}).encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": body})


@contextlib.asynccontextmanager
async def door(kind: str, aiohttp_server: Any) -> AsyncIterator[str]:
    limiter = LocalLimiter(Rate(0.01, 3), Rate(0, 0))
    if kind == "aiohttp":
        server = await aiohttp_server(aiohttp_door(limiter))
        yield str(server.make_url("/mcp"))
        return
    app = McpDoor(
        asgi_whoami,
        max_body_bytes=100,
        authenticate=authenticate,
        limiter=limiter,
        duplicate=Refusal(400, "two", "One."),
    )
    async with serving(app) as base:
        yield f"{base}/mcp"


ADAPTERS = pytest.mark.parametrize("kind", ["aiohttp", "asgi"])


async def send(
    url: str, method: str, headers: dict[str, str] | list[tuple[str, str]], body: bytes = b"{}"
) -> tuple[int, Any, Any]:
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, url, headers=headers, data=body) as response,
    ):
        return response.status, response.headers, await response.json(content_type=None)


@ADAPTERS
async def test_the_transport_spec_s_three_methods_pass_and_others_are_refused(
    kind: str, aiohttp_server: Any
) -> None:
    async with door(kind, aiohttp_server) as url:
        ada = {"Authorization": "Bearer ada-key"}
        assert (await send(url, "POST", {**POST_HEADERS, **ada}))[2] == {"who": "ada", "method": "POST"}
        assert (await send(url, "GET", {"Accept": "text/event-stream", **ada}, b""))[0] == 200
        assert (await send(url, "DELETE", {**ada}, b""))[0] == 200
        status, headers, body = await send(url, "PUT", {**POST_HEADERS, **ada})
        assert (status, headers["Allow"]) == (405, "GET, POST, DELETE")
        assert body["error"]["data"] == {"status": 405, "code": "method_not_allowed"}


@pytest.mark.parametrize(
    ("method", "headers", "status", "code", "says"),
    [
        ("GET", {"Accept": "application/json"}, 406, "not_acceptable", "Accept: text/event-stream"),
        (
            "POST",
            {"Accept": "application/json;q=0, */*", "Content-Type": "application/json"},
            406,
            "not_acceptable",
            "Accept: application/json",
        ),
        (
            "POST",
            {"Accept": "application/json", "Content-Type": "text/plain"},
            415,
            "unsupported_media_type",
            "Content-Type: application/json",
        ),
        (
            "POST",
            {**POST_HEADERS, "Content-Encoding": "gzip"},
            415,
            "unsupported_content_encoding",
            "uncompressed",
        ),
        (
            "POST",
            {**POST_HEADERS, "Content-Length": "101"},
            413,
            "request_too_large",
            "larger than 100 bytes",
        ),
    ],
)
@ADAPTERS
async def test_a_malformed_request_is_refused_as_a_json_rpc_error_before_the_bearer_check(
    kind: str, aiohttp_server: Any, method: str, headers: dict[str, str], status: int, code: str, says: str
) -> None:
    async with door(kind, aiohttp_server) as url:
        body = b"x" * 101 if "Content-Length" in headers else b"{}"
        headers = {name: value for name, value in headers.items() if name != "Content-Length"}
        answered, _, error = await send(url, method, headers, body)  # no Authorization: shape decides first
        assert answered == status
        assert (error["jsonrpc"], error["id"], error["error"]["data"]["code"]) == ("2.0", None, code)
        assert says in error["error"]["message"]


@ADAPTERS
async def test_the_bearer_check_refuses_in_words_an_sdk_client_reads(kind: str, aiohttp_server: Any) -> None:
    async with door(kind, aiohttp_server) as url:
        status, headers, body = await send(url, "POST", POST_HEADERS)
        assert (status, headers["WWW-Authenticate"], body["error"]["code"]) == (401, "Bearer", -32001)
        assert body["error"]["message"] == "Send a known key: Authorization: Bearer <key>."
        two = [
            *POST_HEADERS.items(),
            ("Authorization", "Bearer ada-key"),
            ("Authorization", "Bearer bob-key"),
        ]
        assert (await send(url, "POST", two))[2]["error"]["data"]["code"] == "two"


@ADAPTERS
async def test_the_http_limit_counts_messages_per_caller_and_says_when_to_retry(
    kind: str, aiohttp_server: Any
) -> None:
    async with door(kind, aiohttp_server) as url:
        ada = {**POST_HEADERS, "Authorization": "Bearer ada-key"}
        assert [(await send(url, "POST", ada))[0] for _ in range(3)] == [200, 200, 200]
        status, headers, body = await send(url, "POST", ada)
        assert (status, body["error"]["code"], body["error"]["data"]["code"]) == (429, -32029, "rate_limited")
        assert int(headers["Retry-After"]) == body["error"]["data"]["retry_after_seconds"] >= 1
        assert (await send(url, "POST", {**POST_HEADERS, "Authorization": "Bearer bob-key"}))[
            0
        ] == 200  # own bucket
