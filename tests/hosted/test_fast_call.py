"""The hosted fast path for ``tools/call`` answers what the SDK path answers, byte for byte.

Each request goes to one gateway twice: through the fast path (``hosted/fast_call.py``),
then with the fast path switched off, so through the SDK's ``serve_one``. Status, headers
(but ``Date`` and ``Request-Id``), body
bytes (but the RS's request id a result names), body bytes and the metrics each answer adds must be the same, in both
protocol eras; and each case says whether the fast path was meant to take it (so a fast
path that silently declines everything fails here).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import aiohttp
import pytest

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.hosted.fast_call import FastToolCall
from pdpp_gateway.sandbox.fronting import sandbox_settings
from pdpp_gateway.server import RETRY_AFTER_META
from tests.upstreams import Fault, proxied_settings, upstream_proxy

V2026 = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": V2026,
    "io.modelcontextprotocol/clientCapabilities": {},
}
NAMED_ENVELOPE = {**ENVELOPE, "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "1.0"}}
PAGE = {"stream": "messages", "limit": 2, "connection_id": "cin_mail_work"}
# era name -> MCP-Protocol-Version header (None: left out)
ERAS = {"default": None, "2024-11-05": "2024-11-05", "2025-11-25": "2025-11-25", "2026": V2026}

Answer = tuple[int, dict[str, str], bytes]
# A result names the RS's id for the read it made (a new one per read): the one run of
# bytes that differs between any two answers.
RS_REQUEST_ID = re.compile(rb"req_[0-9a-f]{16}")
PER_ANSWER = frozenset({"Date", "Request-Id"})  # headers that differ between any two answers


def call(name: Any, arguments: Any = PAGE, **params: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, **params}
    if arguments is not ...:
        body["arguments"] = arguments
    return {"jsonrpc": "2.0", "id": "req-7", "method": "tools/call", "params": body}


def enveloped(body: dict[str, Any], meta: dict[str, Any] = ENVELOPE) -> dict[str, Any]:
    return {**body, "params": {**body["params"], "_meta": {**meta, **body["params"].get("_meta", {})}}}


def headers(token: str, era: str, body: dict[str, Any]) -> dict[str, str]:
    sent = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
    version = ERAS[era]
    if version is not None:
        sent["MCP-Protocol-Version"] = version
    if version == V2026:
        sent["Mcp-Method"] = body["method"]
        if isinstance(body["params"].get("name"), str):
            sent["Mcp-Name"] = body["params"]["name"]
    return sent


class Paths:
    """Sends one request through the fast path, then through the SDK path."""

    def __init__(self, url: str, token: str, monkeypatch: pytest.MonkeyPatch) -> None:
        self.url = url
        self.token = token
        self.monkeypatch = monkeypatch
        self.fast_runs = 0
        original = FastToolCall.run

        async def counted(fast: FastToolCall, *args: Any) -> Any:
            self.fast_runs += 1
            return await original(fast, *args)

        monkeypatch.setattr(FastToolCall, "run", counted)

    @contextmanager
    def sdk_only(self) -> Iterator[None]:
        with self.monkeypatch.context() as patch:
            patch.setattr(FastToolCall, "match", lambda fast, decoded, version: None)
            yield

    async def send(self, http: aiohttp.ClientSession, era: str, body: dict[str, Any]) -> Answer:
        if ERAS[era] == V2026:
            body = enveloped(body)
        async with http.post(self.url, json=body, headers=headers(self.token, era, body)) as response:
            sent = {name: value for name, value in response.headers.items() if name not in PER_ANSWER}
            return response.status, sent, RS_REQUEST_ID.sub(b"req_<rs>", await response.read())

    async def counters(self, http: aiohttp.ClientSession) -> dict[str, float]:
        async with http.get(self.url.removesuffix("/mcp") + "/metrics") as response:
            text = await response.text()
        values: dict[str, float] = {}
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            name, _, value = line.rpartition(" ")
            if name.split("{")[0].endswith(("_total", "_count")):
                values[name] = float(value)
        return values

    async def both(
        self, http: aiohttp.ClientSession, era: str, body: dict[str, Any]
    ) -> tuple[Answer, Answer, bool]:
        """Each path's answer, whether the fast path took the request; the metrics each
        answer added are checked to be the same. A first send, not compared, lets the
        caller's grant memo learn what the call needs, so both paths meet the same state."""
        await self.send(http, era, body)
        runs = self.fast_runs
        before = await self.counters(http)
        fast = await self.send(http, era, body)
        middle = await self.counters(http)
        took_fast = self.fast_runs > runs
        with self.sdk_only():
            sdk = await self.send(http, era, body)
        after = await self.counters(http)
        assert self.fast_runs == runs + took_fast
        assert _delta(before, middle) == _delta(middle, after)
        return fast, sdk, took_fast


def _first_difference(one: bytes, other: bytes) -> tuple[bytes, bytes]:
    at = next(
        (i for i, (a, b) in enumerate(zip(one, other, strict=False)) if a != b), min(len(one), len(other))
    )
    return one[max(0, at - 60) : at + 60], other[max(0, at - 60) : at + 60]


