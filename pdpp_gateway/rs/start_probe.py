"""The stdio door's start-up credential check, over the standard library only.

Contract: ``check_at_start(provider_url, token)`` asks the RS what the cached token is,
with the questions and the reading of ``token_kind.SchemaProbe`` and
``verify_at_start`` (``GET /v1/schema?view=compact``; the plain form when the compact
one is refused with a 4xx other than 401/403/404; a 404 ``not_found`` is an
``mcp_package`` token), judged by the one ladder (``local_verdict.judge``). It returns
``client``, or raises ``CredentialError`` (exit 77 for a refused kind;
``CredentialRejected``, exit 78, for a token the RS rejects with 401/403) or ``KindUnknown`` when the
RS cannot be asked now (``upstream_unavailable``, ``upstream_timeout``,
``upstream_malformed_response``, or the RS's own error code), within ``seconds`` in all.

It makes one attempt (no retries: an unanswered check only moves the check to the first
read), never follows a redirect, reads at most ``MAX_BODY_BYTES``, sends the token in
the ``Authorization`` header only and never puts it in an error or a log line.

Why not the RS client: the stdio door must know this verdict before it writes any
frame, and importing aiohttp alone takes longer than answering ``tools/list`` early.
"""

from __future__ import annotations

import http.client
import json
import logging
import time
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

from pdpp_gateway import __version__
from pdpp_gateway.local_verdict import judge
from pdpp_gateway.rs.bearer_report import (
    COMPACT_QUERY,
    SCHEMA_PATH,
    START_PROBE_SECONDS,
    KindUnknown,
    ProbeAnswer,
    accepted,
    form_refused,
    refused,
)
from pdpp_gateway.rs.error_body import normalise_error_body

MAX_BODY_BYTES: Final = 16 * 1024 * 1024
_UNAVAILABLE: Final = "upstream_unavailable"
_TIMEOUT: Final = "upstream_timeout"
_MALFORMED: Final = "upstream_malformed_response"
_log = logging.getLogger("pdpp_gateway.stdio")


def check_at_start(provider_url: str, token: str, *, seconds: float = START_PROBE_SECONDS) -> str:
    """``client``, or ``CredentialError`` (refused or rejected token), or ``KindUnknown``."""
    return check_and_describe(provider_url, token, seconds=seconds)[0]


def check_and_describe(
    provider_url: str, token: str, *, seconds: float = START_PROBE_SECONDS
) -> tuple[str, dict[str, Any]]:
    """``check_at_start``, also returning the schema document the RS answered (a local
    package reads each member's connections and streams from it)."""
    deadline = time.monotonic() + seconds
    target = urlsplit(provider_url)
    if target.scheme not in ("http", "https") or not target.hostname:
        raise KindUnknown(_UNAVAILABLE)
    base = target.path.rstrip("/")
    if target.scheme == "https":
        import ssl

        connection: http.client.HTTPConnection = http.client.HTTPSConnection(
            target.hostname, target.port, timeout=seconds, context=ssl.create_default_context()
        )
    else:
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=seconds)
    try:
        status, body = _get(connection, f"{base}{SCHEMA_PATH}?{urlencode(COMPACT_QUERY)}", token, deadline)
        if form_refused(status):
            status, body = _get(connection, f"{base}{SCHEMA_PATH}", token, deadline)
    except TimeoutError:
        raise KindUnknown(_TIMEOUT) from None
    except (OSError, http.client.HTTPException):
        raise KindUnknown(_UNAVAILABLE) from None
    finally:
        connection.close()
    answer, document = _read(status, body)
    kind = judge(answer.facts, provider_url, status=answer.refused_status)
    return str(kind), document


def warn_unverified(reason: str) -> None:
    """What the stdio door says when it serves without having been able to ask the RS."""
    _log.warning(
        "the resource server is unreachable at start-up (%s); serving, and verifying the credential "
        "before the first read",
        reason,
    )


def _get(connection: http.client.HTTPConnection, path: str, token: str, deadline: float) -> tuple[int, bytes]:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError
    connection.timeout = remaining
    if connection.sock is not None:
        connection.sock.settimeout(remaining)
    headers = {"Accept": "application/json", "User-Agent": f"pdpp-gateway/{__version__}"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    connection.request("GET", path, headers=headers)
    response = connection.getresponse()
    body = response.read(MAX_BODY_BYTES + 1)
    if len(body) > MAX_BODY_BYTES:
        raise KindUnknown(_MALFORMED)
    if token:
        body = body.replace(token.encode(), b"[redacted]")
    return response.status, body


def _read(status: int, body: bytes) -> tuple[ProbeAnswer, dict[str, Any]]:
    """What the RS says the token is and its schema document, or the exception its answer means."""
    if 200 <= status < 300:
        document = _json(body)
        if not isinstance(document, dict):
            raise KindUnknown(_MALFORMED)
        return accepted(document), document
    if 300 <= status < 400:
        raise KindUnknown(_MALFORMED)  # a redirect is never followed
    if status in {502, 503, 504}:
        raise KindUnknown(_UNAVAILABLE)
    parsed = _json(body)
    code = normalise_error_body(status, parsed if parsed is not None else body.decode(errors="replace")).get(
        "code"
    )
    answer = refused(status, code)
    if answer is None:
        raise KindUnknown(code if isinstance(code, str) else f"http_{status}")
    return answer, {}


def _json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        return None
