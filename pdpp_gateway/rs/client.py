"""The RS client: the one way tool and resource reads reach the resource server's ``/v1`` API
(the stdio door's start-up probe, ``rs.start_probe``, asks its one question over the standard
library before aiohttp has loaded; ``connect`` reads the RS's discovery documents itself).

Contract:

- One ``aiohttp.ClientSession`` per ``RsClient`` (pooled keep-alive connections),
  wrapped by ``aiohttp_retry.RetryClient``. The session keeps no cookies: one client
  serves every caller of a hosted gateway, so a cookie the RS (or a proxy before it) set
  on one caller's answer must never ride along on another caller's read. Only GETs exist, so every request is
  idempotent; retries happen on connection-level failures and on 502/503/504 only,
  capped and jittered, never on any 4xx or other 5xx, and always with the same
  credential (it is fixed per call; ``bind`` fixes it per caller). aiohttp also re-sends
  an idempotent request once when a connection drops before any answer, so a dead
  upstream sees at most ``2 * attempts`` sends.
- Timeouts are phase-split (connect, read, total); a timeout is never retried past
  the total budget and becomes ``RsTimeoutError`` naming the bound that fired.
- Failures raise the plain ``rs.errors`` tree (facts, no model text, no address: the
  RS's URL may be an internal one that a hosted gateway's callers must not see); only the
  ``request_too_large`` refusal below, a caller mistake caught before sending, is a
  ``ToolError`` already.
- Retries draw on a ``RetryBudget`` (at most about one retry per five requests in an
  outage), per client, that is per upstream; a circuit breaker per route class
  (``Breakers``: searches apart from record reads) fails calls of that class fast while
  most of them fail (``rs.resilience``).
- A base URL path prefix (``https://host/rs``) is kept: paths are appended to it.
  ``rs_path`` percent-encodes each segment (``/`` inside a segment becomes ``%2F``).
- JSON bodies are read with a size cap and must be objects nested at most
  ``MAX_BODY_DEPTH`` levels (deeper, no writer could pass them on); blobs are read up to
  ``max_bytes`` and never buffered beyond it.
- Logs name the method, path, status and elapsed time: never the token, never query
  values (they may carry a person's search terms). An optional ``observer`` is told
  (path, status or None, seconds) of every read, for metrics.
- An empty token sends no ``Authorization`` header (public discovery documents only).
- Redirects are never followed (a 3xx is an unusable answer): the token goes to the
  RS's ``/v1`` and nowhere else. An error body that echoes the caller's token has it
  replaced by ``[redacted]`` before it becomes an error, a result or a log line.
- A request whose path and query would encode to more than ``MAX_REQUEST_TARGET_BYTES``
  is never sent: it raises a typed ``request_too_large`` error for the caller (servers
  cap the request line near 8 KiB and answer an untyped 400 that echoes the URL).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import TracebackType
from typing import Any, Final
from urllib.parse import quote, urlencode

import aiohttp
import orjson
from aiohttp import hdrs
from aiohttp_retry import RetryClient
from mcp_gateway_middleware import gateway_error

from pdpp_gateway import __version__
from pdpp_gateway.observe import tracing
from pdpp_gateway.rs.errors import (
    RsProtocolError,
    RsStatusError,
    RsTimeoutError,
    RsUnavailableError,
    TimeoutPhase,
)
from pdpp_gateway.rs.memo import Memo, caller_key, grant_changed
from pdpp_gateway.rs.policy import RetryPolicy, RsTimeouts
from pdpp_gateway.rs.resilience import Breakers, CircuitOpen, RetryBudget
from pdpp_gateway.rs.routes import route_class

_log = logging.getLogger(__name__)

Query = Sequence[tuple[str, str]]
# Told of every read: (its route class, ``rs.routes``; HTTP status or None when no answer
# came; seconds). Never the path: it holds stream names and record ids.
Observer = Callable[[str, int | None, float], None]
DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024
MAX_REQUEST_TARGET_BYTES: Final = 7_680  # under the common 8,190-byte request-line limit
# No RS answer nests this deep; orjson writes at most 254 levels, and an answer wraps the body
# in a few more.
MAX_BODY_DEPTH: Final = 200
_ORJSON_MOST_LEVELS: Final = 254
_CHUNK = 64 * 1024
# A character's longest form in a URL: four UTF-8 bytes, each escaped as %XX.
_MOST_ENCODED_PER_CHAR: Final = 12


@dataclass(frozen=True, slots=True)
class RsResponse:
    """A successful JSON answer."""

    status: int
    body: dict[str, Any]
    request_id: str | None
    url_path: str


@dataclass(frozen=True, slots=True)
class RsBlob:
    """Raw bytes of a blob, possibly cut at the caller's cap."""

    content_type: str
    data: bytes
    total_bytes: int | None
    truncated: bool


