"""OpenTelemetry traces for operators: off by default, and free when off.

Contract:

- ``start_tracing()`` (``serve``'s workers and ``stdio`` call it once) turns tracing on
  when the OpenTelemetry SDK and its OTLP/HTTP exporter are installed
  (``pip install 'pdpp-gateway[otel]'``) and an endpoint is named by the standard
  ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (unless
  ``OTEL_SDK_DISABLED=true`` or ``OTEL_TRACES_EXPORTER=none``). Spans are exported in
  batches over OTLP/HTTP; the exporter reads the other ``OTEL_*`` variables itself, and the
  service is ``OTEL_SERVICE_NAME`` or ``pdpp-gateway``. ``use_provider(provider)`` turns
  it on with a given ``TracerProvider`` (tests: an in-memory exporter). When off, nothing
  here imports OpenTelemetry and every hook is one test of a module flag.
- The spans, one trace per call: ``POST /mcp`` (a server span, continuing the client's
  W3C ``traceparent``; hosted door) > ``tools/call <tool>`` > a span per pipeline stage
  (``stage validation``, ``stage fan-out``, ``stage upstream``, ...; one ``stage upstream``
  per package member when a call fans out) > ``RS GET <route class>`` (a client span whose
  context travels to the RS in ``traceparent``, so the RS's spans join).
- Attributes are facts about the call, never a person's data: the tool name, its outcome
  and error code, the RS route class (``records``, ``search``; never a path, which holds
  stream names and record ids), the RS status and ``Request-Id``, the gateway's
  ``request_id``. Never a token, an argument value, a query or record content (a test
  searches every exported span).
- ``trace_id()`` is the current trace's id (hex) for the JSON log lines, or ``None``.
- ``stop_tracing(seconds)`` exports the spans still queued and stops, within ``seconds``
  whatever the collector does: a dead or hanging collector costs the spans not yet taken
  (one warning), never the deadline. ``serve`` calls it with what is left of the shutdown
  grace; at exit it runs with ``EXIT_FLUSH_SECONDS`` (the SDK's own exit hook, which
  waits up to 30 s, is not installed).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import threading
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final

from pdpp_gateway.observe.request_id import REQUEST_ID

if TYPE_CHECKING:
    from mcp_gateway_middleware import ToolCall, ToolResult
    from mcp_gateway_middleware.pipeline import C, Middleware, Next
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

SERVICE: Final = "pdpp-gateway"
EXIT_FLUSH_SECONDS: Final = 2.0
_ENDPOINTS: Final = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_tracer: Tracer | None = None
_exporting: TracerProvider | None = None  # the provider start_tracing made: stopped by stop_tracing
_log = logging.getLogger(__name__)
_OFF: Final[AbstractContextManager[None]] = contextlib.nullcontext()  # shared: no object per call when off


def enabled() -> bool:
    return _tracer is not None


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for traces (an OTLP endpoint, not switched off)."""
    if environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return False
    if environ.get("OTEL_TRACES_EXPORTER", "otlp").lower() == "none":
        return False
    return any(environ.get(name) for name in _ENDPOINTS)


def start_tracing() -> bool:
    """Turn tracing on when the environment asks for it and the SDK is installed; says
    whether it is on (a missing SDK is one warning, and the gateway serves untraced)."""
    if _tracer is not None or not wanted():
        return _tracer is not None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError:
        _log.warning(
            "OTEL_EXPORTER_OTLP_ENDPOINT is set but OpenTelemetry is not installed: serving without traces "
            "(install pdpp-gateway[otel])"
        )
        return False
    global _exporting
    service = os.environ.get("OTEL_SERVICE_NAME") or SERVICE
    provider = TracerProvider(resource=Resource.create({"service.name": service}), shutdown_on_exit=False)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    use_provider(provider)
    _exporting = provider
    atexit.register(stop_tracing, EXIT_FLUSH_SECONDS)
    return True


def stop_tracing(seconds: float) -> bool:
    """Export what is queued and stop within ``seconds``; whether every span went out.

    The SDK's shutdown waits on the exporter (up to 30 s against a collector that does not
    answer), so it runs in a daemon thread of its own and is abandoned at the deadline."""
    global _exporting
    provider, _exporting = _exporting, None
    if provider is None:
        return True
    use_provider(None)
    stopping = threading.Thread(target=provider.shutdown, name="pdpp-trace-flush", daemon=True)
    stopping.start()
    stopping.join(max(0.0, seconds))
    if stopping.is_alive():
        _log.warning(
            "the trace collector did not take the last spans within %.1f s; they are dropped",
            max(0.0, seconds),
            extra={"fields": {"event": "trace_flush_abandoned"}},
        )
        return False
    return True


