"""The hosted door in front of a failing RS: after repeated upstream failures, tool calls
fail fast with a typed error, ``Retry-After`` and its ``_meta`` twin, sending nothing."""

from __future__ import annotations

from typing import Any

import aiohttp

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.server import RETRY_AFTER_META
from tests.upstreams import Fault, proxied_settings, upstream_proxy

CALL = {
    "jsonrpc": "2.0",
    "id": 3,
    "method": "tools/call",
    "params": {"name": "query_records", "arguments": {"stream": "pay_statements", "limit": 1}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def test_a_dead_rs_trips_the_breaker_and_calls_fail_fast(sandbox: Any) -> None:
    async with upstream_proxy(sandbox.url) as board:
        settings = proxied_settings(sandbox.url, board, introspection=True)
        async with start_gateway(settings, public_self=True) as url, aiohttp.ClientSession() as http:
            headers = {**HEADERS, "Authorization": f"Bearer {sandbox.tokens['client_broad']}"}
            board.fault = Fault("status", 503)
            for _ in range(5):
                async with http.post(url, json=CALL, headers=headers) as response:
                    body = await response.json()
                assert body.get("result", {}).get("isError"), body
                assert "Retry-After" not in response.headers
            sent = len(board.data_reads())
            async with http.post(url, json=CALL, headers=headers) as response:
                body = await response.json()
            assert len(board.data_reads()) == sent  # nothing sent to the RS
            assert response.status == 200
            wait = int(response.headers["Retry-After"])
            assert 1 <= wait <= 10
            assert body["result"]["_meta"][RETRY_AFTER_META] == wait
            text = body["result"]["content"][0]["text"]
            assert text.startswith("Error upstream_unavailable")
            assert f"Retry in {wait} s" in text
            async with http.get(url.replace("/mcp", "/metrics")) as response:
                metrics = await response.text()
            assert 'pdpp_gateway_upstream_circuit{route="records",state="open"} 1.0' in metrics
            assert 'pdpp_gateway_upstream_held_total{route="records"} 1.0' in metrics
            board.fault = None
            healthy = {**CALL, "params": {"name": "schema", "arguments": {}}}
            async with http.post(url, json=healthy, headers=headers) as response:
                body = await response.json()
            assert not body["result"].get("isError")  # another route class is not held back
