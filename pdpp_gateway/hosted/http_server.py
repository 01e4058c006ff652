"""The HTTP server under the hosted app: aiohttp's, with its error paths made safe.

Contract: ``GatewayRunner(app)`` is an ``aiohttp.web.AppRunner`` (no aiohttp access
log; the app writes its own) whose connections are served by ``GatewayRequestHandler``:

- A request aiohttp's parser cannot read (``BadHttpMessage``, ``LineTooLong``, a NUL in
  a header, a header over the limit, ...) is answered with a JSON-RPC error object
  (``-32600``, ``data.code: malformed_http``) that never echoes the request line or a
  header, and is logged as one warning naming the error's class only (debug for a bad
  method: mostly non-HTTP traffic, as aiohttp does). aiohttp's own handler logs the
  offending line (bearer included) with a traceback and writes it into the 400 body.
- An exception escaping a handler is a 500 JSON-RPC ``-32603`` body; the log line keeps
  the traceback with the request's own bearer and any ``Bearer <value>`` redacted.
- Request bodies are never decompressed by the server (``auto_decompress=False``); the
  app refuses any ``Content-Encoding`` before reading a body.
- A response marked with ``END_CONNECTION`` (the 408 of a stalled body) closes the
  connection as soon as it is written, instead of aiohttp's lingering read of the rest
  of the body (up to 10 s).
- Connections are bounded by ``connections.ConnectionGuard`` (``GatewayRunner(app,
  limits=...)``): each waits for a request head at most the idle, header or keep-alive
  limit, and at the ceiling a newcomer closes the longest-waiting connection or is
  answered 503 ``server_busy``.

``RedactBearers`` is a logging filter (installed on the serve process's log handler)
that redacts ``Bearer <value>`` in every record, traceback included, whichever logger
wrote it: the last guard for a library's log line.
"""

from __future__ import annotations

import asyncio
import logging
import re
import traceback
from http import HTTPStatus
from typing import Any, Final, cast

from aiohttp import web
from aiohttp.http_exceptions import BadHttpMethod, HttpProcessingError
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest

from pdpp_gateway.hosted.connections import ConnectionGuard, ConnectionLimits, busy_answer
from pdpp_gateway.hosted.ops import METRICS
from pdpp_gateway.hosted.refusals import rpc_error_body
from pdpp_gateway.wire.codes import INVALID_REQUEST

END_CONNECTION: Final = web.ResponseKey("end_connection", bool)
REDACTED: Final = "[redacted]"
_BEARER: Final = re.compile(r"(?i)\b(bearer)(\s+|%20|\\t)[^\s'\",;\\]+")
_log = logging.getLogger("pdpp_gateway.http")


