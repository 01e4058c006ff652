"""What strict real clients accept, checked through the SDK's real client in both eras.

- Every node of every input schema has exactly one ``type`` (no type arrays) and every
  enum says its type: clients with single-type schema support (Gemini among them)
  refuse anything else.
- Every error result, whether the gateway refused the call or the RS did, carries no
  ``structuredContent`` that could break the tool's ``outputSchema`` (the TypeScript SDK
  1.x and the MCP Inspector turn such a result into ``-32602`` and the model never sees
  the error), and its text states the typed error and what to do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client

from tests import strict_client
from tests.strict_client import error_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

# One error per tool: refused by the gateway's ladder, or answered by the RS.
ERRORS = [
    ("schema", {"detail": "full"}, "invalid_arguments"),
    ("query_records", {"stream": "no_such_stream"}, None),
    ("query_records", {"stream": "messages", "filter": "from=a"}, "invalid_filter"),
    ("aggregate", {"stream": "messages", "metric": []}, "invalid_arguments"),
    ("search", {"query": "   "}, "invalid_arguments"),
    ("fetch", {"id": "messages:../../etc/passwd"}, "invalid_id"),
    ("fetch", {"id": "cin_mail_work/messages:no_such_record"}, None),
    ("read_record_field", {"id": "cin_mail_work/messages:msg_work_0074", "field": "no_such_field"}, None),
]


def schema_nodes(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from schema_nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from schema_nodes(value)


async def test_input_schemas_use_single_types_only(stdio_gateway: Client) -> None:
    listed = await stdio_gateway.list_tools()
    checked = 0
    for tool in listed.tools:
        for node in schema_nodes(tool.input_schema):
            if "type" in node and not isinstance(node.get("type"), dict):  # a property named "type" is a dict
                assert isinstance(node["type"], str), (tool.name, node)
                checked += 1
            if isinstance(node.get("enum"), list):
                assert node.get("type") == "string", (tool.name, node)
    assert checked > 50


@pytest.mark.parametrize(("tool", "arguments", "code"), ERRORS)
async def test_error_results_pass_the_strict_clients_output_check(
    stdio_gateway: Client, tool: str, arguments: dict[str, Any], code: str | None
) -> None:
    before = strict_client.JUDGED["error"]
    result = await stdio_gateway.call_tool(tool, arguments)
    assert result.is_error
    assert result.structured_content is None
    assert strict_client.JUDGED["error"] == before + 1  # the strict check saw it and passed it
    error = error_of(result)
    if code is not None:
        assert error["code"] == code
    lines = error["text"].splitlines()
    assert len(lines) >= 2, error["text"]  # the typed error, then what to do next


async def test_a_result_that_breaks_its_output_schema_is_caught() -> None:
    with pytest.raises(AssertionError, match="breaks the outputSchema"):
        strict_client.judge("fetch", {"error": {"code": "not_found"}}, is_error=True)
    with pytest.raises(AssertionError, match="without structuredContent"):
        strict_client.judge("search", None, is_error=False)
