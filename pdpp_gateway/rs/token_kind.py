"""What the RS says a bearer is, and a reader that refuses to read until it is ``client``.

Contract:

- ``SchemaProbe`` is the one bearer probe (this door and the hosted one): ``GET
  /v1/schema?view=compact``, the plain ``/v1/schema`` when the RS refuses the compact
  form (a 4xx other than 401/403/404), ``bearer`` read from the document or its ``data``
  envelope. The RS never reports ``mcp_package`` there: it answers a package token on
  ``/v1`` with 404 ``not_found`` (capture 40), a route that always exists for any other
  bearer, so that answer reads as ``mcp_package``. Other RS failures propagate as the
  ``RsError`` tree.
- ``probe_token_kind(rs)`` returns the probe's ``bearer.token_kind``, or ``None`` when
  the RS does not say.
- ``KindCheckedRs`` wraps the caller's bound reader for a door whose credential comes
  from a file that may be mislabelled (stdio, the local commands). Before its first
  read it verifies the kind once and caches a success for the life of the process: a
  kind other than ``client`` (owner, mcp_package, unknown) fails every read with a typed
  ``token_kind_refused`` error, and no data route is ever called with it. An RS that
  cannot be asked (down, timing out) fails that one read with its own typed error and
  the check runs again on the next read.
- ``verify_at_start(rs, provider_url)`` is the start-up form for a local door: it
  returns ``client``, raises ``CredentialError`` for a token that must not be used (exit
  77 for a refused kind, 78 for one the RS rejects with 401/403), and raises
  ``KindUnknown`` when the RS cannot be asked right now (unreachable, timing out, an
  unexpected answer); the door decides what that means (stdio serves and verifies
  lazily; a one-shot command stops).
- Nothing here logs or returns the token.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio

from middleware import ToolError
from pdpp_gateway.credentials import EXIT_NO_CREDENTIAL, CredentialError, refused_kind_error
from pdpp_gateway.rs.bearer_report import (
    ALLOWED_KIND,
    COMPACT_QUERY,
    PACKAGE_KIND,
    SCHEMA_PATH,
    START_PROBE_SECONDS,
    BearerReport,
    KindUnknown,
    form_refused,
    is_package_route,
    read_report,
)
from pdpp_gateway.rs.client import RsBlob, RsResponse
from pdpp_gateway.rs.errors import RsError, RsStatusError

__all__ = [
    "ALLOWED_KIND",
    "PACKAGE_KIND",
    "START_PROBE_SECONDS",
    "BearerReport",
    "KindCheckedRs",
    "KindUnknown",
    "SchemaProbe",
    "probe_token_kind",
    "token_kind_refusal",
    "verify_at_start",
]

if TYPE_CHECKING:
    from pdpp_gateway.context import RsReader

_log = logging.getLogger(__name__)


class SchemaProbe:
    """The one ``/v1/schema`` bearer probe, shared by the local doors and the hosted one.

    Rules: ask ``GET /v1/schema?view=compact``; a 4xx other than 401/403/404 to that form
    means "this form is not supported here", so ask the plain ``GET /v1/schema``. The
    probe remembers which form the RS serves: once the compact form answered, a refusal
    of it is a verdict on the token (no fallback); once the compact form was refused while
    the plain one answered, only the plain form is asked. Reading the answers:

    - 200 → a ``BearerReport`` from ``bearer`` (the document may sit in a ``data``
      envelope), or ``None`` when the RS names no bearer;
    - 404 ``not_found`` → ``mcp_package`` (``by_route``): the RS serves ``/v1`` only to
      client and owner tokens and answers a package token there with "Unknown source",
      a route that always exists for any other bearer (capture 40);
    - anything else (401/403 such as ``context.audience_mismatch``, other 4xx, 5xx, no
      answer) propagates as the ``RsError`` tree; each door decides what it means.
    """

    def __init__(self) -> None:
        self._compact: bool | None = None  # None: not known yet

    async def probe(self, rs: RsReader) -> BearerReport | None:
        try:
            return await self._ask(rs)
        except RsStatusError as error:
            if is_package_route(error.status, error.code):
                return BearerReport(kind=PACKAGE_KIND, by_route=True)
            raise

    async def _ask(self, rs: RsReader) -> BearerReport | None:
        if self._compact is not False:
            try:
                response = await rs.get_json(SCHEMA_PATH, COMPACT_QUERY)
            except RsStatusError as error:
                if self._compact or not form_refused(error.status):
                    raise
            else:
                self._compact = True
                return read_report(response.body)
        report = read_report((await rs.get_json(SCHEMA_PATH)).body)
        if self._compact is None:
            self._compact = False
        return report


async def probe_token_kind(rs: RsReader) -> str | None:
    """``bearer.token_kind`` as the RS reports it for the reader's token (``SchemaProbe``)."""
    report = await SchemaProbe().probe(rs)
    return report.kind if report else None


