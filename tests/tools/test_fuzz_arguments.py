"""Property-based fuzzing of every tool's arguments through the whole tool pipeline.

For each of the six tools, at least ``CASES`` argument objects (1,000 in CI) go through
the same pipeline both doors serve, bound to a real grant on a real sandbox RS over
HTTP. Three kinds of input are drawn: arguments valid for the tool's own input schema
(drawn from the schema by ``schema_values``: ``hypothesis-jsonschema`` 0.23
does not run on current Hypothesis, and these schemas use a small subset), hostile objects (the tool's argument names, a few unknown
ones, and any JSON value, NaN and deep nesting included), and valid arguments with one
value swapped for a hostile one.

Every outcome must be a result a client can use:

- never ``internal_error``, never a traceback (nor any ERROR record) in the logs;
- an error is rendered text that starts with its typed code and stays bounded;
- a call the argument ladder refuses makes zero RS calls (the sandbox records every
  request it receives);
- a success passes the strict clients' ``outputSchema`` check.

CI (``CI`` set) replays a derandomised run so a green main stays green; locally each run
explores new inputs.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp_gateway_middleware import ToolCall, ToolResult
from mcp_gateway_middleware.validation import ValidateArguments, whole_numbers

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline
from pdpp_gateway.tools.registry import REGISTRY
from pdpp_gateway.tools.specs import TOOL_NAMES
from tests import strict_client

CASES = 1_000
MAX_ERROR_TEXT = 2_000
LADDER = ValidateArguments(REGISTRY.input_schemas, REGISTRY.checks)

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.sampled_from(["messages", "..", "a/b", "%2e%2e", "messages:1", "pdpp://record/x", "cin_mail_work"])
    | st.integers(min_value=2_000, max_value=5_000).map(lambda n: "x" * n)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=12,
)


STREAMS = ["messages", "threads", "message_bodies", "attachments", "channels", "issues", "pay_statements"]
# Arguments drawn from the sandbox's real names half the time, so valid draws reach the
# RS's success paths too, not only its 404s.
REAL: dict[str, st.SearchStrategy[Any]] = {
    "stream": st.sampled_from(STREAMS),
    "streams": st.lists(st.sampled_from(STREAMS), min_size=1, max_size=2),
    "connection_id": st.sampled_from(["cin_mail_work", "cin_mail_personal"]),
    "field": st.sampled_from(["body_text", "body_text", "subject", "sent_at", "amount"]),
    "record_id": st.sampled_from(["msg_work_0074", "msg_work_0130"]),
    "id": st.sampled_from(["cin_mail_work/messages:msg_work_0074", "messages:msg_work_0130"]),
    "query": st.sampled_from(["invoice", "Porto booking", "budget review"]),
    "fields": st.lists(st.sampled_from(["subject", "sent_at", "from_name"]), min_size=1, max_size=3),
}


def schema_values(schema: dict[str, Any], name: str = "") -> st.SearchStrategy[Any]:
    """Values valid for ``schema`` (an argument ``name``'s), for the keywords the tool schemas use."""
    if name in REAL:
        return REAL[name] | schema_values(schema)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if "anyOf" in schema:
        return st.one_of([schema_values(option) for option in schema["anyOf"]])
    kind = schema.get("type")
    if kind == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 60), 60))
    if kind == "integer":
        return st.integers(min_value=schema.get("minimum"), max_value=schema.get("maximum"))
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(
            schema_values(schema.get("items", {"type": "string"})),
            min_size=schema.get("minItems", 0),
            max_size=min(schema.get("maxItems", 4), 4),
        )
    if kind == "object" and "properties" in schema:
        properties = schema["properties"]
        required = set(schema.get("required", ()))
        return st.fixed_dictionaries(
            {name: schema_values(properties[name], name) for name in required},
            optional={
                name: schema_values(sub, name) for name, sub in properties.items() if name not in required
            },
        )
    if kind == "object":
        values = schema.get("additionalProperties")
        return st.dictionaries(
            st.text(min_size=1, max_size=20),
            schema_values(values) if isinstance(values, dict) else JSON,
            min_size=schema.get("minProperties", 0),
            max_size=min(schema.get("maxProperties", 3), 3),
        )
    return JSON