def use_provider(provider: TracerProvider | None) -> None:
    """Trace through ``provider`` from now on (``None``: tracing off again)."""
    global _tracer
    if provider is None:
        _tracer = None
        return
    from opentelemetry.propagate import set_global_textmap
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    set_global_textmap(TraceContextTextMapPropagator())
    _tracer = provider.get_tracer("pdpp_gateway")


def trace_id() -> str | None:
    if _tracer is None:
        return None
    from opentelemetry.trace import get_current_span

    context = get_current_span().get_span_context()
    return format(context.trace_id, "032x") if context.is_valid else None


def request_span(method: str, route: str, headers: Mapping[str, str]) -> AbstractContextManager[Span | None]:
    """The server span of one HTTP request, continuing the client's ``traceparent``."""
    return _OFF if _tracer is None else _request_span(method, route, headers)


@contextlib.contextmanager
def _request_span(method: str, route: str, headers: Mapping[str, str]) -> Iterator[Span | None]:
    from opentelemetry.propagate import extract
    from opentelemetry.trace import SpanKind

    carrier = {
        key.lower(): value for key, value in headers.items() if key.lower() in ("traceparent", "tracestate")
    }
    with _span(
        f"{method} {route}",
        context=extract(carrier),
        kind=SpanKind.SERVER,
        attributes={"http.request.method": method, "http.route": route},
    ) as span:
        yield span


def traced_stages(stages: list[Middleware[C]], labels: list[str | None]) -> list[Middleware[C]]:
    """``stages`` with the tool call's span first and a span around each labelled stage, when
    tracing is on; unchanged (no cost per call) when it is off."""
    if _tracer is None:
        return stages
    traced = (
        stage if label is None else _stage_span(stage, label)
        for stage, label in zip(stages, labels, strict=True)
    )
    return [_tool_call_span, *traced]


async def _tool_call_span(call: ToolCall[C], next_: Next[C]) -> ToolResult:
    assert _tracer is not None

    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": call.name}
    request_id = REQUEST_ID.get()
    if request_id:
        attributes["pdpp.request_id"] = request_id
    with _span(f"tools/call {call.name}", attributes=attributes) as span:
        result = await next_(call)
        span.set_attribute("pdpp.outcome", "error" if result.is_error else "ok")
        if result.is_error:
            error = result.structured.get("error")
            code = error.get("code") if isinstance(error, dict) else None
            span.set_attribute("error.type", code if isinstance(code, str) else "tool_error")
            from opentelemetry.trace import StatusCode

            span.set_status(StatusCode.ERROR)
        return result


def _stage_span(stage: Middleware[C], label: str) -> Middleware[C]:
    async def traced(call: ToolCall[C], next_: Next[C]) -> ToolResult:
        with _span(f"stage {label}"):
            return await stage(call, next_)

    return traced


def rs_span(route: str, headers: MutableMapping[str, str]) -> AbstractContextManager[Span | None]:
    """The client span of one RS GET; its context is added to ``headers`` as ``traceparent``."""
    return _OFF if _tracer is None else _rs_span(route, headers)


@contextlib.contextmanager
def _rs_span(route: str, headers: MutableMapping[str, str]) -> Iterator[Span | None]:
    from opentelemetry.propagate import inject
    from opentelemetry.trace import SpanKind

    with _span(
        f"RS GET {route}",
        kind=SpanKind.CLIENT,
        attributes={"http.request.method": "GET", "pdpp.rs.route": route},
    ) as span:
        inject(headers)
        yield span


@contextlib.contextmanager
def _span(name: str, **options: Any) -> Iterator[Span]:
    """A current span that never records an exception's message (it may quote a person's
    data): a failure is its class name in ``error.type`` and an error status."""
    assert _tracer is not None
    with _tracer.start_as_current_span(
        name, record_exception=False, set_status_on_exception=False, **options
    ) as span:
        try:
            yield span
        except Exception as error:
            from opentelemetry.trace import StatusCode

            span.set_attribute("error.type", type(error).__name__)
            span.set_status(StatusCode.ERROR)
            raise


def rs_answered(span: Span | None, status: int | None, request_id: str | None) -> None:
    """What the RS answered, on its span."""
    if span is None:
        return
    if status is not None:
        span.set_attribute("http.response.status_code", status)
    if request_id:
        span.set_attribute("pdpp.rs.request_id", request_id[:128])