def redact(text: str, *secrets: str) -> str:
    """``text`` with each of ``secrets`` and every ``Bearer <value>`` replaced."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    return _BEARER.sub(rf"\1\2{REDACTED}", text)


class RedactBearers(logging.Filter):
    """Rewrites each record so that no ``Bearer <value>`` survives in its message or traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        cleaned = redact(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info:
            fields = getattr(record, "fields", None)
            fields = dict(fields) if isinstance(fields, dict) else {}
            fields["exc"] = redact("".join(traceback.format_exception(*record.exc_info)).rstrip())
            record.fields = fields
            record.exc_info, record.exc_text = None, None
        return True


class GatewayRequestHandler(RequestHandler):
    """aiohttp's connection handler, with error answers and logs that carry no request text."""

    def handle_error(
        self,
        request: BaseRequest,
        status: int = 500,
        exc: BaseException | None = None,
        message: str | None = None,
    ) -> web.StreamResponse:
        if isinstance(exc, HttpProcessingError):
            _log.log(
                logging.DEBUG if isinstance(exc, BadHttpMethod) else logging.WARNING,
                "refused a malformed HTTP request (%s); its content is not logged",
                type(exc).__name__,
                extra={"fields": {"event": "malformed_http", "status": status, "error": type(exc).__name__}},
            )
            code, text = (
                "malformed_http",
                "Malformed HTTP request (request line or a header could not be read); nothing was "
                "processed. Send a well-formed HTTP/1.1 request with headers of ordinary size.",
            )
        else:
            self._log_failure("request failed", exc, request)
            code, text = (
                "internal_error",
                "Internal server error. Retry; if it persists, report it to the provider.",
            )
        if request.writer.output_size > 0:
            raise ConnectionError("the response had started; no error answer can follow")
        if status == HTTPStatus.GATEWAY_TIMEOUT:
            code, text = "timeout", "The request took too long to answer. Retry shortly."
        response = web.Response(
            status=status,
            body=rpc_error_body(status, code, text, rpc_code=INVALID_REQUEST if status < 500 else None),
            content_type="application/json",
        )
        response.force_close()
        return response

    def log_exception(self, *args: Any, **kw: Any) -> None:
        exc_info = kw.get("exc_info")
        self._log_failure(
            str(args[0]) if args else "error", exc_info if isinstance(exc_info, BaseException) else None
        )

    async def finish_response(
        self, request: BaseRequest, resp: web.StreamResponse, start_time: float | None
    ) -> tuple[web.StreamResponse, bool]:
        answered = await super().finish_response(request, resp, start_time)
        if len(resp) and resp.get(END_CONNECTION):  # len first: a miss in Mapping.get raises inside
            self.force_close()
        elif self._guard is not None and not self._force_close and not self._messages:
            self._guard.wait(self, "keepalive_timeout")
        return answered

    @property
    def _guard(self) -> ConnectionGuard | None:
        return getattr(self._manager, "guard", None)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        guard = self._guard
        if guard is None:
            return
        if guard.admit(self):
            guard.wait(self, "idle_timeout")
            return
        cast(asyncio.Transport, transport).write(busy_answer())
        self.force_close()

    def data_received(self, data: bytes) -> None:
        heads = self._request_count
        super().data_received(data)
        guard = self._guard
        if guard is None:
            return
        if self._request_count > heads:
            guard.busy(self)
        elif guard.waiting_for(self) in ("idle_timeout", "keepalive_timeout"):
            guard.wait(self, "header_timeout")  # a request's first bytes: its head must follow in time

    def connection_lost(self, exc: BaseException | None) -> None:
        guard = self._guard
        if guard is not None:
            guard.forget(self)
        super().connection_lost(exc)

    @staticmethod
    def _log_failure(what: str, exc: BaseException | None, request: BaseRequest | None = None) -> None:
        bearer = request.headers.get("Authorization", "") if request is not None else ""
        secrets = [bearer, bearer.partition(" ")[2].strip()] if bearer else []
        fields: dict[str, Any] = {"event": "request_failed", "error": type(exc).__name__ if exc else None}
        if exc is not None:
            fields["exc"] = redact("".join(traceback.format_exception(exc)).rstrip(), *secrets)
        _log.error("%s: %s", what, fields["error"], extra={"fields": fields})


class GatewayServer(web.Server):
    """aiohttp's low-level server, making ``GatewayRequestHandler`` connections."""

    guard: ConnectionGuard | None = None

    def __call__(self) -> RequestHandler:
        return GatewayRequestHandler(self, loop=self._loop, **self._kwargs)


class GatewayRunner(web.AppRunner):
    """``AppRunner`` for the hosted app (see the module contract)."""

    def __init__(
        self, app: web.Application, *, limits: ConnectionLimits | None = None, **kwargs: Any
    ) -> None:
        kwargs.setdefault("access_log", None)
        kwargs.setdefault("auto_decompress", False)
        if limits is not None:  # aiohttp's own keep-alive timer, only a backstop: the guard's close first
            kwargs.setdefault("keepalive_timeout", limits.idle + limits.header + limits.keepalive)
        super().__init__(app, **kwargs)
        self._limits = limits

    async def _make_server(self) -> web.Server:
        # aiohttp builds the server (app start-up, handler arguments); only the class
        # that makes connection handlers changes, every attribute it set is kept
        server = await super()._make_server()
        server.__class__ = GatewayServer
        if self._limits is not None:
            cast(GatewayServer, server).guard = ConnectionGuard(self._limits, self.app.get(METRICS))
        return server
