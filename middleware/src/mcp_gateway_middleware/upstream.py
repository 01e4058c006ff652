"""An HTTP upstream for tool handlers: JSON answers, or typed tool errors.

Contract (extra ``http``: aiohttp and aiohttp-retry):

- ``HttpUpstream(session, base_url, name=..., headers=..., timeout=..., retries=2)``: one
  upstream API reached through the caller's ``aiohttp.ClientSession`` (the gateway owns it and
  closes it). ``await upstream.call(method, path, params=..., json=...)`` answers the decoded
  JSON object of a 2xx answer, or raises a ``ToolError`` (``upstream_error``):

  - a 4xx: the upstream's own error envelope when its body is ``{"error": {...}}`` (kept whole:
    ``code``, ``message`` and any member the upstream adds), else ``upstream_refused`` with the
    start of its body; both with ``http_status`` and ``upstream`` beside the envelope;
  - a 5xx: ``upstream_unavailable`` naming the upstream and the status only: the body, which may
    hold internals, is neither shown nor logged;
  - no answer within ``timeout`` seconds: ``upstream_timeout``; the connection refused, reset or
    unresolvable: ``upstream_unreachable``; a 2xx that is not a JSON object: ``upstream_invalid``.

  No error names the URL, a header or a token (a base URL may carry credentials).
- Retries (aiohttp-retry): only a safe method (``GET``, ``HEAD``, ``OPTIONS``) is retried, at
  most ``retries`` times with exponential backoff, on 502/503/504 or a refused or dropped
  connection; never after a timeout (each attempt would get the whole budget again) and never
  a ``POST``, which might have taken effect.
- ``headers`` (an upstream's own bearer token, say) go on every request and nowhere else.
- ``session_lifespan(make)``: an MCP server's ``lifespan`` that opens one ``ClientSession``
  while the server runs and hands ``make(session)`` (the upstreams) to every handler as
  ``ctx.lifespan_context``; the session closes when the server stops.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from json import loads
from typing import Any, Final, TypeVar

import aiohttp
from aiohttp_retry import ExponentialRetry, RetryClient

from mcp_gateway_middleware.errors import ToolError, echo, gateway_error
from mcp_gateway_middleware.pipeline import JSONObject

__all__ = ["HttpUpstream", "session_lifespan", "upstream_error"]

T = TypeVar("T")
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
_RETRIED_STATUSES: Final = {502, 503, 504}
_RETRIED_ERRORS: Final[set[type[Exception]]] = {aiohttp.ClientConnectorError, aiohttp.ServerDisconnectedError}


def upstream_error(name: str, status: int, body: bytes) -> ToolError:
    """The ``ToolError`` an upstream's non-2xx answer becomes (module contract)."""
    if status >= 500:
        return gateway_error(
            "upstream_unavailable",
            f"{name} failed ({status}); retry later.",
            type_="api_error",
        ).with_extra(http_status=status, upstream=name)
    try:
        decoded = loads(body)
    except ValueError:
        decoded = None
    envelope = decoded.get("error") if isinstance(decoded, dict) else None
    if isinstance(envelope, dict) and isinstance(envelope.get("message"), str):
        return ToolError(envelope, http_status=status, upstream=name)
    shown = echo(body.decode("utf-8", "replace").strip()) if body.strip() else "no body"
    return gateway_error("upstream_refused", f"{name} refused the call ({status}): {shown}.").with_extra(
        http_status=status, upstream=name
    )


def session_lifespan(
    make: Callable[[aiohttp.ClientSession], T],
) -> Callable[[Any], AbstractAsyncContextManager[T]]:
    """A server lifespan holding one ``ClientSession`` and what ``make`` builds on it (module contract)."""

    @asynccontextmanager
    async def lifespan(server: Any) -> AsyncIterator[T]:
        async with aiohttp.ClientSession() as session:
            yield make(session)

    return lifespan


class HttpUpstream:
    """One upstream HTTP API (module contract)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        base_url: str,
        *,
        name: str,
        headers: Mapping[str, str] | None = None,
        timeout: float = 10.0,
        retries: int = 2,
    ) -> None:
        self.name = name
        self._base = base_url.rstrip("/")
        self._headers = dict(headers or {})
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._seconds = timeout
        options = ExponentialRetry(
            attempts=retries + 1,
            max_timeout=1.0,
            statuses=_RETRIED_STATUSES,
            exceptions=_RETRIED_ERRORS,
            methods=set(SAFE_METHODS),
            retry_all_server_errors=False,
        )
        self._client = RetryClient(client_session=session, retry_options=options, raise_for_status=False)

    async def call(
        self, method: str, path: str, *, params: Mapping[str, str] | None = None, json: Any = None
    ) -> JSONObject:
        """The JSON object ``method path`` answers, or a ``ToolError`` (module contract)."""
        try:
            async with self._client.request(
                method,
                f"{self._base}/{path.lstrip('/')}",
                params=params,
                json=json,
                headers=self._headers,
                timeout=self._timeout,
            ) as response:
                body = await response.read()
                status = response.status
        except TimeoutError:
            raise self._error(
                "upstream_timeout", f"{self.name} did not answer within {self._seconds:g} s; retry later."
            ) from None
        except aiohttp.ClientError as error:
            raise self._error(
                "upstream_unreachable",
                f"{self.name} could not be reached ({type(error).__name__}); retry later.",
            ) from None
        if status >= 300:
            raise upstream_error(self.name, status, body)
        try:
            decoded = loads(body)
        except ValueError:
            decoded = None
        if not isinstance(decoded, dict):
            raise self._error("upstream_invalid", f"{self.name} answered something other than a JSON object.")
        return decoded

    def _error(self, code: str, message: str) -> ToolError:
        return gateway_error(code, message, type_="api_error").with_extra(upstream=self.name)