def rs_path(*segments: str) -> str:
    """``/seg1/seg2/...`` with each segment percent-encoded on its own."""
    return "/" + "/".join(map(_quoted, segments))


@lru_cache(maxsize=4096)  # bounded; the same few stream names and path words recur on every call
def _quoted(segment: str) -> str:
    return quote(segment, safe="")


class RsClient:
    """A pooled, retrying HTTP client for one RS base URL."""

    def __init__(
        self,
        base_url: str,
        *,
        timeouts: RsTimeouts | None = None,
        retry: RetryPolicy | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        user_agent: str = f"pdpp-gateway/{__version__}",
        observer: Observer | None = None,
        breakers: Breakers | None = None,
        budget: RetryBudget | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._timeouts = timeouts or RsTimeouts()
        self._retry = retry or RetryPolicy()
        self.breakers = breakers or Breakers()
        self.memo = Memo()  # what each caller's grant holds, kept at most a minute (rs.memo)
        self.budget = budget or RetryBudget()
        self._max_body_bytes = max_body_bytes
        self._user_agent = user_agent
        self._client: RetryClient | None = None
        self._observer = observer

    async def start(self) -> None:
        if self._client is None:
            session = aiohttp.ClientSession(
                timeout=self._timeouts.client_timeout(),
                headers={"User-Agent": self._user_agent},
                raise_for_status=False,
                cookie_jar=aiohttp.DummyCookieJar(),
            )
            self._client = RetryClient(
                client_session=session, retry_options=self._retry.options(), logger=_log
            )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    async def __aenter__(self) -> RsClient:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def bind(self, token: str) -> BoundRsClient:
        """A reader fixed to ``token``: tool code cannot pick or swap credentials."""
        return BoundRsClient(self, token)

    async def get_json(self, path: str, query: Query = (), *, token: str) -> RsResponse:
        self._check_size(path, query)
        started = time.perf_counter()
        answered: int | None = None
        request_id: str | None = None
        sent = True
        scope = route_class(path)
        headers = _headers(token, "application/json")
        with tracing.rs_span(scope, headers) as span:
            try:
                async with self._request(path, query, token, scope, headers) as response:
                    status = answered = response.status
                    request_id = response.headers.get("Request-Id")
                    raw = await self._read_capped(response, self._max_body_bytes)
            except RsUnavailableError as error:
                sent = error.retry_after is None  # held back by the breaker: nothing was sent
                raise
            finally:
                tracing.rs_answered(span, answered, request_id)
                if sent:
                    self._observe(path, scope, answered, started)
        if 300 <= status < 400:
            raise RsProtocolError(_REDIRECTED)
        if status >= 400 or status < 200:
            refused = RsStatusError.from_body(status, _parse_lenient(raw, token), request_id)
            if token and grant_changed(status, refused.code):
                self.memo.forget(caller_key(token))  # a lapsed, revoked or changed grant: learn it again
            raise refused
        if raw is None:
            raise RsProtocolError(f"the body is larger than {self._max_body_bytes} bytes")
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise RsProtocolError("the body is not JSON") from None
        if not isinstance(body, dict):
            raise RsProtocolError(f"the body is a JSON {type(body).__name__}, not an object")
        if _nests_too_deep(raw, body):
            raise RsProtocolError(f"the body nests more than {MAX_BODY_DEPTH} levels deep")
        return RsResponse(status=status, body=body, request_id=request_id, url_path=path)

    async def get_bytes(self, path: str, query: Query = (), *, token: str, max_bytes: int) -> RsBlob:
        self._check_size(path, query)
        started = time.perf_counter()
        status: int | None = None
        sent = True
        scope = route_class(path)
        headers = _headers(token, "*/*")
        with tracing.rs_span(scope, headers) as span:
            try:
                blob = await self._read_blob(path, query, token, max_bytes, scope, headers)
                status = 200
                return blob
            except RsStatusError as error:
                status = error.status
                raise
            except RsUnavailableError as error:
                sent = error.retry_after is None  # held back by the breaker: nothing was sent
                raise
            finally:
                tracing.rs_answered(span, status, None)
                if sent:
                    self._observe(path, scope, status, started)

    def _observe(self, path: str, scope: str, status: int | None, started: float) -> None:
        elapsed = time.perf_counter() - started
        _log.debug("GET %s -> %s in %.1f ms", path, status, elapsed * 1000)
        if self._observer is not None:
            self._observer(scope, status, elapsed)

    async def _read_blob(
        self, path: str, query: Query, token: str, max_bytes: int, scope: str, headers: dict[str, str]
    ) -> RsBlob:
        async with self._request(path, query, token, scope, headers) as response:
            request_id = response.headers.get("Request-Id")
            if 300 <= response.status < 400:
                raise RsProtocolError(_REDIRECTED)
            if response.status >= 400:
                raw = await self._read_capped(response, self._max_body_bytes)
                raise RsStatusError.from_body(response.status, _parse_lenient(raw, token), request_id)
            total = response.content_length
            data = bytearray()
            truncated = False
            async for chunk in response.content.iter_chunked(_CHUNK):
                room = max_bytes - len(data)
                if len(chunk) > room:
                    data.extend(chunk[:room])
                    truncated = True
                    break
                data.extend(chunk)
            content_type = response.headers.get("Content-Type", "application/octet-stream")
        return RsBlob(content_type=content_type, data=bytes(data), total_bytes=total, truncated=truncated)

    def _check_size(self, path: str, query: Query) -> None:
        """Refuse, before sending, a request URL too long for the RS to accept."""
        plain = len(path) + len(self.base_url) + 1
        for key, value in query:
            plain += len(key) + len(value) + 2
        if plain * _MOST_ENCODED_PER_CHAR <= MAX_REQUEST_TARGET_BYTES:
            return  # even if every character needed its longest escape, it would fit
        target = len(urlencode(list(query))) + len(path) + len(self.base_url) + 1
        if target > MAX_REQUEST_TARGET_BYTES:
            raise gateway_error(
                "request_too_large",
                f"These arguments encode to a {target:,}-byte request URL; the resource server accepts about "
                f"{MAX_REQUEST_TARGET_BYTES:,}. Ask for fewer fields, filter on fewer fields, or shorten long "
                "values, then call again.",
            )

    def _request(self, path: str, query: Query, token: str, scope: str, headers: dict[str, str]) -> _Exchange:
        if self._client is None:
            raise RuntimeError("RsClient.start() was not called")
        return _Exchange(self, scope, self._client, self.base_url + path, list(query), headers, token)

    @staticmethod
    async def _read_capped(response: aiohttp.ClientResponse, cap: int) -> bytes | None:
        """The whole body, or ``None`` when it is larger than ``cap``."""
        declared = response.content_length
        if declared is not None and hdrs.CONTENT_ENCODING not in response.headers:
            # An uncompressed body ends at its declared length, so it cannot grow past it
            # (a compressed one can inflate far beyond: it is counted while it is read).
            return None if declared > cap else await response.read()
        data = bytearray()
        async for chunk in response.content.iter_chunked(_CHUNK):
            data.extend(chunk)
            if len(data) > cap:
                return None
        return bytes(data)


class _Exchange:
    """One GET with budgeted retries behind the circuit breaker, mapping transport
    failures onto the typed error tree and telling the breaker how the RS fared."""

    def __init__(
        self,
        owner: RsClient,
        scope: str,
        client: RetryClient,
        url: str,
        query: list[tuple[str, str]],
        headers: dict[str, str],
        token: str,
    ) -> None:
        self._owner = owner
        self._scope = scope
        self._breaker = owner.breakers.for_scope(scope)
        self._client = client
        self._token = token
        self._url = url
        self._query = query
        self._headers = headers
        self._timeouts = owner._timeouts
        self._response: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> aiohttp.ClientResponse:
        breaker = self._breaker
        try:
            breaker.admit()
        except CircuitOpen as held:
            self._owner.breakers.count_held(self._scope)
            raise RsUnavailableError(
                f"{held.failed} of its last {held.calls} answers to such calls failed, so the gateway is "
                "holding them back",
                retry_after=held.retry_after,
            ) from None
        try:
            response = await self._send()
        except (RsUnavailableError, RsTimeoutError):
            breaker.failed()
            raise
        except BaseException:
            breaker.released()
            raise
        if response.status in {502, 503, 504}:
            breaker.failed()
            body = _parse_lenient(await response.read(), self._token)
            code = body.get("error", {}).get("code") if isinstance(body, dict) else None
            response.release()
            raise RsUnavailableError(
                "it kept failing after retries",
                upstream_code=code if isinstance(code, str) else None,
                status=response.status,
            )
        self._response = response
        return response

    async def _send(self) -> aiohttp.ClientResponse:
        policy, budget = self._owner._retry, self._owner.budget
        granted = budget.reserve(policy.attempts - 1)
        options = policy.options(granted)
        try:
            return await self._client.get(
                self._url,
                retry_options=options,
                params=self._query,
                headers=self._headers,
                allow_redirects=False,
            )
        except TimeoutError as error:
            raise _timeout_error(error, self._timeouts) from None
        except aiohttp.ClientError as error:
            raise RsUnavailableError(_describe(error)) from None
        finally:
            budget.refund(granted - options.retries)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._response is not None:
            self._response.release()
        breaker = self._breaker
        if isinstance(exc, TimeoutError):
            breaker.failed()
            raise _timeout_error(exc, self._timeouts) from None
        if isinstance(exc, aiohttp.ClientError):
            breaker.failed()
            raise RsUnavailableError(f"the answer was cut off ({_describe(exc)})") from None
        if exc is None or isinstance(exc, Exception):
            breaker.succeeded()  # the RS answered; what it said is not a health problem
        else:
            breaker.released()


def _headers(token: str, accept: str) -> dict[str, str]:
    """A read's own headers (a fresh dict: tracing adds ``traceparent`` to it)."""
    return {"Accept": accept, "Authorization": f"Bearer {token}"} if token else {"Accept": accept}


def _timeout_error(error: TimeoutError, timeouts: RsTimeouts) -> RsTimeoutError:
    """The bound that actually fired, so the message states the real budget."""
    if isinstance(error, aiohttp.ConnectionTimeoutError):
        return RsTimeoutError(TimeoutPhase.CONNECT, timeouts.connect)
    if isinstance(error, aiohttp.SocketTimeoutError):
        return RsTimeoutError(TimeoutPhase.READ, timeouts.read)
    return RsTimeoutError(TimeoutPhase.TOTAL, timeouts.total)


_REDIRECTED: Final = (
    "it answered with a redirect, which the gateway never follows (the token goes to the RS's /v1 only)"
)


def why_unreachable(error: aiohttp.ClientConnectorError) -> str:
    """Why a connection failed, in a few words and without the address it was made to."""
    if isinstance(error, aiohttp.ClientConnectorDNSError):
        return "its host name does not resolve"
    number = error.os_error.errno
    return os.strerror(number).lower() if number and number > 0 else type(error.os_error).__name__


def _describe(error: aiohttp.ClientError) -> str:
    """A short reason that names no address (the RS's may be internal, and a hosted
    gateway's callers are the public), no URL query and no header."""
    if isinstance(error, aiohttp.ClientConnectorError):
        return f"cannot connect to it ({why_unreachable(error)})"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the connection was closed before an answer"
    return type(error).__name__


def _nests_too_deep(raw: bytes, body: dict[str, Any]) -> bool:
    """Whether ``body`` nests more than ``MAX_BODY_DEPTH`` levels. A body with fewer brackets
    cannot; else orjson counts (at C speed): the body wrapped in the levels it may not use."""
    if raw.count(b"{") + raw.count(b"[") <= MAX_BODY_DEPTH:
        return False
    wrapped: object = body
    for _ in range(_ORJSON_MOST_LEVELS - MAX_BODY_DEPTH):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped)
    except TypeError:  # a body orjson read can fail to write only by its depth
        return True
    return False


