"""Request stages for any aiohttp gateway: who is calling, which kinds may not, what shape.

Each stage is an aiohttp middleware ``(request, handler) -> response``: mount it on an
app or chain it with ``middleware.compose``. Nothing here knows a gateway's credentials or
error bodies: each stage takes the functions it needs, and every refusal is the
response the gateway's ``refuse`` builds. Import this module explicitly (``import
middleware`` does not load aiohttp).

Contract:

- ``bearer_check(authenticate, refuse, key, rejection=R, duplicate=r)``: a request that
  sends the ``Authorization`` header more than once names two credentials, which is
  ambiguous: it is answered with ``refuse(request, duplicate)`` and ``authenticate`` never
  sees either. Otherwise it hands the ``Authorization``
  header (``None`` when absent) to ``authenticate``, an async function answering either
  the accepted caller (stored under ``key`` for the stages and handler below) or a
  value of type ``R`` (answered with ``refuse(request, rejection)``; the handler never
  runs). The raw header goes to ``authenticate`` and nowhere else: the stage neither
  stores nor logs it, so an accepted value that holds no credential keeps it out of
  everything below.
- ``refuse_token_kinds(kind_of, refused, refuse, key)``: the HTTP twin of
  ``RefuseTokenKinds``. ``kind_of(accepted)`` names the kind of the caller under ``key``;
  a refused kind, or an unknown one (``None``, or no caller under ``key``) while
  ``refuse_unknown`` holds, is answered with ``refuse(request, kind)``.
- ``shape_checks(refuse, ...)``: what the headers alone say about a request, in this
  order, each refusal answered with ``refuse(status, code, message)``:

  1. ``Accept`` must admit ``media_type`` with a non-zero quality (``accepts``: the most
     specific matching range decides, so ``application/json;q=0, */*`` refuses; an
     absent ``Accept`` admits nothing) → 406 ``not_acceptable``;
  2. ``Content-Type`` must be ``content_type`` → 415 ``unsupported_media_type``;
  3. ``Content-Encoding``, when present, must be ``identity`` (a compressed body is
     never inflated, so its size is the size that was checked) → 415
     ``unsupported_content_encoding``;
  4. a declared ``Content-Length`` over ``max_body_bytes`` → 413 ``request_too_large``
     (the body is not read; cap the read itself with the app's ``client_max_size``).

  Each ``message`` says what to send instead; a gateway may replace it by ``code``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from functools import lru_cache
from typing import Final, TypeVar, cast

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware

__all__ = ["Handler", "Stage", "accepts", "bearer_check", "refuse_token_kinds", "shape_checks"]

A = TypeVar("A")
R = TypeVar("R")
Stage = Middleware  # what web.Application(middlewares=...) takes; middleware.compose chains it too


def bearer_check(
    authenticate: Callable[[str | None], Awaitable[A | R]],
    refuse: Callable[[web.Request, R], web.StreamResponse],
    key: web.RequestKey[A],
    *,
    rejection: type[R],
    duplicate: R,
) -> Stage:
    """A stage admitting only callers ``authenticate`` accepts (see the module contract)."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        headers = request.headers
        if len(headers.getall("Authorization", ())) > 1:
            return refuse(request, duplicate)
        verdict = await authenticate(headers.get("Authorization"))
        if isinstance(verdict, rejection):
            return refuse(request, verdict)
        request[key] = cast(A, verdict)  # not a rejection, so the accepted caller
        return await handler(request)

    return check


def refuse_token_kinds(
    kind_of: Callable[[A], str | None],
    refused: Iterable[str],
    refuse: Callable[[web.Request, str | None], web.StreamResponse],
    key: web.RequestKey[A],
    *,
    refuse_unknown: bool = True,
) -> Stage:
    """A stage stopping callers of a refused kind before the handler runs."""
    refused_kinds = frozenset(refused)

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        caller = request.get(key)
        kind = None if caller is None else kind_of(caller)
        if kind in refused_kinds or (kind is None and refuse_unknown):
            return refuse(request, kind)
        return await handler(request)

    return check


def shape_checks(
    refuse: Callable[[int, str, str], web.StreamResponse],
    *,
    max_body_bytes: int,
    media_type: str = "application/json",
    content_type: str = "application/json",
) -> Stage:
    """A stage refusing what the headers show to be unreadable (see the module contract)."""

    @web.middleware
    async def check(request: web.Request, handler: Handler) -> web.StreamResponse:
        if not accepts(request.headers.get("Accept", ""), media_type):
            return refuse(406, "not_acceptable", f"Not acceptable: send Accept: {media_type}.")
        if request.content_type != content_type:
            return refuse(
                415, "unsupported_media_type", f"Unsupported media type: send Content-Type: {content_type}."
            )
        if request.headers.get("Content-Encoding", "identity").strip().lower() != "identity":
            return refuse(
                415,
                "unsupported_content_encoding",
                "Unsupported Content-Encoding: send the body uncompressed (no Content-Encoding header).",
            )
        if request.content_length is not None and request.content_length > max_body_bytes:
            return refuse(
                413,
                "request_too_large",
                f"The body is larger than {max_body_bytes} bytes: send a smaller one.",
            )
        return await handler(request)

    return check


_ANY: Final = "*/*"


def accepts(accept: str, media_type: str) -> bool:
    """Whether an ``Accept`` header admits ``media_type`` (RFC 9110 §12.5.1: the most
    specific matching range decides, and ``q=0`` means "not acceptable")."""
    if len(accept) <= _REMEMBERED_ACCEPT:  # a client sends the same header on every call
        return _remembered_accepts(accept, media_type)
    return _accepts(accept, media_type)


_REMEMBERED_ACCEPT: Final = 200


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
