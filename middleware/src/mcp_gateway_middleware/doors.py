"""The HTTP door's decisions, free of any web framework: headers in, a verdict out.

Contract (``http`` adapts these to aiohttp, ``asgi`` to any ASGI app, the MCP SDK's included;
nothing here imports either):

- ``Headers`` is what a door reads of a request: ``get(name)`` (case-insensitive, the first
  value or ``None``) and ``getall(name, default)``. aiohttp's ``request.headers`` is one;
  ``asgi.AsgiHeaders`` wraps an ASGI scope's.
- ``Refusal(status, code, message, retry_after=None)``: a door's "no", the same on every
  framework. ``headers()`` are its HTTP headers (``Retry-After`` when it has a wait, a
  ``WWW-Authenticate: Bearer`` challenge on a 401); ``subject`` names what was refused (a
  421's host) for a gateway's own words and log, never sent; ``rpc_body(request_id)`` is its body as a
  JSON-RPC 2.0 error object an MCP client surfaces (the SDK's client raises it as an
  ``MCPError``): ``error.code`` from ``rpc_code(status)``, ``error.message`` the message,
  ``error.data`` ``{"status", "code", "retry_after_seconds"?}``, so the status, the typed code
  and the wait all reach a client that never sees the HTTP headers.
- ``shape_refusal(method, headers, *, max_body_bytes, ...)``: what the Streamable HTTP transport
  (MCP 2025-06-18 and later) allows at an MCP endpoint, checked from the headers alone, in
  this order, else ``None``:

  - ``POST`` (one JSON-RPC message): ``Accept`` must admit ``media_type`` with a non-zero
    quality (``accepts``: the most specific range decides, so ``application/json;q=0, */*``
    refuses) → 406 ``not_acceptable``; ``Content-Type`` must be ``content_type`` → 415
    ``unsupported_media_type``; ``Content-Encoding``, when present, ``identity`` (a
    compressed body is never inflated, so its size is the size checked) → 415
    ``unsupported_content_encoding``; a declared ``Content-Length`` over ``max_body_bytes``
    → 413 ``request_too_large`` (cap the read itself too: aiohttp's ``client_max_size``);
  - ``GET`` (the server's event stream): ``Accept`` must admit ``text/event-stream`` → 406;
  - ``DELETE`` (ending a session): allowed (the server decides what it means);
  - anything else, or one of the three that is not in ``methods`` (a stateless server keeps
    no stream and no session: ``methods={"POST"}``) → 405 ``method_not_allowed``, whose
    ``Allow`` header names ``methods``.

  Each message says what to send instead; a gateway may replace it by ``code``.
- ``admit_bearer(headers, authenticate, rejection=R, duplicate=r)``: two ``Authorization``
  headers name two credentials, which is ambiguous: ``duplicate``, and ``authenticate`` sees
  neither. Otherwise ``authenticate(header or None)`` answers the accepted caller or a value
  of type ``R``. The raw header goes to ``authenticate`` and nowhere else: never stored or
  logged here.
- ``rate_refusal(decision, message)``: a refused ``ratelimit.Decision`` as a 429 with its wait.
- The Host and Origin guard (the DNS-rebinding guard among its uses) is ``hosts``'.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, Protocol, TypeVar

__all__ = [
    "ALLOWED_METHODS",
    "MAX_BODY_BYTES",
    "RPC_CODES",
    "SPEC_METHODS",
    "TWO_CREDENTIALS",
    "Headers",
    "Refusal",
    "accepts",
    "admit_bearer",
    "rate_refusal",
    "rpc_code",
    "shape_refusal",
]

A = TypeVar("A")
R = TypeVar("R")
ALLOWED_METHODS: Final = "GET, POST, DELETE"
SPEC_METHODS: Final = frozenset({"GET", "POST", "DELETE"})
MAX_BODY_BYTES: Final = 4 * 1024 * 1024  # the doors' default cap on a request body
EVENT_STREAM: Final = "text/event-stream"


class Headers(Protocol):
    def get(self, name: str, /) -> str | None: ...

    def getall(self, name: str, default: list[str], /) -> list[str]: ...


# JSON-RPC codes by HTTP status: the server-defined range (-32000 to -32099) for what JSON-RPC
# has no code of its own: no usable credential, not found, too many requests, try again shortly.
RPC_CODES: Final[Mapping[int, int]] = {
    401: -32001,
    403: -32001,
    404: -32002,
    429: -32029,
    503: -32000,
    504: -32000,
}


def rpc_code(status: int, *, caller_fault: int = -32600) -> int:
    """The JSON-RPC error code of a refusal with HTTP ``status`` (``RPC_CODES``; any other 4xx is
    ``caller_fault``, an invalid request unless the gateway names another; the rest -32603)."""
    code = RPC_CODES.get(status)
    if code is not None:
        return code
    return caller_fault if 400 <= status < 500 else -32603


@dataclass(frozen=True, slots=True)
class Refusal:
    status: int
    code: str
    message: str
    retry_after: int | None = None  # whole seconds, when waiting helps
    allow: str = ALLOWED_METHODS  # a 405's Allow header
    subject: str | None = None  # what was refused, for a gateway's own words and log (a 421's host)

    def headers(self) -> dict[str, str]:
        sent = {"Allow": self.allow} if self.status == 405 else {}
        if self.retry_after is not None:
            sent["Retry-After"] = str(self.retry_after)
        if self.status == 401:
            sent["WWW-Authenticate"] = "Bearer"
        return sent

    def rpc_body(self, request_id: str | int | None = None) -> bytes:
        data: dict[str, Any] = {"status": self.status, "code": self.code}
        if self.retry_after is not None:
            data["retry_after_seconds"] = self.retry_after
        error = {"code": rpc_code(self.status), "message": self.message, "data": data}
        return json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}).encode()


TWO_CREDENTIALS: Final = Refusal(
    400, "duplicate_credentials", "Send one Authorization header: two name two credentials."
)


def shape_refusal(
    method: str,
    headers: Headers,
    *,
    max_body_bytes: int,
    media_type: str = "application/json",
    content_type: str = "application/json",
    methods: frozenset[str] = SPEC_METHODS,
) -> Refusal | None:
    """Why the transport spec refuses this request, from its method and headers (module contract)."""
    if method not in methods:
        allow = ", ".join(m for m in ("GET", "POST", "DELETE") if m in methods)
        return Refusal(
            405,
            "method_not_allowed",
            f"Method {method[:16]} is not allowed here: use {allow} (POST one JSON-RPC message at a time).",
            allow=allow,
        )
    if method == "POST":
        return _post_refusal(headers, max_body_bytes, media_type, content_type)
    if method == "GET":
        if accepts(headers.get("Accept") or "", EVENT_STREAM):
            return None
        return Refusal(
            406,
            "not_acceptable",
            f"Not acceptable: a GET opens the event stream; send Accept: {EVENT_STREAM}.",
        )
    return None  # DELETE: the server decides what ending a session means


def _post_refusal(
    headers: Headers, max_body_bytes: int, media_type: str, content_type: str
) -> Refusal | None:
    if not accepts(headers.get("Accept") or "", media_type):
        return Refusal(406, "not_acceptable", f"Not acceptable: send Accept: {media_type}, {EVENT_STREAM}.")
    if (headers.get("Content-Type") or "").partition(";")[0].strip().lower() != content_type:
        return Refusal(
            415, "unsupported_media_type", f"Unsupported media type: send Content-Type: {content_type}."
        )
    if (headers.get("Content-Encoding") or "identity").strip().lower() != "identity":
        return Refusal(
            415,
            "unsupported_content_encoding",
            "Unsupported Content-Encoding: send the body uncompressed (no Content-Encoding header).",
        )
    length = headers.get("Content-Length")
    if length is not None and length.strip().isdigit() and int(length) > max_body_bytes:
        return Refusal(
            413, "request_too_large", f"The body is larger than {max_body_bytes} bytes: send a smaller one."
        )
    return None


async def admit_bearer(
    headers: Headers,
    authenticate: Callable[[str | None], Awaitable[A | R]],
    *,
    duplicate: R,
) -> A | R:
    """The caller ``authenticate`` makes of the one ``Authorization`` header (module contract)."""
    if len(headers.getall("Authorization", [])) > 1:
        return duplicate
    return await authenticate(headers.get("Authorization"))


def rate_refusal(retry_after_seconds: int, message: str | None = None) -> Refusal:
    """A 429 asking to wait ``retry_after_seconds`` (``ratelimit.Decision.retry_after_seconds``)."""
    wait = retry_after_seconds
    return Refusal(429, "rate_limited", message or f"Too many requests: retry in {wait} s.", retry_after=wait)


_ANY: Final = "*/*"
_REMEMBERED_ACCEPT: Final = 200


def accepts(accept: str, media_type: str) -> bool:
    """Whether an ``Accept`` header admits ``media_type`` (RFC 9110 §12.5.1: the most
    specific matching range decides, and ``q=0`` means "not acceptable")."""
    if len(accept) <= _REMEMBERED_ACCEPT:  # a client sends the same header on every call
        return _remembered_accepts(accept, media_type)
    return _accepts(accept, media_type)


def _accepts(accept: str, media_type: str) -> bool:
    wanted = media_type.lower()
    specificity = {wanted: 2, wanted.partition("/")[0] + "/*": 1, _ANY: 0}
    best: tuple[int, float] | None = None
    for part in accept.split(","):
        media, *parameters = part.split(";")
        rank = specificity.get(media.strip().lower())
        if rank is None:
            continue
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value.strip())
                except ValueError:
                    quality = 0.0
        if best is None or rank > best[0] or (rank == best[0] and quality > best[1]):
            best = (rank, quality)
    return best is not None and best[1] > 0


_remembered_accepts = lru_cache(maxsize=128)(_accepts)  # bounded: 128 short headers
