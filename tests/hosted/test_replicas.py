"""Several ``pdpp-gateway serve`` replicas behind one real nginx, sharing Redis.

A rolling restart as a platform does it: for each replica in turn, a new one is started,
then the old one gets SIGTERM while the proxy still sends it calls. The proxy's upstream
names every port a replica will use, so it learns who is there only by connecting (no
reload). Steady load from several grants through the proxy all along: not one call is lost.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from tests.gateway_process import GatewayProcess, serve
from tests.nginx_proxy import free_port, nginx_proxy
from tests.redis_server import redis_server
from tests.replicas import GRANTS, SECRET, Load, replica_args

REPLICAS = 3
GRACE = "6"  # seconds: a replica's shutdown grace (half of it the listener may stay open)


async def test_a_rolling_restart_under_steady_load_loses_no_call(shared_sandbox: Any, tmp_path: Path) -> None:
    port = free_port()
    public = f"https://127.0.0.1:{port}/pdpp"
    with redis_server() as redis:
        async with AsyncExitStack() as stack:
            ports = [free_port() for _ in range(2 * REPLICAS)]  # the first ones, then their successors

            async def replica(replica_port: int) -> tuple[GatewayProcess, int]:
                args = replica_args(
                    shared_sandbox.url, redis.url, public, replica_port, "--shutdown-grace-seconds", GRACE
                )
                gateway = await stack.enter_async_context(
                    serve(*args, env={"PDPP_INTROSPECTION_CLIENT_SECRET": SECRET})
                )
                await gateway.wait_listening()
                return gateway, replica_port

            running = [await replica(p) for p in ports[:REPLICAS]]
            proxy = stack.enter_context(nginx_proxy(tmp_path, ports, port=port))
            tokens = {grant: shared_sandbox.tokens[grant] for grant in GRANTS}
            load = Load(f"{public}/mcp", tokens, proxy.tls.client_context())
            load.start()
            await asyncio.sleep(1)
            before_restart = len(load.outcomes)
            exits = []
            for successor in ports[REPLICAS:]:
                old, _ = running.pop(0)
                running.append(await replica(successor))  # the next one first
                exits.append(await old.stop())  # SIGTERM while the proxy still routes to it
            during_restart = len(load.outcomes) - before_restart
            await asyncio.sleep(1)
            await load.stop()
            for gateway, _ in running:
                exits.append(await gateway.stop())
    lost = load.lost()
    assert not lost, f"{len(lost)} of {len(load.outcomes)} calls lost: {lost[:5]}"
    assert exits == [0] * (2 * REPLICAS)
    assert during_restart >= 20 * REPLICAS, during_restart  # the load went on throughout
    assert {outcome.grant for outcome in load.outcomes} == set(GRANTS)
