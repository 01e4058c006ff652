"""Requests aiohttp's parser cannot read: a typed 400, and no token in any answer or log.

aiohttp's own handler logs such a request at error level with the offending line (the
bearer in it) and writes that line into its plain-text 400 body; the gateway's handler
answers a JSON-RPC error that echoes nothing and logs the error's class only.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import pytest
from aiohttp import web

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.hosted.http_server import GatewayRunner, RedactBearers, redact
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.upstreams import raw_exchange

TOKEN = "sbx_malformed_probe_5f1d0c9e"


def malformed_requests(host: str, token: str) -> dict[str, bytes]:
    start = f"POST /mcp HTTP/1.1\r\nHost: {host}\r\n".encode()
    end = b"Content-Length: 0\r\n\r\n"
    return {
        "nul-after-token": start + f"Authorization: Bearer {token}".encode() + b"\x00\r\n" + end,
        "header-over-limit": start + f"Authorization: Bearer {token}{'a' * 9000}\r\n".encode() + end,
        "header-without-colon": start + f"Authorization Bearer {token}\r\n".encode() + end,
        "token-in-long-target": f"POST /mcp?access_token={token}{'b' * 9000} HTTP/1.1\r\nHost: {host}\r\n".encode()
        + end,
        "control-char-in-name": start + f"X-Au\x01th: Bearer {token}\r\n".encode() + end,
        "bad-version": f"POST /mcp?access_token={token} HTTP/9.7\r\nHost: {host}\r\n".encode() + end,
    }


CASES = list(malformed_requests("h", TOKEN))


@pytest.fixture
async def gateway(shared_sandbox: Any) -> Any:
    async with start_gateway(sandbox_settings(shared_sandbox.url)) as url:
        yield url


def everything_logged(caplog: pytest.LogCaptureFixture) -> str:
    formatter = logging.Formatter()
    return "\n".join(
        record.getMessage()
        + (formatter.formatException(record.exc_info) if record.exc_info else "")
        + repr(getattr(record, "fields", ""))
        for record in caplog.records
    )


@pytest.mark.parametrize("case", CASES)
async def test_malformed_request_is_a_json_rpc_400_without_the_token(
    gateway: str, case: str, caplog: pytest.LogCaptureFixture
) -> None:
    host = gateway.split("//")[1].split("/")[0]
    with caplog.at_level(logging.DEBUG):
        answer = await raw_exchange(gateway, malformed_requests(host, TOKEN)[case])
    assert answer.status == 400
    body = answer.json()
    assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", None, -32600)
    assert body["error"]["data"]["code"] == "malformed_http"
    assert TOKEN not in (answer.head + answer.body).decode("latin-1")
    logged = everything_logged(caplog)
    assert TOKEN not in logged
    assert "malformed HTTP request" in logged  # the event is still visible to the operator
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_redaction_filter_scrubs_bearer_values_from_message_and_traceback() -> None:
    try:
        raise ValueError(f"b'Authorization: Bearer {TOKEN}\\x00'")
    except ValueError:
        record = logging.LogRecord(
            "aiohttp.server", logging.ERROR, __file__, 1, "line %s", (f"Bearer {TOKEN}",), None
        )
        record.exc_info = sys.exc_info()
    assert RedactBearers().filter(record)
    assert TOKEN not in record.getMessage()
    assert TOKEN not in str(record.fields)  # type: ignore[attr-defined]
    assert record.exc_info is None
    assert redact(f"authorization: BEARER\t{TOKEN}") == "authorization: BEARER\t[redacted]"


async def test_a_handler_defect_is_a_json_rpc_500_logged_without_the_bearer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken(request: web.Request) -> web.Response:
        raise RuntimeError(f"defect while holding {request.headers['Authorization']}")

    app = web.Application()
    app.router.add_post("/mcp", broken)
    runner = GatewayRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/mcp"
    try:
        with caplog.at_level(logging.DEBUG):
            answer = await raw_exchange(
                url,
                f"POST /mcp HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 0\r\n\r\n".encode(),
            )
    finally:
        await runner.cleanup()
    assert answer.status == 500
    assert (answer.json()["error"]["code"], answer.json()["error"]["data"]["code"]) == (
        -32603,
        "internal_error",
    )
    assert TOKEN not in (answer.head + answer.body).decode("latin-1")
    logged = everything_logged(caplog)
    assert "RuntimeError" in logged  # the defect stays diagnosable
    assert TOKEN not in logged
