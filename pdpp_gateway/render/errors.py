"""Text for failed calls: what happened, then the one thing to do next.

Contract: line 1 is ``Error <code> (HTTP <status>): <message>`` (no status for errors
the gateway raised itself; for RS codes whose message misleads, ``_MEANINGS`` says what
the RS means, in place of its words); line 2 is one actionable next step
chosen by code (for ambiguity errors it lists up to 12 connections to retry with); then
``param`` and ``request_id`` when present. An RS ``param`` names the REST parameter; the text names
the tool argument the caller can actually change (``q`` → ``query`` for search,
``filter[x]`` → ``filter``), keeping the REST name beside it. The stream and connection
the text names come from the call's parsed arguments (``tools.args.reads_from``: a record
handle's, parsed once by validation); a refusal of the arguments has none, and needs none.
The envelope in structured output stays the RS's, untouched. Bounded; never a traceback or
a token.

``next_step(envelope, status)`` is line 2 on its own, the only advice any error gets (a
``reconnect`` command, which a local door adds when renewing a lapsed grant was refused,
is named as the step to take):
resource reads end their JSON-RPC error message with it too, and upstream errors are
worded without advice (``render.upstream``). An envelope with ``retry_after_seconds``
(the circuit breaker holding calls back) says when: ``Retry in N s``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from mcp_gateway_middleware import ToolResult

from pdpp_gateway.context import Call
from pdpp_gateway.refusals import REFUSALS
from pdpp_gateway.render.common import clip, dumps
from pdpp_gateway.tools.args import named_stream, reads_from

MAX_CONNECTIONS: Final = 12
# REST parameter -> tool argument, where a tool renames one.
_TOOL_ARGUMENTS: Final[dict[str, dict[str, str]]] = {"search": {"q": "query"}}

# A grant the RS says is gone mid-session: the same advice as the doors' refusal of it
# (``refusals.REFUSALS``, the one table), for a model that does not know which door it is behind.
_GRANT_GONE: Final = {
    code: REFUSALS[code].next_step.format(
        connect="the app's sign-in, or `pdpp-gateway connect <provider-url>`"
    )
    for code in ("grant_revoked", "grant_expired")
}
_NEXT_STEPS: Final = {
    "field_not_granted": "That field is outside the grant; call schema(stream) to see the granted fields.",
    "unknown_field": "That field does not exist; call schema(stream) for the field names.",
    "context.stream_not_allowed": "That stream is not in this grant; call schema() for the granted streams.",
    "grant_stream_not_allowed": "A requested stream is not in this grant; call schema() for the granted streams.",
    "context.instance_mismatch": "That connection_id is not granted for this stream; call schema(stream) for its connections.",
    "connection_not_found": "That connection_id is not granted; call schema() for the granted connections.",
    "invalid_cursor": "Restart paging without cursor, keeping the same order/sort and query.",
    "cursor_expired": 'The change token is too old: resync with changes_since="beginning".',
    "not_found": "No such record under this grant; search again or check the id.",
    "field_not_found": "The record has no such field; call schema(stream) for the field names.",
    "query_not_found": "The text q was not found in that field; try another q or page with offset_chars.",
    "words_not_found": "Try the words the record itself would use, or page the field with offset_chars.",
    "field_not_text": "That field is not text; fetch the record (or its blob resource) instead.",
    "upstream_timeout": "Retry in a moment; if it keeps timing out, narrow the request (smaller limit, fewer fields).",
    "upstream_unavailable": "The resource server is down or overloaded; retry later.",
    "upstream_malformed_response": "Retry; if it persists, report it to the provider.",
    "internal_error": "Retry once; if it fails again, report it to the operator.",
    **_GRANT_GONE,
}


# RS refusals whose own message misleads a model: the reference RS words a grant-scope
# refusal on a {stream} route as a failed token check ("Token introspection failed closed", 401).
_MEANINGS: Final = {
    "context.stream_not_allowed": "Stream {stream} is not in this grant: the person did not share it with "
    "this app (the token itself is fine)",
    "context.instance_mismatch": "connection_id {connection} is not granted for stream {stream} (the token "
    "itself is fine)",
}


# Field errors that may only mean "not on the source the RS picked" for a shared stream name.
_PER_SOURCE_CODES: Final = frozenset({"unknown_field", "field_not_granted", "field_not_found"})
_SHARED_STREAM_HINT: Final = (
    "If this stream name is shared by several sources (schema() lists them), the field may exist on "
    "one of them only: pass that source's connection_id."
)
# The shape each argument takes, for invalid_* refusals that name it.
# (tool, argument) -> what the argument takes; a tool of None: any tool with that argument.
_ARGUMENT_HINTS: Final[dict[tuple[str | None, str], str]] = {
    (None, "filter"): 'Filters are {"field": value} (exact, fields flagged eq) or '
    '{"field": {"gte"|"gt"|"lte"|"lt": value}} (range, fields flagged r=); schema(stream) shows the flags.',
    ("aggregate", "group_by"): "group_by takes a field flagged a=…group_by in schema(stream).",
    ("aggregate", "group_by_time"): "group_by_time takes a date field flagged a=…group_by_time in "
    "schema(stream), with granularity.",
    ("aggregate", "field"): "field takes a field whose a=… flags in schema(stream) include this metric.",
    ("read_record_field", "field"): "field takes one top-level field of the record, as fetch or "
    "query_records shows it (schema(stream) lists them).",
}


def _argument_hint(tool: str, argument: str | None) -> str | None:
    if argument is None:
        return None
    return _ARGUMENT_HINTS.get((tool, argument)) or _ARGUMENT_HINTS.get((None, argument))


def render_error(call: Call, result: ToolResult) -> str:
    error: Mapping[str, Any] = result.structured.get("error") or {}
    code = str(error.get("code", "error"))
    status = result.structured.get("http_status")
    stream, connection = reads_from(call.parsed)
    message = meaning(code, stream, connection) or error.get("message", "")
    lines = [clip(f"Error {code}{f' (HTTP {status})' if status else ''}: {message}", 600)]
    argument = tool_argument(call.name, error.get("param"))
    step = next_step(error, status, argument)
    if step and code in _PER_SOURCE_CODES and named_stream(call.parsed) and not connection:
        step += f" {_SHARED_STREAM_HINT}"
    hint = _argument_hint(call.name, argument) if code.startswith("invalid_") else None
    if step and hint:
        step += f" {hint}"
    if step:
        lines.append(clip(step, 900))
    extras = []
    if argument:
        rest = error.get("param")
        extras.append(f"param={argument}" + (f" (REST parameter {rest})" if rest != argument else ""))
    if error.get("retry_with"):
        extras.append(f"retry_with={error['retry_with']}")
    request_id = error.get("request_id") or result.structured.get("request_id")
    if request_id:
        extras.append(f"request_id={request_id}")
    if extras:
        lines.append(" ".join(extras))
    return "\n".join(lines)


def meaning(code: str, stream: object, connection: object) -> str | None:
    """What the RS means by ``code`` for this stream and connection, in place of its
    misleading words, or None (nothing to name, or words that do not mislead)."""
    template = _MEANINGS.get(code)
    if template is None or not stream or ("{connection}" in template and not connection):
        return None  # nothing to name: the RS's own words stand
    return template.format(stream=dumps(stream), connection=dumps(connection)) + "."


def tool_argument(tool: str, param: object) -> str | None:
    """The tool argument behind an RS or gateway ``param`` (``q`` is search's ``query``)."""
    if not isinstance(param, str) or not param:
        return None
    base = param.split("[", 1)[0] or param
    return _TOOL_ARGUMENTS.get(tool, {}).get(base, base)


def next_step(error: Mapping[str, Any], status: object, argument: str | None = None) -> str | None:
    """The one thing to do next after ``error`` (an envelope; ``status`` its HTTP status),
    or None; ``argument`` is the tool argument its ``param`` names."""
    code = str(error.get("code", "error"))
    reconnect = error.get("reconnect")
    if isinstance(reconnect, str) and reconnect:
        return (
            "The access token lapsed and the grant could not be renewed: run "
            f"`{reconnect}` (the person approves the grant again in the browser), then retry."
        )
    wait = error.get("retry_after_seconds")
    if isinstance(wait, int) and not isinstance(wait, bool) and wait > 0:
        return f"Retry in {wait} s; calling sooner fails the same way."
    connections = [c for c in error.get("available_connections") or () if isinstance(c, Mapping)]
    if connections:
        listed = ", ".join(
            f"{c.get('connection_id')}"
            + (f" ({c['display_name']})" if c.get("display_name") else "")
            + (f" [{c['connector_key']}]" if c.get("connector_key") else "")
            for c in connections[:MAX_CONNECTIONS]
        )
        more = error.get("available_connection_count")
        extra = (
            f" ({more} in all; schema() lists every one)"
            if isinstance(more, int) and more > len(connections)
            else ""
        )
        return f"Retry with connection_id set to one of: {listed}{extra}."
    if code in _NEXT_STEPS:
        return _NEXT_STEPS[code]
    if status == 401:
        return "The credential is invalid or expired; reconnect with `pdpp-gateway connect <provider-url>`."
    if code.startswith("invalid_") or code == "conflicting_connection_id":
        return f"Fix the argument{f' {argument!r}' if argument else ''} as the message says and call again."
    if isinstance(status, int) and status >= 500:
        return "The resource server failed on its side: retry once in a moment; if it fails again, tell the person."
    if status == 403:
        return "This grant does not allow that read; call schema() to see what it covers."
    if isinstance(status, int) and status >= 400:
        return "The resource server refused this request as sent; adjust the arguments the message names."
    return None
