"""Reading the RS's word on a bearer, shared by the async probe and the start-up probe.

Contract: pure functions and plain types only (no HTTP client, no SDK), so the stdio
door can use them before anything heavy is imported.

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
from typing import Any, Final

from pdpp_gateway.caller import BearerFacts, TokenKind

SCHEMA_PATH: Final = "/v1/schema"
COMPACT_QUERY: Final = (("view", "compact"),)
START_PROBE_SECONDS: Final = 10.0  # the bound of a local door's start-up check


PACKAGE_BY_ROUTE: Final = BearerFacts(kind=TokenKind.PACKAGE, by_route=True)


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
