"""The library's contract with a stranger: stage order checked at compose(), a version, a changelog.

A gateway that puts the stock stages in an order that would lose text or refusals learns it
when it builds the pipeline, with a message naming the stages and the order to use; the
canonical order answers an error result with text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mcp_gateway_middleware import (
    FanOut,
    PipelineOrderError,
    PreserveErrors,
    RefuseTokenKinds,
    RenderContent,
    ToolCall,
    ToolResult,
    ValidateArguments,
    __version__,
    compose,
    gateway_error,
)

LIBRARY = Path(__file__).resolve().parents[2] / "middleware"
SCHEMAS = {"echo": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}}


async def echo_tool(call: ToolCall[None]) -> ToolResult:
    return ToolResult({"echo": call.arguments["text"]})


def render_error(call: ToolCall[None], result: ToolResult) -> str:
    return f"Error {result.structured['error']['code']}"


def stages() -> dict[str, object]:
    return {
        "render": RenderContent[None]({}, render_error),
        "preserve": PreserveErrors[None](),
        "kinds": RefuseTokenKinds[None](
            lambda call: "user", {"admin"}, lambda kind: gateway_error("no", "no")
        ),
        "validate": ValidateArguments(SCHEMAS),
        "fan_out": FanOut[None](lambda call: None, lambda call, subs, outcomes: ToolResult({})),
    }


async def test_the_canonical_order_answers_an_error_with_text() -> None:
    parts = stages()
    pipeline = compose([parts[name] for name in parts], echo_tool)  # type: ignore[misc]
    refused = await pipeline(ToolCall("echo", {"text": 5}, None))
    assert (refused.is_error, refused.text) == (True, "Error invalid_arguments")


@pytest.mark.parametrize(
    ("order", "complaint"),
    [
        (["preserve", "render", "validate"], "RenderContent is below PreserveErrors"),
        (["validate", "render", "preserve"], "ValidateArguments is above every PreserveErrors"),
        (["render", "preserve", "fan_out", "validate"], "ValidateArguments is below FanOut"),
        (["render", "preserve", "validate", "kinds"], "RefuseTokenKinds is below ValidateArguments"),
    ],
)
def test_a_misordered_pipeline_fails_at_compose(order: list[str], complaint: str) -> None:
    parts = stages()
    with pytest.raises(PipelineOrderError, match=complaint) as raised:
        compose([parts[name] for name in order], echo_tool)  # type: ignore[misc]
    assert "RenderContent → PreserveErrors" in str(raised.value)  # says which order to use


def test_render_and_preserve_may_repeat_around_validation() -> None:
    parts = stages()
    again = [RenderContent[None]({}, render_error), PreserveErrors[None]()]
    compose([parts["render"], parts["preserve"], parts["validate"], *again, parts["fan_out"]], echo_tool)  # type: ignore[list-item]


def test_a_pipeline_without_preserve_errors_may_let_refusals_out() -> None:
    # A caller that handles ToolError itself (a resource read answered as a protocol error).
    parts = stages()
    compose([parts["validate"], parts["fan_out"]], echo_tool)  # type: ignore[list-item]


def test_the_version_and_changelog_agree() -> None:
    changelog = (LIBRARY / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.match(r"\d+\.\d+\.\d+", __version__)
    assert f"## {__version__.split('+')[0]}" in changelog
    assert "## Stability (0.x)" in changelog
