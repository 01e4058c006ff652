"""The RS client against real HTTP servers that misbehave on purpose."""

from __future__ import annotations

import asyncio
import gzip
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from mcp_gateway_middleware import ToolError

from pdpp_gateway.rs.client import RsClient, rs_path
from pdpp_gateway.rs.errors import (
    RsProtocolError,
    RsStatusError,
    RsTimeoutError,
    RsUnavailableError,
    TimeoutPhase,
)
from pdpp_gateway.rs.policy import RetryPolicy, RsTimeouts

TOKEN = "tok_secret_do_not_leak"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
FAST = RetryPolicy(attempts=3, start_delay=0.01, max_delay=0.02)


class Upstream:
    """A one-route test server recording every request it sees."""

    def __init__(self, handler: Handler) -> None:
        self.requests: list[web.Request] = []
        self._handler = handler

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.requests.append(request)
        return await self._handler(request)


@pytest.fixture
async def serve(aiohttp_server: Any) -> Callable[[Handler], Awaitable[tuple[Upstream, TestServer]]]:
    async def start(handler: Handler) -> tuple[Upstream, TestServer]:
        upstream = Upstream(handler)
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", upstream.handle)
        return upstream, await aiohttp_server(app, host="127.0.0.1")

    return start


def _json(body: Any, status: int = 200, **headers: str) -> web.Response:
    return web.json_response(body, status=status, headers=headers)


async def test_success_sends_the_bearer_and_keeps_query_order_and_brackets(serve: Any) -> None:
    upstream, server = await serve(
        lambda r: _async(_json({"object": "list", "data": []}, **{"Request-Id": "req_1"}))
    )
    async with RsClient(str(server.make_url(""))) as rs:
        response = await rs.get_json(
            "/v1/streams/messages/records",
            [("filter[received_at][gte]", "2026-01-01T00:00:00Z"), ("fields", "id"), ("fields", "subject")],
            token=TOKEN,
        )
    assert response.body == {"object": "list", "data": []}
    assert response.request_id == "req_1"
    seen = upstream.requests[0]
    assert seen.headers["Authorization"] == f"Bearer {TOKEN}"
    assert list(seen.query.items()) == [
        ("filter[received_at][gte]", "2026-01-01T00:00:00Z"),
        ("fields", "id"),
        ("fields", "subject"),
    ]


async def test_base_url_path_prefix_is_kept(serve: Any) -> None:
    upstream, server = await serve(lambda r: _async(_json({})))
    async with RsClient(str(server.make_url("/rs/"))) as rs:
        await rs.get_json("/v1/schema", token=TOKEN)
    assert upstream.requests[0].path == "/rs/v1/schema"


def test_rs_path_encodes_each_segment() -> None:
    assert rs_path("v1", "streams", "a/b", "records", "x y:1") == "/v1/streams/a%2Fb/records/x%20y%3A1"


async def test_503_then_success_is_retried(serve: Any) -> None:
    answers = [
        _json({"error": {"code": "x"}}, 503),
        _json({"error": {"code": "x"}}, 503),
        _json({"ok": True}),
    ]
    upstream, server = await serve(lambda r: _async(answers.pop(0)))
    async with RsClient(str(server.make_url("")), retry=FAST) as rs:
        response = await rs.get_json("/v1/schema", token=TOKEN)
    assert response.body == {"ok": True}
    assert len(upstream.requests) == 3


async def test_persistent_503_is_bounded_and_typed(serve: Any) -> None:
    upstream, server = await serve(lambda r: _async(_json({"error": {"code": "maintenance"}}, 503)))
    async with RsClient(str(server.make_url("")), retry=FAST) as rs:
        with pytest.raises(RsUnavailableError) as caught:
            await rs.get_json("/v1/schema", token=TOKEN)
    assert len(upstream.requests) == 3
    assert caught.value.code == "upstream_unavailable"
    assert (caught.value.status, caught.value.upstream_code) == (503, "maintenance")


