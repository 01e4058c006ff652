"""Reading the RS's word on a bearer, shared by the async probe and the start-up probe.

Contract: pure functions and plain types only (no HTTP client, no SDK), so the stdio
door can use them before anything heavy is imported.

- ``ProbeAnswer``: what one answer of the RS to the bearer probe says of the bearer: its
  facts, and the RS's 401/403 when it refused the bearer itself (a local door may renew
  after a 401). ``refused(status, code)`` is the one reading of an error answer, for the
  three doors that ask what a bearer is (the stdio start-up's stdlib probe, the local
  doors' ``verify_at_start`` and the hosted door's probe validator, both of them asking
  through ``rs.token_kind.SchemaProbe``); ``None`` when the answer says nothing of the
  bearer (other 4xx, 5xx: each door decides what that means). ``accepted(document)``
  reads a 2xx.
- ``read_report(body)``: the ``bearer`` of a ``/v1/schema`` document (possibly inside a
  ``data`` envelope) as ``caller.BearerFacts`` (with no kind when the RS names none,
  which the ladder refuses).
- ``form_refused(status)``: whether an answer to ``/v1/schema?view=compact`` means
  "this form is not served here" (a 4xx other than 401/403/404), so the plain form is
  asked instead.
- ``is_package_route(status, code)``: the RS answers a package token on ``/v1`` with 404
  ``not_found`` (capture 40), a route that always exists for any other bearer
  (``PACKAGE_BY_ROUTE`` is what that answer says).
- ``rejected_by_rs(code)``: the facts of a bearer the RS answered 401/403 to (inactive,
  its code kept as the reason without the ``context.`` prefix).
- ``KindUnknown``: the RS could not be asked right now; ``reason`` is a short code, never
  the token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, NamedTuple

from pdpp_gateway.caller import BearerFacts, TokenKind

SCHEMA_PATH: Final = "/v1/schema"
COMPACT_QUERY: Final = (("view", "compact"),)
START_PROBE_SECONDS: Final = 10.0  # the bound of a local door's start-up check


PACKAGE_BY_ROUTE: Final = BearerFacts(kind=TokenKind.PACKAGE, by_route=True)


class ProbeAnswer(NamedTuple):
    """What the RS's answer to the bearer probe says of the bearer (a ``NamedTuple``: this
    module is on the stdio door's start path, where a dataclass costs a millisecond to define)."""

    facts: BearerFacts
    refused_status: int | None = None  # the RS's own 401/403 for this bearer


def accepted(document: Mapping[str, Any]) -> ProbeAnswer:
    """A 2xx schema document's word on the bearer."""
    return ProbeAnswer(read_report(document))


def refused(status: int, code: object) -> ProbeAnswer | None:
    """An error answer's word on the bearer: a package token (404 ``not_found``), an inactive
    one (401/403), or ``None``: the RS could not say (other 4xx, 5xx)."""
    if is_package_route(status, code):
        return ProbeAnswer(PACKAGE_BY_ROUTE)
    if status in {401, 403}:
        return ProbeAnswer(rejected_by_rs(code), refused_status=status)
    return None


class KindUnknown(Exception):
    """The RS could not be asked what the token is; ``reason`` is a short, token-free code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def form_refused(status: int) -> bool:
    return 400 <= status < 500 and status not in {401, 403, 404}


def is_package_route(status: int, code: object) -> bool:
    return status == 404 and code == "not_found"


def rejected_by_rs(code: object) -> BearerFacts:
    reason = code if isinstance(code, str) and code else "inactive"
    return BearerFacts.inactive(reason.removeprefix("context."))


def read_report(body: Mapping[str, Any]) -> BearerFacts:
    data = body.get("data")
    document = data if isinstance(data, Mapping) else body
    bearer = document.get("bearer")
    if not isinstance(bearer, Mapping):
        return BearerFacts()
    return BearerFacts(
        kind=_text(bearer.get("token_kind")),
        grant_id=_text(bearer.get("grant_id")),
        client_id=_text(bearer.get("client_id")),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
