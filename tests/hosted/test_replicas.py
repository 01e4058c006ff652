"""Several ``pdpp-gateway serve`` replicas behind one real nginx, sharing Redis, under steady
load from several grants through the proxy.

The proxy's upstream names every port a replica will use, so it learns who is there only
by connecting (no reload), as a platform's router learns of instances coming and going.

- A rolling restart as a platform does it: for each replica in turn, a new one is started,
  then the old one gets SIGTERM while the proxy still sends it calls. Not one call is lost.
- ``kill -9`` of one replica: its calls in flight are retried on another by the proxy
  (every call is a read), so none is lost either.
- A grant's rate limit holds across the replicas: one burst in all, not one per replica.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from tests.gateway_process import GatewayProcess, serve
from tests.nginx_proxy import Nginx, free_port, nginx_proxy
from tests.redis_server import RedisServer, redis_server
from tests.replicas import GRANTS, SECRET, Load, replica_args, tool_call

REPLICAS = 3
GRACE = "6"  # seconds: a replica's shutdown grace (half of it the listener may stay open)


@dataclass
class Fleet:
    stack: AsyncExitStack
    provider_url: str
    redis_url: str
    proxy_port: int
    ports: list[int]  # every port a replica will use: the upstream
    extra: tuple[str, ...] = ()  # more serve arguments for every replica
    running: list[GatewayProcess] = field(default_factory=list)
    proxy: Nginx | None = None
    redis: RedisServer | None = None  # the fleet's own, which a test may stop and start

    @property
    def public(self) -> str:
        return f"https://127.0.0.1:{self.proxy_port}/pdpp"

    async def start(self, port: int) -> GatewayProcess:
        args = replica_args(
            self.provider_url,
            self.redis_url,
            self.public,
            port,
            "--shutdown-grace-seconds",
            GRACE,
            *self.extra,
        )
        gateway = await self.stack.enter_async_context(
            serve(*args, env={"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET})
        )
        await gateway.wait_listening()
        self.running.append(gateway)
        return gateway

    def load(self, tokens: dict[str, str]) -> Load:
        assert self.proxy is not None
        return Load(
            f"{self.public}/mcp", {grant: tokens[grant] for grant in GRANTS}, self.proxy.tls.client_context()
        )


# Availability under load is what the restart and kill tests count: the per-grant limit (its own
# test below) would refuse a fast machine's steady load with 429s, whatever the replicas do.
NO_LIMIT = ("--rate-limit", "0")


@asynccontextmanager
async def fleet(sandbox: Any, directory: Path, ports: int, *extra: str) -> AsyncIterator[Fleet]:
    """``REPLICAS`` replicas on the first of ``ports`` free ports, nginx in front of all of them."""
    with redis_server() as redis:
        async with AsyncExitStack() as stack:
            replicas = Fleet(
                stack,
                sandbox.url,
                redis.url,
                free_port(),
                [free_port() for _ in range(ports)],
                extra,
                redis=redis,
            )
            for port in replicas.ports[:REPLICAS]:
                await replicas.start(port)
            replicas.proxy = stack.enter_context(
                nginx_proxy(directory, replicas.ports, port=replicas.proxy_port)
            )
            yield replicas


async def test_a_rolling_restart_under_steady_load_loses_no_call(shared_sandbox: Any, tmp_path: Path) -> None:
    async with fleet(shared_sandbox, tmp_path, 2 * REPLICAS, *NO_LIMIT) as replicas:
        load = replicas.load(shared_sandbox.tokens)
        load.start()
        await asyncio.sleep(1)
        before_restart = len(load.outcomes)
        exits = []
        for successor in replicas.ports[REPLICAS:]:
            old = replicas.running.pop(0)
            await replicas.start(successor)  # the next one first
            exits.append(await old.stop())  # SIGTERM while the proxy still routes to it
        during_restart = len(load.outcomes) - before_restart
        await asyncio.sleep(1)
        await load.stop()
        for gateway in replicas.running:
            exits.append(await gateway.stop())
    lost = load.lost()
    assert not lost, f"{len(lost)} of {len(load.outcomes)} calls lost: {lost[:5]}"
    assert exits == [0] * (2 * REPLICAS)
    assert during_restart >= 20 * REPLICAS, during_restart  # the load went on throughout
    assert {outcome.grant for outcome in load.outcomes} == set(GRANTS)


async def test_kill_9_of_one_replica_loses_no_call(shared_sandbox: Any, tmp_path: Path) -> None:
    async with fleet(shared_sandbox, tmp_path, REPLICAS, *NO_LIMIT) as replicas:
        load = replicas.load(shared_sandbox.tokens)
        load.start(clients_per_grant=2)
        await asyncio.sleep(1)
        killed = replicas.running.pop(0)
        killed.process.kill()
        await killed.process.wait()
        before = len(load.outcomes)
        await asyncio.sleep(2)
        after_kill = len(load.outcomes) - before
        await load.stop()
    lost = load.lost()
    assert not lost, f"{len(lost)} of {len(load.outcomes)} calls lost: {lost[:5]}"
    assert after_kill >= 10, after_kill  # the other replicas went on answering


async def test_a_grants_rate_limit_holds_across_replicas(shared_sandbox: Any, tmp_path: Path) -> None:
    async with fleet(
        shared_sandbox, tmp_path, REPLICAS, "--rate-limit", "0.001", "--rate-burst", "5"
    ) as replicas:
        assert replicas.proxy is not None
        token = shared_sandbox.tokens["client_work_mail"]
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        connector = aiohttp.TCPConnector(ssl=replicas.proxy.tls.client_context(), force_close=True)
        async with aiohttp.ClientSession(
            connector=connector
        ) as http:  # a new connection a call: every replica
            statuses = []
            for n in range(4 * REPLICAS):
                async with http.post(
                    f"{replicas.public}/mcp", json=tool_call(n), headers=headers
                ) as response:
                    statuses.append(response.status)
        for gateway in replicas.running:
            assert await gateway.stop() == 0
        served = [g for g in replicas.running if any(line.get("path") == "/mcp" for line in g.lines)]
    assert statuses.count(200) == 5, statuses  # one burst in all
    assert statuses.count(429) == 4 * REPLICAS - 5
    assert len(served) == REPLICAS  # the proxy spread the calls over every replica


async def test_a_burst_from_one_grant_across_busy_replicas_gets_one_burst(
    shared_sandbox: Any, tmp_path: Path
) -> None:
    """60 calls at once from one grant, spread by the proxy over every replica, each busy with
    its share: a busy process's slow Redis answer is not an outage (its own loop lag), so the
    shared bucket decides, and the calls answered are one burst plus what refilled meanwhile,
    not one burst per replica."""
    rate, burst = 5.0, 10
    async with fleet(
        shared_sandbox, tmp_path, REPLICAS, "--rate-limit", str(rate), "--rate-burst", str(burst)
    ) as replicas:
        assert replicas.proxy is not None
        token = shared_sandbox.tokens["client_work_mail"]
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
        connector = aiohttp.TCPConnector(ssl=replicas.proxy.tls.client_context(), limit=60)
        async with aiohttp.ClientSession(connector=connector) as http:

            async def one(n: int) -> int:
                async with http.post(
                    f"{replicas.public}/mcp", json=tool_call(n), headers=headers
                ) as response:
                    await response.read()
                    return response.status

            started = asyncio.get_running_loop().time()
            statuses = await asyncio.gather(*(one(n) for n in range(60)))
            took = asyncio.get_running_loop().time() - started
        logs = []
        for gateway in replicas.running:
            assert await gateway.stop() == 0
            logs.append("".join(gateway.raw))
    answered = statuses.count(200)
    assert set(statuses) <= {200, 429}
    assert burst <= answered <= burst + rate * took + 1, (answered, took)
    assert not any("shared Redis store unavailable" in log for log in logs)