@pytest.mark.parametrize("status", [400, 401, 403, 404, 409, 410, 422, 500])
async def test_client_errors_and_500_are_not_retried_and_keep_the_envelope_whole(
    serve: Any, status: int
) -> None:
    envelope = {
        "type": "api_error",
        "code": "ambiguous_connection",
        "message": "pick one",
        "request_id": "req_9",
        "available_connections": [{"connection_id": "cin_a", "display_name": "Work"}],
        "retry_with": "connection_id",
    }
    upstream, server = await serve(lambda r: _async(_json({"error": envelope}, status)))
    async with RsClient(str(server.make_url("")), retry=FAST) as rs:
        with pytest.raises(RsStatusError) as caught:
            await rs.get_json("/v1/streams/m/records/r", token=TOKEN)
    assert len(upstream.requests) == 1
    assert caught.value.status == status
    assert caught.value.envelope == envelope
    assert caught.value.request_id == "req_9"


async def test_oauth_style_and_html_errors_are_normalised(serve: Any) -> None:
    answers = [
        _json({"error": "invalid_token", "error_description": "expired"}, 401),
        web.Response(
            status=500,
            text="<html><body>Traceback (most recent call last) ...</body></html>",
            content_type="text/html",
        ),
    ]
    _, server = await serve(lambda r: _async(answers.pop(0)))
    async with RsClient(str(server.make_url("")), retry=FAST) as rs:
        with pytest.raises(RsStatusError) as oauth:
            await rs.get_json("/v1/schema", token=TOKEN)
        with pytest.raises(RsStatusError) as html:
            await rs.get_json("/v1/schema", token=TOKEN)
    assert oauth.value.envelope == {"type": "invalid_token", "code": "invalid_token", "message": "expired"}
    assert html.value.envelope["code"] == "http_500"
    assert "Traceback" not in html.value.envelope["message"]


async def test_a_server_that_never_answers_times_out_within_the_bound(serve: Any) -> None:
    async def hang(request: web.Request) -> web.Response:
        await asyncio.sleep(30)
        return _json({})

    _, server = await serve(hang)
    timeouts = RsTimeouts(connect=0.5, read=0.2, total=0.5)
    async with RsClient(str(server.make_url("")), timeouts=timeouts, retry=FAST) as rs:
        with pytest.raises(RsTimeoutError) as caught:
            await asyncio.wait_for(rs.get_json("/v1/schema", token=TOKEN), timeout=5)
    assert caught.value.code == "upstream_timeout"
    assert (caught.value.phase, caught.value.seconds) == (TimeoutPhase.READ, 0.2)  # the bound that fired


async def test_connection_refused_is_unavailable(unused_tcp_port: int) -> None:
    async with RsClient(f"http://127.0.0.1:{unused_tcp_port}", retry=FAST) as rs:
        with pytest.raises(RsUnavailableError) as caught:
            await rs.get_json("/v1/schema", token=TOKEN)
    assert "cannot connect" in caught.value.reason


async def test_connection_reset_mid_request_is_unavailable(serve: Any) -> None:
    async def reset(request: web.Request) -> web.Response:
        assert request.transport is not None
        request.transport.close()
        await asyncio.sleep(0.05)
        return _json({})

    upstream, server = await serve(reset)
    async with RsClient(str(server.make_url("")), retry=FAST) as rs:
        with pytest.raises(RsUnavailableError):
            await rs.get_json("/v1/schema", token=TOKEN)
    # Closed before an answer: retried and bounded. aiohttp itself re-sends an idempotent request
    # once on a dropped connection, so each of the 3 attempts is at most 2 sends.
    assert 3 <= len(upstream.requests) <= 6


@pytest.mark.parametrize(
    ("response", "problem"),
    [
        (lambda: web.Response(text="not json", content_type="text/plain"), "not JSON"),
        (lambda: _json([1, 2, 3]), "list"),
        (
            lambda: web.Response(body=b'{"a": "' + b"x" * 5000 + b'"}', content_type="application/json"),
            "larger",
        ),
        # Loads fine, but no writer downstream could pass it on (a typed error, not a crash).
        (
            lambda: web.Response(body=b'{"a": ' * 300 + b"1" + b"}" * 300, content_type="application/json"),
            "nests",
        ),
    ],
)
async def test_unusable_success_bodies_are_protocol_errors(serve: Any, response: Any, problem: str) -> None:
    _, server = await serve(lambda r: _async(response()))
    async with RsClient(str(server.make_url("")), max_body_bytes=4096) as rs:
        with pytest.raises(RsProtocolError) as caught:
            await rs.get_json("/v1/schema", token=TOKEN)
    assert problem in caught.value.problem