def valid(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    return schema_values(REGISTRY.input_schemas[tool])  # type: ignore[no-any-return]


def hostile(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    names = sorted(REGISTRY.input_schemas[tool]["properties"])
    keys = st.sampled_from([*names, "token", "owner", "__proto__", ""])
    return st.dictionaries(keys, JSON, max_size=6)


def swapped(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    names = sorted(REGISTRY.input_schemas[tool]["properties"])
    return st.tuples(valid(tool), st.sampled_from(names), JSON).map(
        lambda drawn: {**drawn[0], drawn[1]: drawn[2]}
    )


WORK_MAIL = "cin_mail_work/messages:msg_work_0074"
# Calls that succeed, each fuzzed with extra valid arguments (which may make it a refusal).
GOOD: dict[str, dict[str, Any]] = {
    "schema": {"stream": "messages", "connection_id": "cin_mail_work"},
    "query_records": {"stream": "pay_statements"},
    "aggregate": {"stream": "pay_statements", "metric": "count"},
    "search": {"query": "invoice"},
    "fetch": {"id": WORK_MAIL},
    "read_record_field": {"id": WORK_MAIL, "field": "body_text"},
}


def near_good(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    return valid(tool).map(lambda extra: {**GOOD[tool], **dict(list(extra.items())[:1])})


def arguments_for(tool: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(valid(tool), near_good(tool), hostile(tool), swapped(tool))


class ErrorRecords(logging.Handler):
    """Collects every ERROR (or worse) record, and any record carrying a traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info:
            self.records.append(record)


class Harness:
    """One event loop, one pooled RS client bound to a client grant, one pipeline."""

    def __init__(self, sandbox: Any) -> None:
        self.sandbox = sandbox
        self.runner = asyncio.Runner()
        self.rs = RsClient(sandbox.url)
        self.runner.run(self.rs.__aenter__())
        self.context = GatewayContext.for_client(self.rs.bind(sandbox.tokens["client_broad"]), sandbox.url)
        self.pipeline = build_pipeline()

    def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        return self.runner.run(self.pipeline(ToolCall(tool, arguments, self.context)))

    def close(self) -> None:
        self.runner.run(self.rs.__aexit__(None, None, None))
        self.runner.close()


@pytest.fixture(scope="module")
def harness(shared_sandbox: Any) -> Iterator[Harness]:
    harness = Harness(shared_sandbox)
    try:
        yield harness
    finally:
        harness.close()


@pytest.fixture(scope="module")
def error_records() -> Iterator[ErrorRecords]:
    handler = ErrorRecords()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def check_outcome(harness: Harness, tool: str, arguments: dict[str, Any], errors: ErrorRecords) -> str:
    """Assert the outcome is usable; return its kind: ``ok``, ``refused`` or ``rs_error``."""
    refusal = LADDER.rejection(tool, whole_numbers(arguments))
    harness.sandbox.calls.clear()
    result = harness.call(tool, arguments)
    text = result.text or ""
    assert not errors.records, [record.getMessage()[:300] for record in errors.records]
    assert "Traceback" not in text
    if result.is_error:
        code = str((result.structured.get("error") or {}).get("code"))
        assert code != "internal_error", (tool, arguments)
        assert text.startswith(f"Error {code}"), text[:200]
        assert len(text) <= MAX_ERROR_TEXT, (tool, len(text))
    else:
        strict_client.judge(tool, result.structured, is_error=False)
        assert text
    if refusal is not None:
        assert result.is_error, (tool, arguments)
        assert harness.sandbox.calls == [], (tool, arguments, refusal.code)
        return "refused"
    return "rs_error" if result.is_error else "ok"


FUZZ = settings(
    max_examples=CASES,
    deadline=None,
    derandomize=bool(os.environ.get("CI")),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_every_argument_object_ends_in_a_result_or_a_typed_refusal(
    tool: str, harness: Harness, error_records: ErrorRecords
) -> None:
    outcomes: Counter[str] = Counter()

    @FUZZ
    @given(arguments=arguments_for(tool))
    def run(arguments: dict[str, Any]) -> None:
        outcomes[check_outcome(harness, tool, arguments, error_records)] += 1

    run()
    assert outcomes.total() >= CASES
    # Both sides were exercised: calls that reached the RS and succeeded, and refusals.
    assert min(outcomes["ok"], outcomes["refused"]) >= 1, outcomes


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("aggregate", {"stream": "messages", "metric": []}),
        ("aggregate", {"stream": "messages", "metric": {}}),
        ("fetch", {"id": "messages:1", "expand": [[]]}),
        ("query_records", {"stream": "messages", "expand": [[]], "expand_limit": {"x": 1}}),
        ("query_records", {"stream": "messages", "filter": {"sent_at": {"gte": True}}}),
        ("fetch", {"id": "messages:" + "x" * 2_000}),
    ],
)
def test_inputs_that_once_crashed_are_typed_refusals_without_an_rs_call(
    tool: str, arguments: dict[str, Any], harness: Harness, error_records: ErrorRecords
) -> None:
    check_outcome(harness, tool, arguments, error_records)
    result = harness.call(tool, arguments)
    assert result.is_error
    assert len(result.text or "") < 700  # a 2,000-character id is quoted briefly, not echoed twice