def _delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    return {
        name: value - before.get(name, 0)
        for name, value in after.items()
        if value != before.get(name, 0) and "/metrics" not in name
    }


CASES = {
    # case -> (request, does the fast path take it)
    "success": (call("query_records"), True),
    "arguments null": (call("schema", None), True),
    "arguments left out": (call("schema", ...), True),
    "invalid arguments (isError)": (call("query_records", {"stream": "messages", "limit": "five"}), True),
    "not granted (isError)": (call("query_records", {"stream": "pay_statements", "limit": 1}), True),
    "unknown tool": (call("no_such_tool"), False),
    "name not a string": (call(7), False),
    "arguments not an object": (call("query_records", [1, 2]), False),
    "extra params member": (call("query_records", task={"ttl": 1000}), False),
    "handshake _meta": (call("query_records", _meta={"progressToken": 3}), False),
}


@pytest.fixture
async def gateway(shared_sandbox: Any) -> Any:
    async with start_gateway(sandbox_settings(shared_sandbox.url), public_self=True) as url:
        yield url


@pytest.mark.parametrize("era", ERAS)
async def test_fast_and_sdk_paths_answer_the_same_bytes(
    gateway: str, shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch, era: str
) -> None:
    paths = Paths(gateway, shared_sandbox.tokens["client_narrow"], monkeypatch)
    async with aiohttp.ClientSession() as http:
        await paths.send(http, era, call("schema"))  # warm: token cache, server per origin
        for case, (body, fast_expected) in CASES.items():
            if ERAS[era] == V2026 and case == "handshake _meta":
                continue  # a 2026 _meta holds the envelope: its own cases below
            fast, sdk, took_fast = await paths.both(http, era, body)
            assert fast == sdk, (case, _first_difference(fast[2], sdk[2]))
            assert took_fast is fast_expected, case
            assert fast[0] == 200 or not fast_expected, case


async def test_the_answers_compared_are_the_real_ones(
    gateway: str, shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the byte comparison above compares: records, a typed tool error, the SDK's errors."""
    paths = Paths(gateway, shared_sandbox.tokens["client_narrow"], monkeypatch)
    async with aiohttp.ClientSession() as http:
        await paths.send(http, "default", call("schema"))  # warm the token cache
        (_, _, page), _, _ = await paths.both(http, "2026", call("query_records"))
        (_, _, refused), _, _ = await paths.both(http, "default", CASES["not granted (isError)"][0])
        (_, _, unknown), _, _ = await paths.both(http, "default", call("no_such_tool"))
    assert b'"structuredContent":{' in page
    assert b'"resultType":"complete"' in page
    assert b'"io.modelcontextprotocol/serverInfo"' in page
    assert b'"isError":true' in refused
    assert b"structuredContent" not in refused
    assert b'"code":-32602' in unknown


@pytest.mark.parametrize(
    ("meta", "fast_expected"),
    [
        (NAMED_ENVELOPE, True),
        ({**ENVELOPE, "io.modelcontextprotocol/clientCapabilities": {"roots": 5}}, False),
        ({**ENVELOPE, "io.modelcontextprotocol/clientInfo": {"name": 5}}, False),
        ({**ENVELOPE, "progressToken": "p1"}, False),
    ],
    ids=["client-info", "bad-capabilities", "bad-client-info", "progress-token"],
)
async def test_2026_envelopes_the_fast_path_takes_and_leaves(
    gateway: str,
    shared_sandbox: Any,
    monkeypatch: pytest.MonkeyPatch,
    meta: dict[str, Any],
    fast_expected: bool,
) -> None:
    paths = Paths(gateway, shared_sandbox.tokens["client_narrow"], monkeypatch)
    body = call("query_records", _meta=meta)
    async with aiohttp.ClientSession() as http:
        await paths.send(http, "2026", call("schema"))  # warm the token cache
        for _ in range(2):  # the second time, the envelope's verdict is remembered
            fast, sdk, took_fast = await paths.both(http, "2026", body)
            assert fast == sdk
            assert took_fast is fast_expected


@pytest.mark.parametrize("era", ["default", "2026"])
async def test_open_breaker_answer_and_retry_after_are_the_same(
    sandbox: Any, monkeypatch: pytest.MonkeyPatch, era: str
) -> None:
    async with upstream_proxy(sandbox.url) as board:
        settings = proxied_settings(sandbox.url, board, introspection=True)
        async with start_gateway(settings, public_self=True) as url, aiohttp.ClientSession() as http:
            paths = Paths(url, sandbox.tokens["client_broad"], monkeypatch)
            body = call("query_records", {"stream": "pay_statements", "limit": 1})
            await paths.send(http, era, call("schema"))
            board.fault = Fault("status", 503)
            for _ in range(5):
                await paths.send(http, era, body)
            fast, sdk, took_fast = await paths.both(http, era, body)
    assert took_fast
    assert fast == sdk
    status, sent, answer = fast
    assert status == 200
    assert int(sent["Retry-After"]) >= 1
    assert f'"_meta":{{"{RETRY_AFTER_META}":{sent["Retry-After"]}'.encode() in answer