async def test_blob_is_read_up_to_the_cap_only(serve: Any) -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB
    _, server = await serve(lambda r: _async(web.Response(body=payload, content_type="image/png")))
    async with RsClient(str(server.make_url(""))) as rs:
        small = await rs.get_bytes("/v1/blobs/b1", token=TOKEN, max_bytes=1000)
        whole = await rs.get_bytes("/v1/blobs/b1", token=TOKEN, max_bytes=2 * len(payload))
    assert small.truncated
    assert small.data == payload[:1000]
    assert small.total_bytes == len(payload)
    assert not whole.truncated
    assert whole.data == payload
    assert whole.content_type == "image/png"


async def test_the_token_never_appears_in_errors_or_logs(
    serve: Any, caplog: pytest.LogCaptureFixture
) -> None:
    _, server = await serve(lambda r: _async(_json({"error": {"code": "x", "message": "m"}}, 503)))
    with caplog.at_level(logging.DEBUG):
        async with RsClient(str(server.make_url("")), retry=FAST) as rs:
            bound = rs.bind(TOKEN)
            with pytest.raises(RsUnavailableError) as caught:
                await bound.get_json("/v1/schema", [("q", "private search terms")])
    assert TOKEN not in str(caught.value) + repr(caught.value) + repr(vars(caught.value))
    assert TOKEN not in repr(bound)
    assert TOKEN not in caplog.text
    assert "private search terms" not in caplog.text


async def _async(value: web.StreamResponse) -> web.StreamResponse:
    return value


async def test_a_request_url_too_long_for_the_rs_is_refused_before_sending(serve: Any) -> None:
    upstream, server = await serve(lambda r: _async(_json({})))
    observed: list[Any] = []
    query = [("fields", f"field_{i:03d}_" + "x" * 110) for i in range(64)]
    async with RsClient(str(server.make_url("")), observer=lambda *fact: observed.append(fact)) as rs:
        with pytest.raises(ToolError) as caught:
            await rs.get_json("/v1/streams/messages/records", query, token=TOKEN)
        with pytest.raises(ToolError):
            await rs.get_bytes("/v1/blobs/b", query, token=TOKEN, max_bytes=10)
        await rs.get_json("/v1/streams/messages/records", query[:8], token=TOKEN)  # a sane size still goes
    assert caught.value.code == "request_too_large"
    assert caught.value.envelope["type"] == "invalid_request_error"
    assert "x" * 110 not in caught.value.envelope["message"]
    assert len(upstream.requests) == 1
    assert len(observed) == 1  # a refused request is not an upstream outcome


async def test_a_cookie_the_rs_sets_on_one_callers_read_never_rides_on_anothers(serve: Any) -> None:
    """One client serves every caller of a hosted gateway: it must keep no cookies (a
    sticky-session or login cookie set on caller A's answer is A's, not B's)."""

    async def handler(request: web.Request) -> web.StreamResponse:
        response = _json({"object": "list", "data": []})
        response.set_cookie("rs_session", f"for-{request.headers['Authorization'][-1]}")
        return response

    upstream, server = await serve(handler)
    # By name, not IP: aiohttp's default jar would keep a cookie from a named host.
    url = str(server.make_url("")).replace("127.0.0.1", "localhost")
    async with RsClient(url) as rs:
        await rs.get_json("/v1/streams/messages/records", token="caller_a")
        await rs.get_json("/v1/streams/messages/records", token="caller_b")
    assert [r.headers.get("Cookie") for r in upstream.requests] == [None, None]


async def test_a_small_compressed_answer_that_inflates_past_the_cap_is_refused(serve: Any) -> None:
    inflated = b'{"a": "' + b"x" * 200_000 + b'"}'

    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(
            body=gzip.compress(inflated),
            headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
        )

    _, server = await serve(handler)
    async with RsClient(str(server.make_url("")), max_body_bytes=64 * 1024) as rs:
        with pytest.raises(RsProtocolError) as caught:
            await rs.get_json("/v1/schema", token=TOKEN)
        assert "larger" in caught.value.problem
        whole = RsClient(str(server.make_url("")), max_body_bytes=len(inflated))
        async with whole:
            answer = await whole.get_json("/v1/schema", token=TOKEN)
    assert answer.body == {"a": "x" * 200_000}
