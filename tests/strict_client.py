"""Every tool result the suite receives is judged as the strictest real clients judge it.

The TypeScript SDK 1.x client (behind Claude Desktop and Claude Code) and the MCP
Inspector validate a result's ``structuredContent`` against the tool's ``outputSchema``
whenever it is present, error results included, and refuse a success result without
one. The Python SDK checks success results only, so ``install`` wraps its
``ClientSession.call_tool`` for the whole test session: any result that one of those
clients would turn into ``-32602`` fails the test that received it. ``JUDGED`` counts
what was checked, so a test can prove the check saw both kinds.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import jsonschema
from mcp.client.session import ClientSession
from mcp.types import CallToolResult

from pdpp_gateway.sandbox.config import TOKENS
from pdpp_gateway.tools.specs import TOOLS

OUTPUT_SCHEMAS = {tool.name: tool.output_schema for tool in TOOLS}
JUDGED: Counter[str] = Counter()
_VALIDATORS = {
    name: jsonschema.Draft202012Validator(schema) for name, schema in OUTPUT_SCHEMAS.items() if schema
}


def judge(name: str, structured: Any, *, is_error: bool) -> None:
    """Raise ``AssertionError`` where a strict client would reject this result."""
    validator = _VALIDATORS.get(name)
    if validator is None:
        return
    if structured is None:
        assert is_error, f"{name}: a success result without structuredContent (the tool has an outputSchema)"
    else:
        problems = [error.message for error in validator.iter_errors(structured)]
        assert not problems, f"{name}: structuredContent breaks the outputSchema: {problems[:3]}"
    JUDGED["error" if is_error else "ok"] += 1


@contextmanager
def install() -> Iterator[None]:
    original = ClientSession.call_tool

    @functools.wraps(original)
    async def call_tool(self: ClientSession, name: str, *args: Any, **kwargs: Any) -> Any:
        result = await original(self, name, *args, **kwargs)  # type: ignore[call-overload]
        if isinstance(result, CallToolResult):
            judge(name, result.structured_content, is_error=bool(result.is_error))
            wire = result.model_dump_json()
            assert not [token for token in TOKENS.values() if token in wire], f"{name}: a token in a result"
        return result

    with mock.patch.object(ClientSession, "call_tool", call_tool):
        yield


_FIRST_LINE = re.compile(r"^Error (?P<code>[\w.]+)(?: \(HTTP (?P<status>\d{3})\))?: ")
_PARAM = re.compile(r"\bparam=(?P<param>\S+)")


def error_of(result: CallToolResult) -> dict[str, Any]:
    """The typed error a model reads in an ``isError`` result's text: code, status, param."""
    assert result.is_error, "expected an error result"
    text = result.content[0].text  # type: ignore[union-attr]
    first = _FIRST_LINE.match(text)
    assert first, f"error text does not start with 'Error <code>': {text[:200]!r}"
    param = _PARAM.search(text)
    return {
        "code": first["code"],
        "http_status": int(first["status"]) if first["status"] else None,
        "param": param["param"] if param else None,
        "text": text,
    }
