"""Readiness: is the RS's ``/v1`` API (the one every tool reads) answering?

Contract: ``ReadinessProbe(rs).check()`` returns ``None`` when ready, else one sentence
saying why not. It sends ``GET /v1/schema`` WITHOUT a bearer (no caller token is ever
used for a probe):

- a 401 in the RS's error envelope (``{"error": {"type", "code", ...}}``) means the
  ``/v1`` API is up and judging bearers → ready; so does a 2xx JSON object;
- a 5xx, any other status, a body that is not the RS envelope (a proxy's HTML page), a
  connection error or no answer within ``timeout`` seconds → not ready, with the reason.

The verdict, either way, is kept for ``ttl`` seconds and concurrent checks share one
probe, so ``/readyz`` cannot be used to hammer the RS.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Final

from pdpp_gateway.render.upstream import tool_error
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.errors import RsError, RsStatusError

PROBE_PATH: Final = "/v1/schema"
TTL_SECONDS: Final = 5.0
TIMEOUT_SECONDS: Final = 3.0


class ReadinessProbe:
    def __init__(
        self,
        rs: RsClient,
        *,
        ttl: float = TTL_SECONDS,
        timeout: float = TIMEOUT_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rs = rs
        self._ttl = ttl
        self._timeout = timeout
        self._clock = clock
        self._verdict: tuple[float, str | None] | None = None
        self._lock = asyncio.Lock()

    async def check(self) -> str | None:
        async with self._lock:
            if self._verdict is not None and self._clock() - self._verdict[0] < self._ttl:
                return self._verdict[1]
            reason = await self._probe()
            self._verdict = (self._clock(), reason)
            return reason

    async def _probe(self) -> str | None:
        try:
            async with asyncio.timeout(self._timeout):
                await self._rs.get_json(PROBE_PATH, token="")
        except TimeoutError:
            return f"the resource server's /v1 API did not answer within {self._timeout:g} s"
        except RsStatusError as error:
            if error.status == 401 and _is_rs_envelope(error):
                return None
            return f"the resource server's /v1 API answered HTTP {error.status} ({error.code})"
        except RsError as error:
            return f"the resource server's /v1 API is not usable: {tool_error(error).envelope['message']}"
        return None


def _is_rs_envelope(error: RsStatusError) -> bool:
    """Whether the 401 carried the RS's own error object (``normalise_error_body`` names a
    bodiless or foreign answer ``http_<status>``)."""
    code = error.envelope.get("code")
    return (
        isinstance(code, str) and not code.startswith("http_") and isinstance(error.envelope.get("type"), str)
    )
