"""A tool call's JSON-RPC ``result`` as the SDK writes it, shaped without the SDK.

Contract: ``result_wire(result, modern=..., stamp=...)`` is the ``result`` object the SDK's
server writes for the pipeline's ``ToolResult`` (``server.call_tool_result`` dumped by the
SDK), in the SDK's wire order: ``_meta`` (the retry hint of an error worth retrying later),
``content``, ``isError``, ``resultType`` in the 2026-07-28 era, ``structuredContent`` (a
success only), and in that era the server's identity ``stamp`` added last to ``_meta``
(``envelope.stamped``). It answers ``None`` for a result whose parts are not the plain
types the pipeline promises (then only the SDK's serialiser may shape it); write it with
``json_bytes.encode``.

Both fast paths use it: the hosted ``tools/call`` (``hosted/fast_call.py``) and the stdio
calls answered before the SDK has loaded (``fast_start/calls.py``); ``tests/wire`` pins it
against the SDK's bytes in both eras. It imports no SDK module: the stdio door runs it
before the SDK is loaded.
"""

from __future__ import annotations

from typing import Any, Final

from mcp_gateway_middleware import ToolResult

from pdpp_gateway.wire.envelope import COMPLETE, RESULT_TYPE, stamped

# ``_meta`` of an error result that is worth retrying later (the RS breaker is open): the
# hosted door also sends it as ``Retry-After``.
RETRY_AFTER_META: Final = "dev.pdpp/retry_after_seconds"


def retry_after(result: ToolResult) -> int | None:
    """An error result's retry hint in seconds (the RS breaker is open), else ``None``."""
    wait = (result.structured.get("error") or {}).get("retry_after_seconds") if result.is_error else None
    return wait if isinstance(wait, int) else None


def result_wire(result: ToolResult, *, modern: bool, stamp: dict[str, Any] | None) -> dict[str, Any] | None:
    """The JSON-RPC ``result`` of ``result`` as the SDK writes it (``stamp``: the server's
    identity, stamped in the 2026-07-28 era), or ``None`` when it is not plain data."""
    text = result.text or ""
    if type(text) is not str or type(result.is_error) is not bool:
        return None
    content = [{"text": text, "type": "text"}]
    if result.is_error:
        wait = retry_after(result)
        wire: dict[str, Any] = {"_meta": {RETRY_AFTER_META: wait}} if wait is not None else {}
        wire["content"] = content
        wire["isError"] = True
        if modern:
            wire[RESULT_TYPE] = COMPLETE
    else:
        structured = result.structured
        if type(structured) is not dict:
            return None
        wire = {"content": content, "isError": False}
        if modern:
            wire[RESULT_TYPE] = COMPLETE
        wire["structuredContent"] = structured
    return stamped(wire, stamp) if modern else wire
