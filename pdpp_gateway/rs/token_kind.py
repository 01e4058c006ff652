"""What the RS says a bearer is, and a reader that refuses to read until it may.

Contract:

- ``SchemaProbe`` is the one bearer probe (this door and the hosted one): ``GET
  /v1/schema?view=compact``, the plain ``/v1/schema`` when the RS refuses the compact
  form (a 4xx other than 401/403/404), ``bearer`` read from the document or its ``data``
  envelope, as ``caller.BearerFacts``. The RS never reports ``mcp_package`` there: it
  answers a package token on ``/v1`` with 404 ``not_found`` (capture 40), a route that
  always exists for any other bearer, so that answer reads as ``mcp_package``. Other RS
  failures (a 401/403 included) propagate as the ``RsError`` tree; a door that asks at
  start reads a 401/403 as an inactive bearer (``bearer_report.refused``).
- Whether the bearer may read is never decided here: ``caller.authenticate`` decides,
  through ``local_verdict.judge`` for the local doors.
- ``KindCheckedRs`` wraps the caller's bound reader for a door whose credential comes
  from a file that may be mislabelled (stdio, the local commands). Before its first
  read it asks the RS once and caches an acceptance for the life of the process: a
  refused kind (owner, mcp_package, unknown) fails every read with the table's typed
  error (``refused_read``), and no data route is ever called with it. An RS that cannot
  be asked (down, timing out) or refuses the token fails that one read with its own
  typed error, and the check runs again on the next read.
- ``verify_at_start(rs, provider_url)`` is the start-up form for a local door: it
  returns ``client``, raises ``CredentialError`` for a token that must not be used (exit
  77 for a refused kind, 78 for one the RS rejects with 401/403), and raises
  ``KindUnknown`` when the RS cannot be asked right now (unreachable, timing out, an
  unexpected answer); the door decides what that means (stdio serves and verifies
  lazily; a one-shot command stops).
- Nothing here logs or returns the token.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mcp_gateway_middleware import ToolError

from pdpp_gateway.caller import BearerFacts, Caller, Rejection, TokenKind, authenticate
from pdpp_gateway.local_verdict import judge
from pdpp_gateway.refusals import REFUSALS, explain, local_connect
from pdpp_gateway.rs.bearer_report import (
    COMPACT_QUERY,
    PACKAGE_BY_ROUTE,
    SCHEMA_PATH,
    START_PROBE_SECONDS,
    KindUnknown,
    form_refused,
    is_package_route,
    read_report,
    refused,
)
from pdpp_gateway.rs.client import RsBlob, RsResponse
from pdpp_gateway.rs.errors import RsError, RsStatusError
from pdpp_gateway.rs.memo import memoised_read

__all__ = [
    "START_PROBE_SECONDS",
    "KindCheckedRs",
    "KindUnknown",
    "SchemaProbe",
    "refused_read",
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

    - 200 → the facts of ``bearer`` (the document may sit in a ``data`` envelope; no
      kind when the RS names none);
    - 404 ``not_found`` → ``mcp_package`` (``by_route``): the RS serves ``/v1`` only to
      client and owner tokens and answers a package token there with "Unknown source",
      a route that always exists for any other bearer (capture 40);
    - anything else (401/403 such as ``context.audience_mismatch``, other 4xx, 5xx, no
      answer) propagates as the ``RsError`` tree: a reader's read fails with the RS's own
      error, and a door that asks what the bearer is reads a refusal with
      ``bearer_report.refused`` (as the stdio start-up's stdlib probe does).
    """

    def __init__(self) -> None:
        self._compact: bool | None = None  # None: not known yet

    async def probe(self, rs: RsReader) -> BearerFacts:
        try:
            return await self._ask(rs)
        except RsStatusError as error:
            if is_package_route(error.status, error.code):
                return PACKAGE_BY_ROUTE
            raise

    async def _ask(self, rs: RsReader) -> BearerFacts:
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


async def verify_at_start(
    rs: RsReader, provider_url: str, *, seconds: float = START_PROBE_SECONDS
) -> TokenKind:
    """``client``, or ``CredentialError`` (refused or rejected token), or ``KindUnknown``."""
    try:
        async with asyncio.timeout(seconds):
            facts = await SchemaProbe().probe(rs)
    except RsStatusError as error:
        answer = refused(error.status, error.code)
        if answer is None:
            raise KindUnknown(error.code) from None
        return judge(answer.facts, provider_url, status=answer.refused_status)
    except RsError as error:
        raise KindUnknown(error.code) from None
    except TimeoutError:
        raise KindUnknown("timeout") from None
    return judge(facts, provider_url)


def refused_read(rejection: Rejection, provider_url: str) -> ToolError:
    """The typed tool error of a read the RS's verdict on the credential refused."""
    message, step = explain(rejection, local_connect(provider_url))
    return ToolError(
        {
            "type": REFUSALS[rejection.code].type,
            "code": rejection.code,
            "message": f"{message} Nothing was read. {step} Then restart the gateway.",
            "token_kind": rejection.kind,
        }
    )


class KindCheckedRs:
    """An ``RsReader`` that asks the RS what its token is before the first read."""

    def __init__(self, inner: RsReader, provider_url: str, *, verified_kind: str | None = None) -> None:
        self._inner = inner
        self._provider_url = provider_url
        self._refusal: Rejection | None = None
        self._accepted = verified_kind == TokenKind.CLIENT
        self._lock = asyncio.Lock()

    async def _ensure_accepted(self) -> None:
        if self._accepted:
            return
        async with self._lock:
            if not self._accepted and self._refusal is None:
                facts = await SchemaProbe().probe(
                    self._inner
                )  # an RS failure propagates; asked again next read
                outcome: Caller[object] | Rejection = authenticate(facts)
                if not isinstance(outcome, Rejection):
                    self._accepted = True
                    _log.info("credential verified with the resource server: client token")
                    return
                self._refusal = outcome
                _log.error(
                    "the resource server reports a %s token; every read is refused", facts.kind or "unnamed"
                )
        if self._refusal is not None:
            raise refused_read(self._refusal, self._provider_url)

    async def get_json(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        await self._ensure_accepted()
        return await self._inner.get_json(path, query)

    async def get_bytes(self, path: str, query: Sequence[tuple[str, str]] = (), *, max_bytes: int) -> RsBlob:
        await self._ensure_accepted()
        return await self._inner.get_bytes(path, query, max_bytes=max_bytes)

    async def memoised(self, path: str, query: Sequence[tuple[str, str]] = ()) -> RsResponse:
        await self._ensure_accepted()
        response: RsResponse = await memoised_read(self._inner, path, query)
        return response
