"""A resource read's answer, shaped without the SDK: its contents, or its JSON-RPC error.

Contract (no SDK import: the stdio door answers reads with it before the SDK has loaded;
``resources`` builds the SDK's types from the same parts, so both paths say the same):

- ``run(context, uri)`` reads one ``pdpp://`` URI through ``resources.reads.PIPELINE``
  (an unknown kind of URI is refused as ``invalid_uri``) and returns its ``ToolResult``,
  or raises the ``ToolError`` it was refused with.
- ``contents(uri, result)``: the read's ``contents`` as the SDK writes them
  (``wire.read_result``): JSON bodies, one per answering source; or a blob (its
  ``Content-Type``, ``application/octet-stream`` when the RS names none). The read's
  ``result`` around them is ``wire.read_result.result_wire``.
- ``error_object(error, uri, modern=...)``: the JSON-RPC error of a refused read:
  ``code`` from the one status table (``wire.codes``; see ``resources``), ``message``
  ``<code>: <message>`` and the next step (``render.errors.next_step``) within
  ``MAX_ERROR_MESSAGE`` characters, ``data`` the typed envelope naming the ``uri`` (cut
  past ``MAX_URI_ECHO``); ``uri`` None leaves it out (``resources/list``). A read outside the
  grant (``errors.ASKED_OUTSIDE_GRANT``, which the RS words as a failed token check) has the
  tool error's words in its data too: ``permission_error``, the message and next step above,
  no ``resource_metadata`` (no sign-in fixes it).
"""

from __future__ import annotations

from typing import Any, Final

from mcp_gateway_middleware import ToolCall, ToolError, ToolResult

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.refusals import REFUSALS
from pdpp_gateway.render.errors import meaning, next_step
from pdpp_gateway.resources.reads import BLOB_DATA, BODIES, PARSERS, PIPELINE, kind_of, unknown_uri
from pdpp_gateway.rs.client import RsBlob
from pdpp_gateway.rs.errors import ASKED_OUTSIDE_GRANT
from pdpp_gateway.wire import codes as rpc_codes
from pdpp_gateway.wire.envelope import error as error_envelope
from pdpp_gateway.wire.read_result import blob_contents, json_contents

MAX_ERROR_MESSAGE: Final = 300
MAX_STEP_CHARS: Final = 160  # of MAX_ERROR_MESSAGE, kept for the next step
MAX_URI_ECHO: Final = 1000  # characters of the URI named back in an error's data
_TRY_AGAIN: Final = frozenset({"upstream_unavailable", "upstream_timeout"})


async def run(context: GatewayContext, uri: str) -> ToolResult:
    """Read ``uri`` with the caller's grant; a refusal is raised as its ``ToolError``."""
    kind = kind_of(uri)
    if kind is None:
        raise unknown_uri(uri)
    return await PIPELINE(ToolCall(kind, {"uri": uri}, context))


def contents(uri: str, result: ToolResult) -> list[dict[str, Any]]:
    blob = result.annotations.get(BLOB_DATA)
    if isinstance(blob, RsBlob):
        return [blob_contents(uri, blob.data, blob.content_type)]
    return [json_contents(uri, body) for body in result.structured[BODIES]]


def error_object(error: ToolError, uri: str | None, *, modern: bool) -> dict[str, Any]:
    """The JSON-RPC error object of a refused read (see the module contract)."""
    param = error.envelope.get("param")
    step = next_step(
        error.envelope, error.extra.get("http_status"), param if isinstance(param, str) else None
    )
    step = _bounded(step, MAX_STEP_CHARS) if step else ""
    message = _meaning(error.code, uri) or error.envelope.get("message", "")
    said = _bounded(f"{error.code}: {message}", MAX_ERROR_MESSAGE - len(step) - 2)
    if step and not said.endswith((".", "!", "?", "…")):
        said += "."  # an RS message without its full stop must not run into the next step
    code = _json_rpc_code(error)
    if modern and code == rpc_codes.NOT_FOUND:
        code = rpc_codes.INVALID_PARAMS  # the 2026-07-28 era retired -32002
    data = dict(error.envelope)
    if error.code in ASKED_OUTSIDE_GRANT:  # what was asked is outside the grant, not the token
        data.update(type="permission_error", message=_bounded(message, MAX_ERROR_MESSAGE), next_step=step)
        data.pop("resource_metadata", None)  # no sign-in fixes it: the credential is fine
    if uri is not None:
        data["uri"] = uri if len(uri) <= MAX_URI_ECHO else uri[: MAX_URI_ECHO - 1] + "…"
    return error_envelope(code, f"{said} {step}" if step else said, data)


def _meaning(code: str, uri: str | None) -> str | None:
    """The tool error's words for an RS refusal whose own words mislead (a stream outside the
    grant worded as a failed token check), naming the stream the URI reads."""
    kind = kind_of(uri) if uri is not None else None
    if kind is None or uri is None:
        return None
    try:
        read = PARSERS[kind]({"uri": uri})
    except ToolError:
        return None
    return meaning(code, read.stream, read.connection_id)


def _json_rpc_code(error: ToolError) -> int:
    """By the one status table (``wire.codes``); a caller's mistake is a bad URI (``-32602``)."""
    if error.code in REFUSALS:  # a credential refused, by the RS or by its kind
        return REFUSALS[error.code].rpc_code
    if error.code in ASKED_OUTSIDE_GRANT:  # a 401 for a stream or connection the grant lacks
        return rpc_codes.INVALID_PARAMS
    if error.code in _TRY_AGAIN:
        return rpc_codes.UNAVAILABLE  # unreachable, held back or too slow: try again shortly
    status = error.extra.get("http_status")
    if isinstance(status, int):  # the RS's own answer, or a package connection not found
        return rpc_codes.for_status(status, caller_fault=rpc_codes.INVALID_PARAMS)
    if error.envelope.get("type") == "invalid_request_error" or error.code == "ambiguous_connection":
        return rpc_codes.INVALID_PARAMS  # refused before any RS call: fix the URI
    return rpc_codes.INTERNAL_ERROR  # an unusable answer


def _bounded(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
