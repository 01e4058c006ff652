"""Replicas of ``pdpp-gateway serve`` behind one nginx, sharing Redis, and steady load from
several grants through the proxy: what the replica test and the replica benchmark share.

- ``replica_args(...)``: a replica as an operator runs it: introspection, the shared Redis
  store, the proxy trusted, the public URL under the proxy's prefix, its own port.
- ``Load``: one loop per grant, each a kept-alive HTTPS connection to the proxy sending
  ``tools/call`` after ``tools/call`` (a pause of ``pause`` seconds between calls, so a
  grant stays under its rate limit), until ``stop()``. Every answer is kept as an
  ``Outcome``: a call is lost when it gets anything but a 200 with a JSON-RPC result that
  is not an error (a 502 from the proxy, a 503 ``server_restarting``, a 429, a dropped
  connection).
"""

from __future__ import annotations

import asyncio
import itertools
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

SECRET = "sandbox-introspection-secret"
GRANTS = ("client_broad", "client_narrow", "client_work_mail", "client_chat")
CALL_TIMEOUT = aiohttp.ClientTimeout(total=30)


def replica_args(provider_url: str, redis_url: str, public_url: str, port: int, *extra: str) -> list[str]:
    return [
        "--provider-url", provider_url,
        "--introspection-url", f"{provider_url}/introspect",
        "--introspection-client-id", "pdpp-gateway",
        "--redis-url", redis_url,
        "--trusted-proxy", "127.0.0.1",
        "--public-url", public_url,
        "--port", str(port),
        *extra,
    ]  # fmt: skip


def tool_call(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "invoice", "limit": 3}},
    }


@dataclass(frozen=True, slots=True)
class Outcome:
    grant: str
    ok: bool
    detail: str  # the status and error code, or the exception's type


@dataclass
class Load:
    mcp_url: str
    tokens: dict[str, str]  # grant name -> token
    tls: ssl.SSLContext
    pause: float = 0.05
    outcomes: list[Outcome] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def start(self, clients_per_grant: int = 1) -> None:
        self._tasks = [
            asyncio.create_task(self._loop(grant)) for grant in self.tokens for _ in range(clients_per_grant)
        ]

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)

    def lost(self) -> list[Outcome]:
        return [outcome for outcome in self.outcomes if not outcome.ok]

    async def _loop(self, grant: str) -> None:
        headers = {"Authorization": f"Bearer {self.tokens[grant]}", "Accept": "application/json"}
        ids = itertools.count(1)
        connector = aiohttp.TCPConnector(ssl=self.tls, limit=1)
        async with aiohttp.ClientSession(connector=connector, timeout=CALL_TIMEOUT) as http:
            while not self._stop.is_set():
                self.outcomes.append(await self._call(http, grant, headers, next(ids)))
                if self.pause:
                    await asyncio.sleep(self.pause)

    async def _call(
        self, http: aiohttp.ClientSession, grant: str, headers: dict[str, str], request_id: int
    ) -> Outcome:
        try:
            async with http.post(self.mcp_url, json=tool_call(request_id), headers=headers) as response:
                body = await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError) as error:
            return Outcome(grant, False, type(error).__name__)
        if status != 200:
            return Outcome(grant, False, f"HTTP {status}: {body[:200]!r}")
        ok = b'"result"' in body and b'"isError":true' not in body
        return Outcome(grant, ok, "ok" if ok else f"HTTP 200: {body[:200]!r}")


async def calls_per_second(load: Load, seconds: float) -> float:
    """The calls ``load`` completes in ``seconds`` (already started and warm), per second."""
    before, started = len(load.outcomes), time.perf_counter()
    await asyncio.sleep(seconds)
    return (len(load.outcomes) - before) / (time.perf_counter() - started)
