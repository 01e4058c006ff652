"""The caller's token stays between the gateway and the RS's /v1: an RS that echoes it in
an error, or redirects elsewhere, gets neither the token relayed nor followed."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import web

from pdpp_gateway.render.upstream import tool_error
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.errors import RsProtocolError, RsStatusError, RsUnavailableError
from pdpp_gateway.rs.policy import RetryPolicy

TOKEN = "tok_secret_do_not_leak"
FAST = RetryPolicy(attempts=2, start_delay=0.01, max_delay=0.02)


async def _serve(aiohttp_server: Any, handler: Any) -> tuple[list[str], str]:
    seen: list[str] = []

    async def record(request: web.Request) -> web.StreamResponse:
        seen.append(request.path)
        response: web.StreamResponse = await handler(request)
        return response

    app = web.Application()
    app.router.add_route("GET", "/{tail:.*}", record)
    server = await aiohttp_server(app, host="127.0.0.1")
    return seen, str(server.make_url(""))


def _echo(status: int, as_json: bool) -> Any:
    async def handler(request: web.Request) -> web.Response:
        echoed = f"auth={request.headers.get('Authorization')}"
        if as_json:
            error = {"code": f"bad {echoed}", "message": f"boom {echoed}", "param": echoed}
            return web.json_response({"error": error}, status=status)
        return web.Response(text=f"Server error. Request headers: Authorization: {echoed}", status=status)

    return handler


@pytest.mark.parametrize(
    ("status", "as_json"), [(400, True), (401, False), (500, True), (500, False), (503, True)]
)
async def test_an_error_body_echoing_the_token_is_redacted(
    aiohttp_server: Any, status: int, as_json: bool
) -> None:
    _, url = await _serve(aiohttp_server, _echo(status, as_json))
    async with RsClient(url, retry=FAST) as rs:
        with pytest.raises((RsStatusError, RsUnavailableError)) as caught:
            await rs.get_json("/v1/schema", token=TOKEN)
    relayed = repr(vars(caught.value)) + str(caught.value) + repr(tool_error(caught.value).envelope)
    assert TOKEN not in relayed
    if status != 503:
        assert "[redacted]" in relayed


@pytest.mark.parametrize("target", ["/admin/export?all=1", "http://127.0.0.2:9/elsewhere"])
async def test_a_redirect_is_never_followed(aiohttp_server: Any, target: str) -> None:
    async def handler(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(target)

    seen, url = await _serve(aiohttp_server, handler)
    async with RsClient(url, retry=FAST) as rs:
        with pytest.raises(RsProtocolError, match="redirect"):
            await rs.get_json("/v1/streams/messages/records", token=TOKEN)
        with pytest.raises(RsProtocolError, match="redirect"):
            await rs.get_bytes("/v1/blobs/b1", token=TOKEN, max_bytes=1024)
    assert seen == ["/v1/streams/messages/records", "/v1/blobs/b1"]
