"""Prometheus metrics of the hosted gateway (``prometheus_client``).

Contract: one ``Metrics`` per application, on its own registry (several apps can live
in one test process). Labels are bounded sets: the MCP method, the tool name (only the
six known tools, else ``other``), an outcome, a coarse upstream route (``records``,
``search``, ...), never an id, a query value or a token. Outcomes of an ``/mcp`` POST:
``ok``, ``tool_error`` (the tool answered ``isError``), ``protocol_error`` (a JSON-RPC
error from the server), ``refused`` (answered 4xx before reaching the server: request
shape, bearer, owner or package refusal; the method label is ``unparsed`` when the
body was never parsed) and ``unavailable`` (5xx before the server: the token could not
be checked). With ``--workers N`` the processes share one view through
``prometheus_client``'s multiprocess mode (``PROMETHEUS_MULTIPROC_DIR``, set by the
serve command before any metric exists); ``exposition()`` then aggregates every worker.

What a request records on its way (its count, latency, RS reads, verdict cache lookups) is
applied to the metrics once the event loop's current turn ends, after the answer being built
has been written: a caller never waits on bookkeeping. ``exposition()`` applies whatever is
still pending first, and outside a running loop a record is applied at once, so every read of
the metrics sees every answer already given.

Why a library: the text exposition format, histogram buckets and multi-process
aggregation are exactly what ``prometheus_client`` maintains; re-writing them would be
code of our own with none of its users.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any, Final

from prometheus_client import CONTENT_TYPE_LATEST as CONTENT_TYPE
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest, multiprocess

from pdpp_gateway.rs.resilience import CircuitState
from pdpp_gateway.tools.specs import TOOL_NAMES

LATENCY_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)

__all__ = ["CONTENT_TYPE", "Metrics"]


def tool_label(name: object) -> str:
    return name if isinstance(name, str) and name in TOOL_NAMES else "other"


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "pdpp_gateway_mcp_requests",
            "MCP requests answered, by method, tool and outcome.",
            ["method", "tool", "outcome"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "pdpp_gateway_mcp_request_seconds",
            "Time to answer an MCP request, by method, tool and outcome.",
            ["method", "tool", "outcome"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.responses = Counter(
            "pdpp_gateway_http_responses",
            "HTTP responses, by route and status (refusals show here as 4xx/5xx on /mcp).",
            ["route", "status"],
            registry=self.registry,
        )
        self.upstream_latency = Histogram(
            "pdpp_gateway_upstream_seconds",
            "Time of RS reads, by coarse route and status class.",
            ["route", "status"],
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.upstream_errors = Counter(
            "pdpp_gateway_upstream_errors",
            "RS reads that failed (non-2xx answer or no answer), by coarse route and status.",
            ["route", "status"],
            registry=self.registry,
        )
        self.token_cache = Counter(
            "pdpp_gateway_token_cache_lookups",
            "Bearer verdict cache lookups (introspection or schema probe), by result.",
            ["result"],
            registry=self.registry,
        )

        self.circuit = Gauge(
            "pdpp_gateway_upstream_circuit",
            "1 for the state each route class's circuit breaker is in (closed, open, half_open), else 0.",
            ["route", "state"],
            registry=self.registry,
            multiprocess_mode="max",
        )
        self.held = Counter(
            "pdpp_gateway_upstream_held",
            "RS reads the circuit breaker held back (failed fast, nothing sent), by coarse route.",
            ["route"],
            registry=self.registry,
        )

        self.connections_open = Gauge(
            "pdpp_gateway_connections_open",
            "HTTP connections open (bounded by the connection ceiling).",
            registry=self.registry,
            multiprocess_mode="livesum",
        )
        self.connections_closed = Counter(
            "pdpp_gateway_connections_closed",
            "Connections the gateway closed, by reason: idle_timeout, header_timeout, keepalive_timeout, "
            "evicted (the longest-waiting, for a newcomer at the ceiling), refused (a newcomer, 503).",
            ["reason"],
            registry=self.registry,
        )

        self.servers = Gauge(
            "pdpp_gateway_mcp_servers",
            "MCP servers held, one per public origin served (bounded).",
            registry=self.registry,
            multiprocess_mode="max",
        )

        # Each labelled child, once looked up (``labels()`` checks and locks every time);
        # every label set is bounded (see the module contract), so this stays small.
        self._children: dict[tuple[Any, ...], Any] = {}
        self._pending: list[tuple[Callable[..., None], tuple[Any, ...]]] = []

    def _later(self, apply: Callable[..., None], *args: Any) -> None:
        """``apply(*args)`` once this turn of the running loop ends (at once without one)."""
        pending = self._pending
        pending.append((apply, args))
        if len(pending) == 1:
            try:
                asyncio.get_running_loop().call_soon(self.apply_pending)
            except RuntimeError:
                self.apply_pending()

    def apply_pending(self) -> None:
        """Apply every record still waiting for the end of a loop turn."""
        pending, self._pending = self._pending, []
        for apply, args in pending:
            apply(*args)

    def _child(self, metric: Counter | Histogram, *labels: str) -> Any:
        key = (id(metric), *labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def observe_request(self, method: str, tool: str, outcome: str, seconds: float) -> None:
        self._later(self._observe_request, method, tool, outcome, seconds)

    def _observe_request(self, method: str, tool: str, outcome: str, seconds: float) -> None:
        self._child(self.requests, method, tool, outcome).inc()
        self._child(self.latency, method, tool, outcome).observe(seconds)

    def count_response(self, route: str, status: int) -> None:
        self._later(self._count_response, route, status)

    def _count_response(self, route: str, status: int) -> None:
        self._child(self.responses, route, str(status)).inc()

    def observe_upstream(self, route: str, status: int | None, seconds: float) -> None:
        """One RS read: ``route`` is its route class (``rs.routes``), never the path."""
        self._later(self._observe_upstream, route, status, seconds)

    def _observe_upstream(self, route: str, status: int | None, seconds: float) -> None:
        label = f"{status // 100}xx" if status is not None else "none"
        self._child(self.upstream_latency, route, label).observe(seconds)
        if status is None or status >= 400:
            self._child(self.upstream_errors, route, str(status) if status is not None else "no_answer").inc()

    def observe_circuit(self, route: str, state: CircuitState) -> None:
        for each in CircuitState:
            self.circuit.labels(route, each.value).set(1 if each is state else 0)

    def count_held(self, route: str) -> None:
        self._child(self.held, route).inc()

    def count_connection_closed(self, reason: str) -> None:
        self._child(self.connections_closed, reason).inc()

    def observe_token_cache(self, hit: bool) -> None:
        self._later(self._observe_token_cache, hit)

    def _observe_token_cache(self, hit: bool) -> None:
        self._child(self.token_cache, "hit" if hit else "miss").inc()

    def exposition(self) -> bytes:
        self.apply_pending()
        if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            combined = CollectorRegistry()
            multiprocess.MultiProcessCollector(combined)  # type: ignore[no-untyped-call]
            return generate_latest(combined)
        return generate_latest(self.registry)
