"""The stdio front door once the SDK has loaded: one caller, one MCP server.

Contract:

- ``serve_sdk`` takes the session over from the early path (``fast_start.session``), with
  the caller's one context (a single grant, or a local package of cached grants, built by
  ``local.readers.caller_context``: each member reads with its own token through its
  renewing, kind-checked reader) and the process's one tool pipeline, the same ones the
  early calls used. The process's stdin and stdout were claimed at start
  (``fast_start.wire``) and the credential checked (``rs.start_probe``, and again with
  renewal for a token refused as lapsed). The SDK's ``stdio_server`` then reads the
  pump's lines and writes whole frames to the wire; the SDK is the protocol kernel for
  every request the early path did not take.
- Reads renew the access token ahead of its expiry, and once after the RS refuses it as
  lapsed (401, or the reference's 403 ``grant_expired``), with the cached refresh token,
  and carry on (``local.renewing_rs``): a session outlives its tokens.
- The serve loop is the library's (``mcp_gateway_middleware.sdk_stdio.run_stdio``): it serves
  until stdin closes AND every request read before that has been answered (bounded by its
  ``DRAIN_SECONDS``; the SDK's loop alone would cancel in-flight handlers at end of input
  and lose the answers of a client that pipes its requests and half-closes stdin), logging
  under this module's logger. This door plugs in its stdin and stdout (the pump's lines,
  the wire), the hand-over (``pump.hand_over`` once the streams are open) and
  ``answered_early``: the SDK's answers to requests answered early are not written again;
  each is compared with the early bytes and a difference is logged as an error (a stale
  ``answers.json``).
- A line that is not a JSON-RPC message is answered here (``check_line``), since the SDK
  drops it without a word: not JSON → ``-32700``, ``params`` that is not an object →
  ``-32602``, any other malformed message → ``-32600`` (a request whose id is neither an
  integer nor a string too: the SDK would take it for a notification and never answer);
  with the request's id when it can be read, else ``null``. A line the SDK's parser refuses
  (``-32700``; the line read as ``wire.sdk_line`` reads it) is answered with that parser's
  own reason and what to send instead (nesting
  deeper than ``SDK_PARSE_DEPTH``, a lone surrogate escape, a number past 4,300 digits, a raw
  control character, or not JSON at all), its id read by ``line_id.request_id``, which
  never recurses and is bounded in work: no line, however deep or long, can end the
  session. A malformed *response* from
  the client is dropped (a response is never answered). Each gets one stderr line naming
  the code and the line's size, never its content. Blank lines are skipped.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from functools import partial
from typing import IO, Final, cast

import anyio
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from mcp_gateway_middleware.sdk_stdio import Reply, run_stdio
from pydantic import ValidationError

from pdpp_gateway.context import CallNext, GatewayContext
from pdpp_gateway.fast_start.wire import EarlyAnswers, SdkStdin, StdinPump, Wire, WireOut
from pdpp_gateway.server import build_server
from pdpp_gateway.wire import line_id, sdk_line
from pdpp_gateway.wire.line import SDK_PARSE_DEPTH
from pdpp_gateway.wire.params import params_problem

_log = logging.getLogger(__name__)


def answered_early(early: EarlyAnswers) -> Callable[[Reply], bool]:
    """The ``written`` hook of the library's ``drain_on_eof``: whether a reply's request was
    answered before the hand-over (its early frame is claimed; a difference is logged)."""
    return partial(_answered_early, early)


def _answered_early(early: EarlyAnswers, reply: Reply) -> bool:
    answer = early.claim(json.dumps(reply.id))
    if answer is None:
        return False
    if _frame(reply) != answer.frame:
        _log.error(
            "the early answer to %s differs from the SDK's: rebuild it with "
            "`python -m pdpp_gateway.fast_start.build`",
            answer.method,
        )
    return True


def _frame(message: JSONRPCResponse | JSONRPCError) -> bytes:
    """A message as the SDK's ``stdio_server`` writes it."""
    return (message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode()


def check_line(line: str, wire: Wire) -> bool:
    """True for a JSON-RPC message (the SDK takes it); otherwise it is answered or dropped here."""
    if not line.strip():
        return False
    plain = sdk_line.plain_request(line)
    if plain is not None:
        problem = params_problem(plain["method"], plain.get("params"))
        if problem is None:
            return True  # the SDK's model takes it as it is: no second full validation (a 50 MB line: 0.14 s)
        wire.write(_frame(_error(plain["id"], INVALID_PARAMS, problem)))
        _log.warning(
            "stdin: answered -32602 to a %s request whose params the SDK would refuse (%d bytes)",
            plain["method"],
            len(line.encode()),
        )
        return False
    try:
        message = jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError:
        pass
    else:
        # The SDK reads a request whose id is not an integer or a string as a notification
        # (the id ignored), which would leave its sender waiting for an answer forever.
        if not (isinstance(message, JSONRPCNotification) and '"id"' in line and "id" in sdk_line.value(line)):
            return True
    size = len(line.encode())
    refusal = refuse(line)
    if refusal is None:
        _log.warning("stdin: dropped a malformed JSON-RPC response (%d bytes)", size)
        return False
    error, what = refusal
    wire.write(_frame(error))
    _log.warning("stdin: answered %d to a line that %s (%d bytes)", error.error.code, what, size)
    return False


def refuse(line: str) -> tuple[JSONRPCError, str] | None:
    """The error answering a line that is not a JSON-RPC message (``None``: a bad response,
    dropped), with a few words on what was wrong for the log."""
    try:
        message = sdk_line.value(line)
    except ValueError as error:
        advice, what = _parse_advice(str(error))
        return _error(line_id.request_id(line), PARSE_ERROR, f"Parse error: {error}. {advice}"), what
    if not isinstance(message, dict):
        return _error(
            None,
            INVALID_REQUEST,
            "Invalid Request: each line must hold one JSON-RPC message object (batches are not accepted).",
        ), "is not a JSON object"
    raw_id = message.get("id")
    request_id = raw_id if isinstance(raw_id, str) or (type(raw_id) is int) else None
    if "method" not in message and ("result" in message or "error" in message):
        return None
    method, params = message.get("method"), message.get("params")
    if (
        message.get("jsonrpc") == "2.0"
        and isinstance(method, str)
        and ("id" not in message or request_id is not None)
        and not isinstance(params, dict | None)
    ):
        return _error(request_id, INVALID_PARAMS, 'Invalid params: "params" must be a JSON object.'), (
            "has params that are not an object"
        )
    return _error(
        request_id,
        INVALID_REQUEST,
        'Invalid Request: a JSON-RPC message needs "jsonrpc": "2.0", a string "method" and, for a '
        'request, an integer or string "id".',
    ), "is not a valid JSON-RPC message"


def _parse_advice(reason: str) -> tuple[str, str]:
    """What to send instead, for the SDK's parser's ``reason`` (jiter's message: it names the
    problem and its place, never the line's content), and a few words for the log."""
    for marker, advice, what in _PARSE_ADVICE:
        if marker in reason:
            return advice, what
    return "The line is not JSON; send one JSON-RPC message per line.", "is not JSON"


_PARSE_ADVICE: Final = (
    (
        "recursion limit",
        f"The line nests arrays or objects deeper than the {SDK_PARSE_DEPTH} levels the server reads; "
        "send flatter values.",
        f"nests deeper than {SDK_PARSE_DEPTH} levels",
    ),
    (
        "hex escape",
        "The line holds an unpaired UTF-16 surrogate escape (such as \\ud800), which is not valid "
        "Unicode; send each character as UTF-8 or as a surrogate pair.",
        "holds an unpaired surrogate escape",
    ),
    (
        "number out of range",
        "A number has more digits than the server reads (4,300); send it as a string.",
        "holds a number too long to read",
    ),
    (
        "control character",
        "A string holds a raw control character; escape it (\\n, \\t, \\u0000).",
        "holds a raw control character",
    ),
)


def _error(request_id: int | str | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


async def serve_sdk(
    context: GatewayContext, server_name: str, pump: StdinPump, wire: Wire, pipeline: CallNext
) -> None:
    """Serve the session with the SDK from here on: the lines the early path did not take
    first (``pump.hand_over``), then live ones, through the process's one ``pipeline``."""
    server = build_server(lambda _ctx: context, name=server_name, pipeline=pipeline)
    stdin = anyio.wrap_file(cast(IO[str], SdkStdin(pump, partial(check_line, wire=wire))))
    stdout = anyio.wrap_file(cast(IO[str], WireOut(wire)))
    written = answered_early(pump.early)
    await run_stdio(server, stdin, stdout, on_open=pump.hand_over, written=written, logger=_log)