async def verify_at_start(rs: RsReader, provider_url: str, *, seconds: float = START_PROBE_SECONDS) -> str:
    """``client``, or ``CredentialError`` (refused or rejected token), or ``KindUnknown``."""
    try:
        with anyio.fail_after(seconds):
            kind = await probe_token_kind(rs)
    except RsStatusError as error:
        if error.status in {401, 403}:
            raise CredentialError(
                "credential_rejected",
                f"The resource server at {provider_url} rejected the cached credential ({error.code}). "
                f"Run `pdpp-gateway connect {provider_url}` again.",
                EXIT_NO_CREDENTIAL,
            ) from None
        raise KindUnknown(error.code) from None
    except RsError as error:
        raise KindUnknown(error.code) from None
    except TimeoutError:
        raise KindUnknown("timeout") from None
    if kind != ALLOWED_KIND:
        raise refused_kind_error(provider_url, kind or "unknown")
    return kind


def token_kind_refusal(kind: str | None, provider_url: str) -> ToolError:
    """The typed error for a credential the RS says is not a client token."""
    if kind == PACKAGE_KIND:
        what = (
            "an mcp_package token, which the resource server does not accept on /v1 (only a hosted /mcp does)"
        )
    elif kind:
        what = f"an {kind} token"
    else:
        what = "a token whose kind the resource server does not report"
    return ToolError(
        {
            "type": "permission_error",
            "code": "token_kind_refused",
            "message": f"The cached credential is {what}; this gateway only reads with grant-scoped client "
            f"tokens, so nothing was read. Run `pdpp-gateway connect {provider_url}` to approve a scoped grant, "
            "then restart the gateway.",
            "token_kind": kind,
        }
    )


class KindCheckedRs:
    """An ``RsReader`` that verifies its token is a ``client`` token before the first read."""

    def __init__(self, inner: RsReader, provider_url: str, *, verified_kind: str | None = None) -> None:
        self._inner = inner
        self._provider_url = provider_url
        self._kind = verified_kind
        self._lock = anyio.Lock()

    async def _ensure_client(self) -> None:
        if self._kind == ALLOWED_KIND:
            return
        if self._kind is not None:
            raise token_kind_refusal(self._kind, self._provider_url)
        async with self._lock:
            if self._kind is None:
                kind = await probe_token_kind(self._inner)  # an RS failure propagates; retried next read
                self._kind = kind or "unknown"
                if self._kind == ALLOWED_KIND:
                    _log.info("credential verified with the resource server: client token")
                else:
                    _log.error("the resource server reports a %s token; every read is refused", self._kind)
        if self._kind != ALLOWED_KIND:
            raise token_kind_refusal(None if self._kind == "unknown" else self._kind, self._provider_url)

    async def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        await self._ensure_client()
        return await self._inner.get_json(path, query)

    async def get_bytes(self, path: str, query: Sequence[tuple[str, str]] = (), *, max_bytes: int) -> RsBlob:
        await self._ensure_client()
        return await self._inner.get_bytes(path, query, max_bytes=max_bytes)