def _parse_lenient(raw: bytes | None, token: str) -> object:
    """An error body as JSON (or a text excerpt), with the caller's token redacted: an RS
    that echoes the request's ``Authorization`` header must not put it in a result or a log."""
    if raw is None:
        return None
    if token:
        raw = raw.replace(token.encode(), b"[redacted]")
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw[:_CHUNK].decode("utf-8", errors="replace")


@dataclass(frozen=True, slots=True)
class BoundRsClient:
    """``RsClient`` reads with one caller's token fixed in advance."""

    client: RsClient
    _token: str = field(repr=False)

    async def get_json(self, path: str, query: Query = ()) -> RsResponse:
        return await self.client.get_json(path, query, token=self._token)

    async def get_bytes(self, path: str, query: Query = (), *, max_bytes: int) -> RsBlob:
        return await self.client.get_bytes(path, query, token=self._token, max_bytes=max_bytes)

    async def memoised(self, path: str, query: Query = ()) -> RsResponse:
        """``get_json``, answered from this caller's memo when asked within a minute (``rs.memo``)."""
        key = (caller_key(self._token), path, tuple(query))
        found: RsResponse | None = self.client.memo.get(key)
        if found is not None:
            return found
        response = await self.get_json(path, query)
        self.client.memo.put(key, response)
        return response
