"""Reading the RS's word on a bearer, shared by the async probe and the start-up probe.

Contract: pure functions and plain types only (no HTTP client, no SDK), so the stdio
door can use them before anything heavy is imported.

- ``read_report(body)``: the ``bearer`` of a ``/v1/schema`` document (possibly inside a
  ``data`` envelope) as a ``BearerReport``, or ``None`` when the RS names no bearer.
- ``form_refused(status)``: whether an answer to ``/v1/schema?view=compact`` means
  "this form is not served here" (a 4xx other than 401/403/404), so the plain form is
  asked instead.
- ``is_package_route(status, code)``: the RS answers a package token on ``/v1`` with 404
  ``not_found`` (capture 40), a route that always exists for any other bearer.
- ``KindUnknown``: the RS could not be asked right now; ``reason`` is a short code, never
  the token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

ALLOWED_KIND: Final = "client"
PACKAGE_KIND: Final = "mcp_package"
SCHEMA_PATH: Final = "/v1/schema"
COMPACT_QUERY: Final = (("view", "compact"),)
START_PROBE_SECONDS: Final = 10.0  # the bound of a local door's start-up check


@dataclass(frozen=True, slots=True)
class BearerReport:
    """What the RS says about a bearer: ``bearer.token_kind`` / ``grant_id`` / ``client_id``
    of ``/v1/schema``, or ``mcp_package`` read from its 404 ``not_found`` (``by_route``)."""

    kind: str | None
    grant_id: str | None = None
    client_id: str | None = None
    by_route: bool = False


class KindUnknown(Exception):
    """The RS could not be asked what the token is; ``reason`` is a short, token-free code."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def form_refused(status: int) -> bool:
    return 400 <= status < 500 and status not in {401, 403, 404}


def is_package_route(status: int, code: object) -> bool:
    return status == 404 and code == "not_found"


def read_report(body: Mapping[str, Any]) -> BearerReport | None:
    data = body.get("data")
    document = data if isinstance(data, Mapping) else body
    bearer = document.get("bearer")
    if not isinstance(bearer, Mapping):
        return None
    return BearerReport(
        kind=_text(bearer.get("token_kind")),
        grant_id=_text(bearer.get("grant_id")),
        client_id=_text(bearer.get("client_id")),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None
