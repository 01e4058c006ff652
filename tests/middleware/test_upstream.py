"""HTTP upstream helpers, against a real upstream over HTTP: statuses, timeouts and connection
errors become typed tool errors; safe calls are retried, unsafe ones never; a per-call deadline
bounds routed and fanned-out calls alike."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from mcp_gateway_middleware import (
    FanOut,
    Outcome,
    PreserveErrors,
    RenderContent,
    ToolCall,
    ToolError,
    ToolResult,
    compose,
)
from mcp_gateway_middleware.timeouts import CallTimeout
from mcp_gateway_middleware.upstream import HttpUpstream

SECRET = "db-password=hunter2"


def upstream_app(hits: dict[str, int]) -> web.Application:
    async def handle(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        hits[name] = hits.get(name, 0) + 1
        if request.headers.get("Authorization") != "Bearer upstream-token":
            return web.json_response({"error": {"code": "unauthorized", "message": "Bad token."}}, status=401)
        if name == "ok":
            return web.json_response({"temperature_c": 4.5})
        if name == "missing":
            envelope = {"code": "no_station", "message": "No station XYZ.", "nearest": ["OSL"]}
            return web.json_response({"error": envelope}, status=404)
        if name == "plain":
            return web.Response(status=400, text="bad query")
        if name == "boom":
            return web.Response(status=500, text=f"Traceback ... {SECRET}")
        if name == "flaky" and hits[name] == 1:
            return web.Response(status=503)
        if name == "flaky":
            return web.json_response({"second": True})
        if name == "slow":
            await asyncio.sleep(30)
        return web.Response(status=200, text="[1, 2]")

    app = web.Application()
    app.router.add_route("*", "/{name}", handle)
    return app


@pytest.fixture
async def weather(aiohttp_server: Any) -> Any:
    hits: dict[str, int] = {}
    server = await aiohttp_server(upstream_app(hits))
    async with aiohttp.ClientSession() as session:
        yield (
            HttpUpstream(
                session,
                str(server.make_url("/")),
                name="Weather A",
                headers={"Authorization": "Bearer upstream-token"},
                timeout=0.5,
            ),
            hits,
        )


async def refused(upstream: HttpUpstream, method: str, path: str) -> ToolError:
    with pytest.raises(ToolError) as raised:
        await upstream.call(method, path)
    assert "upstream-token" not in str(raised.value.envelope)
    return raised.value


async def test_a_2xx_json_object_is_the_answer(weather: Any) -> None:
    upstream, _ = weather
    assert await upstream.call("GET", "ok") == {"temperature_c": 4.5}


async def test_a_4xx_keeps_the_upstream_s_envelope_whole(weather: Any) -> None:
    upstream, _ = weather
    error = await refused(upstream, "GET", "missing")
    assert error.envelope == {"code": "no_station", "message": "No station XYZ.", "nearest": ["OSL"]}
    assert error.extra == {"http_status": 404, "upstream": "Weather A"}
    plain = await refused(upstream, "GET", "plain")
    assert (plain.code, plain.envelope["message"]) == (
        "upstream_refused",
        "Weather A refused the call (400): 'bad query'.",
    )


async def test_a_5xx_hides_its_body(weather: Any) -> None:
    upstream, hits = weather
    error = await refused(upstream, "GET", "boom")
    assert (error.code, error.envelope["message"]) == (
        "upstream_unavailable",
        "Weather A failed (500); retry later.",
    )
    assert SECRET not in str(error.envelope)
    assert SECRET not in str(error.extra)
    assert hits["boom"] == 1  # a 500 is not one of the retried statuses


async def test_a_safe_call_is_retried_and_an_unsafe_one_never(weather: Any) -> None:
    upstream, hits = weather
    assert await upstream.call("GET", "flaky") == {"second": True}
    assert hits["flaky"] == 2
    hits.clear()
    error = await refused(upstream, "POST", "flaky")
    assert (error.code, hits["flaky"]) == ("upstream_unavailable", 1)


async def test_timeouts_connection_errors_and_non_objects_are_typed(weather: Any) -> None:
    upstream, hits = weather
    assert (await refused(upstream, "GET", "slow")).code == "upstream_timeout"
    assert hits["slow"] == 1  # a timeout is never retried
    assert (await refused(upstream, "GET", "list")).code == "upstream_invalid"
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # closed again: nothing listens there
    async with aiohttp.ClientSession() as session:
        gone = HttpUpstream(session, f"http://127.0.0.1:{port}", name="Weather B", retries=1)
        error = await refused(gone, "GET", "ok")
    assert error.code == "upstream_unreachable"
    assert str(port) not in error.envelope["message"]  # no URL in an error


async def test_a_per_call_deadline_bounds_routed_and_fanned_out_calls(weather: Any) -> None:
    upstream, _ = weather

    async def site(call: ToolCall[str]) -> ToolResult:
        return ToolResult(await upstream.call("GET", call.context))

    def plan(call: ToolCall[str]) -> Sequence[ToolCall[str]] | None:
        if call.context != "both":
            return None
        return [ToolCall(call.name, call.arguments, "ok"), ToolCall(call.name, call.arguments, "slow")]

    def merge(call: ToolCall[str], subs: Sequence[ToolCall[str]], outcomes: Sequence[Outcome]) -> ToolResult:
        return ToolResult(
            {
                "answered": [o.structured for o in outcomes if isinstance(o, ToolResult)],
                "late": [o.code for o in outcomes if isinstance(o, ToolError)],
            }
        )

    pipeline = compose(
        [
            RenderContent[str]({}, lambda call, result: result.structured["error"]["message"]),
            PreserveErrors[str](),
            FanOut[str](plan, merge),
            CallTimeout[str](0.05),
        ],
        site,
    )
    merged = await pipeline(ToolCall("current", {}, "both"))
    assert merged.structured == {"answered": [{"temperature_c": 4.5}], "late": ["upstream_timeout"]}
    routed = await pipeline(ToolCall("current", {}, "slow"))
    assert (
        routed.text
        == "current got no answer from its upstream within 0.05 s; retry later or narrow the call."
    )
