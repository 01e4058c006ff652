"""OpenTelemetry: one trace from the client's call through the gateway to the RS GET, and
never a person's data or a token in a span.

In process with the SDK's in-memory exporter (the hosted door, a client sending
``traceparent``), then as an operator runs it: ``serve`` and ``stdio`` processes exporting
over OTLP/HTTP to a receiver in the test, configured by the standard environment only.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.local.credentials import write_credential
from pdpp_gateway.observe import tracing
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.conftest import run_cli
from tests.frames import INITIALIZED, initialize
from tests.hosted.test_serve_command import SECRET, serve
from tests.upstreams import proxied_settings, serve_app, upstream_proxy

MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def traceparent() -> tuple[str, str, str]:
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return f"00-{trace_id}-{span_id}-01", trace_id, span_id


def call(name: str, arguments: dict[str, Any], request_id: int = 1) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


@pytest.fixture
def exported() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_provider(provider)
    try:
        yield exporter
    finally:
        tracing.use_provider(None)


async def post(url: str, token: str, body: dict[str, Any], parent: str | None) -> dict[str, Any]:
    headers = {**MCP_HEADERS, "Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2025-11-25"}
    if parent:
        headers["traceparent"] = parent
    async with aiohttp.ClientSession() as http, http.post(url, json=body, headers=headers) as response:
        assert response.status == 200, await response.text()
        answer: dict[str, Any] = await response.json()
        return answer


def named(spans: tuple[ReadableSpan, ...], name: str) -> list[ReadableSpan]:
    return [span for span in spans if span.name == name]


async def test_one_tool_call_is_one_trace_from_the_client_to_the_rs(
    exported: InMemorySpanExporter, shared_sandbox: Any
) -> None:
    token = shared_sandbox.tokens["client_broad"]
    parent, trace_id, client_span = traceparent()
    async with (
        upstream_proxy(shared_sandbox.url) as board,
        start_gateway(proxied_settings(shared_sandbox.url, board, introspection=True)) as url,
    ):
        answer = await post(url, token, call("query_records", {"stream": "messages", "limit": 2}), parent)
        assert answer["result"]["isError"] is False
    spans = exported.get_finished_spans()
    assert {format(span.context.trace_id, "032x") for span in spans} == {trace_id}
    (request,) = named(spans, "POST /mcp")
    assert request.parent is not None
    assert format(request.parent.span_id, "016x") == client_span
    assert request.attributes is not None
    assert request.attributes["http.response.status_code"] == 200
    (tool,) = named(spans, "tools/call query_records")
    assert tool.parent is not None
    assert tool.parent.span_id == request.context.span_id
    assert tool.attributes is not None
    assert tool.attributes["pdpp.outcome"] == "ok"
    assert tool.attributes["pdpp.request_id"] == request.attributes["pdpp.request_id"]
    stages = {span.name for span in spans if span.name.startswith("stage ")}
    assert {"stage validation", "stage fan-out", "stage upstream"} <= stages
    (read,) = named(spans, "RS GET records")
    assert read.attributes is not None
    assert read.attributes["http.response.status_code"] == 200
    assert str(read.attributes["pdpp.rs.request_id"]).startswith("req_")
    upstream = next(s for s in spans if s.name == "stage upstream")
    assert read.parent is not None
    assert read.parent.span_id != request.context.span_id
    assert upstream.context.trace_id == read.context.trace_id
    # The RS was sent the RS GET span's own context, so its spans join this trace.
    sent = [
        tp for tp, path in zip(board.traceparents, board.paths(), strict=True) if path.endswith("/records")
    ]
    assert sent == [f"00-{trace_id}-{format(read.context.span_id, '016x')}-01"]


async def test_an_error_is_its_code_and_no_span_holds_a_token_an_argument_or_a_record(
    exported: InMemorySpanExporter, shared_sandbox: Any
) -> None:
    token = shared_sandbox.tokens["client_broad"]
    secret_stream = "stream_named_" + secrets.token_hex(4)
    async with start_gateway(sandbox_settings(shared_sandbox.url)) as url:
        found = await post(url, token, call("search", {"query": "Porto booking code", "limit": 3}), None)
        page = await post(url, token, call("query_records", {"stream": "messages", "limit": 3}, 2), None)
        refused = await post(url, token, call("query_records", {"stream": secret_stream}, 3), None)
    assert refused["result"]["isError"] is True
    records = page["result"]["structuredContent"]["data"]["data"]
    spans = exported.get_finished_spans()
    failed = named(spans, "tools/call query_records")[1]
    assert failed.attributes is not None
    assert failed.attributes["pdpp.outcome"] == "error"
    assert failed.attributes["error.type"]
    everything = "\n".join(span.to_json() for span in spans)
    forbidden = [token, secret_stream, "Porto booking code", "Porto"]
    forbidden += [str(value) for record in records for value in _texts(record) if len(str(value)) >= 12]
    forbidden += [json.dumps(found["result"]["content"][0]["text"])[1:40]]
    leaked = [value for value in forbidden if value and value in everything]
    assert not leaked, leaked


def _texts(value: Any) -> Iterator[Any]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
    elif isinstance(value, str):
        yield value


class Receiver:
    """An OTLP/HTTP trace receiver: every span posted to ``/v1/traces``, decoded."""

    def __init__(self) -> None:
        self.spans: list[Any] = []

    async def accept(self, request: web.Request) -> web.Response:
        export = ExportTraceServiceRequest.FromString(await request.read())
        for resource in export.resource_spans:
            for scope in resource.scope_spans:
                self.spans.extend(scope.spans)
        return web.Response(body=b"", content_type="application/x-protobuf")

    def names(self) -> set[str]:
        return {span.name for span in self.spans}

    async def wait_for(self, name: str, seconds: float = 15) -> Any:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            for span in self.spans:
                if span.name == name:
                    return span
            await anyio.sleep(0.05)
        raise AssertionError(f"no {name!r} span arrived; got {sorted(self.names())}")


@asynccontextmanager
async def receiving() -> AsyncIterator[tuple[Receiver, str]]:
    receiver = Receiver()
    app = web.Application()
    app.router.add_post("/v1/traces", receiver.accept)
    async with serve_app(app) as url:
        yield receiver, url


def otel_env(endpoint: str) -> dict[str, str]:
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"}


async def test_serve_exports_the_clients_trace_over_otlp_and_logs_its_id(shared_sandbox: Any) -> None:
    parent, trace_id, _ = traceparent()
    async with (
        receiving() as (receiver, endpoint),
        serve(
            "--provider-url",
            shared_sandbox.url,
            "--port",
            "0",
            "--introspection-url",
            f"{shared_sandbox.url}/introspect",
            "--introspection-client-id",
            "pdpp-gateway",
            "--introspection-client-secret",
            SECRET,
            env=otel_env(endpoint),
        ) as gateway,
    ):
        url = await gateway.wait_listening()
        token = shared_sandbox.tokens["client_broad"]
        await post(url, token, call("schema", {}), parent)
        read = await receiver.wait_for("RS GET schema")
        assert read.trace_id.hex() == trace_id
        assert {"POST /mcp", "tools/call schema", "stage validation"} <= receiver.names()
        await gateway.stop()
    logged = {line.get("trace_id") for line in gateway.lines if line.get("request_id")}
    assert trace_id in logged  # the request's own log lines carry the trace


async def stdio_schema_call(
    tmp_path: Path, sandbox: Any, env: dict[str, str], exit_within: float = 120
) -> subprocess.CompletedProcess[str]:
    """A stdio session with a cached grant that opens, calls ``schema`` once and ends."""
    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, sandbox.url, sandbox.tokens["client_broad"])
    frames = [initialize(), INITIALIZED, call("schema", {}, 2)]
    stdio = partial(
        run_cli,
        "stdio",
        "--provider-url",
        sandbox.url,
        "--cache-root",
        str(cache_root),
        env=env,
        stdin="".join(json.dumps(frame) + "\n" for frame in frames),
        timeout=exit_within,
    )
    done: subprocess.CompletedProcess[str] = await anyio.to_thread.run_sync(stdio)
    return done


async def test_stdio_exports_its_tool_calls_over_otlp(tmp_path: Path, shared_sandbox: Any) -> None:
    async with receiving() as (receiver, endpoint):
        done = await stdio_schema_call(tmp_path, shared_sandbox, otel_env(endpoint))
        assert done.returncode == 0, done.stderr
        tool = await receiver.wait_for("tools/call schema")
        read = await receiver.wait_for("RS GET schema")
        assert read.trace_id == tool.trace_id


@asynccontextmanager
async def hanging_collector() -> AsyncIterator[tuple[str, asyncio.Event]]:
    """A TCP listener that takes every connection and every byte and never answers; the
    event is set once an exporter has connected."""
    held: list[asyncio.StreamWriter] = []
    reached = asyncio.Event()

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        reached.set()
        while await reader.read(65536):
            pass

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}", reached
    finally:
        for writer in held:
            writer.close()
        server.close()


GRACE_SECONDS = 2
EXITED_WITHIN = 12  # seconds after SIGTERM: generously above the grace, far below the 30 s the SDK waits


async def test_sigterm_exits_within_the_grace_when_the_collector_hangs(shared_sandbox: Any) -> None:
    async with (
        hanging_collector() as (endpoint, reached),
        serve(
            "--provider-url",
            shared_sandbox.url,
            "--shutdown-grace-seconds",
            str(GRACE_SECONDS),
            "--introspection-url",
            f"{shared_sandbox.url}/introspect",
            "--introspection-client-id",
            "pdpp-gateway",
            "--introspection-client-secret",
            SECRET,
            env={**otel_env(endpoint), "OTEL_EXPORTER_OTLP_TIMEOUT": "30"},  # each export may wait 30 s
        ) as gateway,
    ):
        url = await gateway.wait_listening()
        answer = await post(url, shared_sandbox.tokens["client_broad"], call("schema", {}), None)
        assert "result" in answer  # served as usual while the collector hangs
        await asyncio.wait_for(reached.wait(), 30)  # the exporter is stuck on the collector
        code = await asyncio.wait_for(gateway.stop(), EXITED_WITHIN)
    assert code == 0
    events = [line.get("event") for line in gateway.lines]
    assert "trace_flush_abandoned" in events
    assert events.index("trace_flush_abandoned") < events.index("stopped")


async def test_stdio_ends_promptly_when_the_collector_hangs(tmp_path: Path, shared_sandbox: Any) -> None:
    async with hanging_collector() as (endpoint, reached):
        done = await stdio_schema_call(
            tmp_path,
            shared_sandbox,
            {**otel_env(endpoint), "OTEL_EXPORTER_OTLP_TIMEOUT": "30"},
            exit_within=EXITED_WITHIN,  # stdin closed, every call answered: the spans wait 2 s at most
        )
        assert reached.is_set()
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == [1, 2]
    assert "did not take the last spans" in done.stderr
