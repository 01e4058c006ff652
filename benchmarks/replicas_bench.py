"""Replicas behind one nginx: calls per second through the proxy for 1, 2 and 3 replicas.

Run: ``.venv/bin/python benchmarks/replicas_bench.py [--seconds 10] [--clients 16] [--rounds 2]``
(needs ``nginx``, ``redis-server`` and ``openssl``, which ``scripts/test`` installs).

Processes on this machine: the sandbox RS, ``redis-server``, three gateway replicas
(``pdpp-gateway serve``, one worker each, introspection on, limits and verdicts shared
through Redis, the rate limit high enough that nothing is refused, the proxy trusted and
the public URL under its prefix), nginx as ``tests/nginx_proxy.py`` runs it (TLS at the
proxy, the gateway under ``/pdpp``, kept-alive upstream connections) and this load client:
``--clients`` closed-loop clients spread over four grants, each on its own kept-alive
HTTPS connection sending ``search`` calls back to back (``tests/replicas.py``). For k =
1, 2, 3, nginx's upstream is the first k replicas; after a warm-up, the calls completed
in ``--seconds``. Each round measures k = 1, 2, 3 once; the baseline is one replica in
the same round, so the ratio is what a replica adds on this machine at this moment (on a
machine with fewer cores than processes, the ratio is the point, not the figure).
Prints, per round and k: calls/s, calls lost (anything but a tool result), x 1 replica,
and the CPU time spent per call by the replicas and by every process of the run (replicas,
nginx, the RS, Redis, this client): when the second stays flat as k grows, the machine's
cores, not the replicas, are what the calls wait for.

Then the limits and a restart, under load (``restart_and_burst``, the fleet
``tests/hosted/test_replicas.py`` runs: three replicas, the per-grant limit on at 5/s and a
burst of 10, limits shared through Redis): ``--clients`` load clients over the four grants
send calls back to back (most answered 429 once their buckets are empty: each still passes
the bearer check and a Redis bucket, which is the load a limit must hold under); meanwhile a
fifth grant sends 60 calls at once (answered: at most the burst of 10 plus what refilled while
they ran, about 5/s: more would be each replica allowing its own burst), then the replicas are
restarted one at a time as the README says (the successor started, then SIGTERM to the old
one). Prints the burst's answered calls against that bound, and the load's calls lost during
the restart (anything but a tool result or a 429). Last, Redis is killed: after a few seconds
a sixth grant's burst gets what the replicas allow alone (each its share of the limit, so still
about one burst in all), then Redis comes back empty on its port, and as soon as every
replica's own ``/readyz`` answers 200 with nothing degraded, a seventh grant's burst must again
get one burst in all (shared limits back when ``/readyz`` says so).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from types import SimpleNamespace

import aiohttp
from gateway_bench import free_port, process, sandbox_process, serve_args, wait_up

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from pdpp_gateway.sandbox.config import TOKENS
from tests.hosted.test_replicas import Fleet, fleet
from tests.nginx_proxy import nginx_proxy
from tests.redis_server import RedisServer
from tests.replicas import GRANTS, Load, calls_per_second, tool_call

REPLICAS = 3
WARM_UP_SECONDS = 2.0


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of ``pids`` so far (``/proc/<pid>/stat``)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return total / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


async def measure(
    directory: Path, port: int, upstreams: list[int], clients: int, seconds: float, pids: dict[str, list[int]]
) -> tuple[float, int, float, float]:
    """Through nginx on ``port`` in front of ``upstreams``: calls/s, calls lost, and the
    replicas' and all processes' CPU ms per call."""
    with nginx_proxy(directory, upstreams, port=port) as proxy:
        assert proxy.process is not None
        replicas = pids["replicas"][: len(upstreams)]
        everything = [*pids["replicas"], *pids["others"], proxy.process.pid, *children(proxy.process.pid)]
        tokens = {grant: TOKENS[grant] for grant in GRANTS}
        load = Load(f"{proxy.base}/mcp", tokens, proxy.tls.client_context(), pause=0)
        load.start(clients_per_grant=max(1, clients // len(GRANTS)))
        try:
            await asyncio.sleep(WARM_UP_SECONDS)
            lost_before, calls_before = len(load.lost()), len(load.outcomes)
            cpu_before = cpu_seconds(replicas), cpu_seconds(everything)
            rate = await calls_per_second(load, seconds)
            cpu_after = cpu_seconds(replicas), cpu_seconds(everything)
            calls = len(load.outcomes) - calls_before
            lost = len(load.lost()) - lost_before
        finally:
            await load.stop()
    replicas_ms, all_ms = (
        1000 * (after - before) / max(1, calls) for before, after in zip(cpu_before, cpu_after, strict=True)
    )
    return rate, lost, replicas_ms, all_ms


BURST, RATE, BURST_CALLS = 10, 5.0, 60
# none of the load's GRANTS: each burst's bucket is its own
BURST_GRANT, OUTAGE_GRANT, BACK_GRANT = "client_life", "client_home_mail", "client_orbit_chat"
OUTAGE_SECONDS = 3.0  # Redis down before the burst during the outage: every replica has noticed
READY_WAIT_SECONDS = 30.0


async def burst(replicas: Fleet, grant: str) -> tuple[int, int, float]:
    """``BURST_CALLS`` calls at once from ``grant`` through the proxy: answered, refused, seconds."""
    assert replicas.proxy is not None
    headers = {"Authorization": f"Bearer {TOKENS[grant]}", "Accept": "application/json"}
    connector = aiohttp.TCPConnector(ssl=replicas.proxy.tls.client_context(), limit=BURST_CALLS)
    async with aiohttp.ClientSession(connector=connector) as http:

        async def one(n: int) -> int:
            async with http.post(f"{replicas.public}/mcp", json=tool_call(n), headers=headers) as answer:
                await answer.read()
                return answer.status

        started = time.perf_counter()
        statuses = await asyncio.gather(*(one(n) for n in range(BURST_CALLS)))
        return statuses.count(200), statuses.count(429), time.perf_counter() - started


async def all_ready(ports: list[int]) -> float:
    """Seconds until the own ``/readyz`` of every replica on ``ports`` answers 200, nothing degraded."""
    started = time.perf_counter()
    async with aiohttp.ClientSession() as http:
        while time.perf_counter() - started < READY_WAIT_SECONDS:
            ready = 0
            for port in ports:
                async with http.get(f"http://127.0.0.1:{port}/readyz") as answer:
                    body = await answer.json()
                    ready += answer.status == 200 and not body.get("detail")
            if ready == len(ports):
                return time.perf_counter() - started
            await asyncio.sleep(0.1)
    raise TimeoutError(
        f"the replicas' /readyz did not all say Redis was back within {READY_WAIT_SECONDS:g} s"
    )


def burst_line(what: str, answered: int, refused: int, took: float) -> str:
    bound = BURST + RATE * took
    return (
        f"{what}: {answered} answered in {took:.2f} s (limit {BURST} + {RATE:g}/s: {bound:.0f}; one burst per "
        f"replica would be {REPLICAS * BURST}+), {refused} refused 429"
    )


async def restart_and_burst(rs_url: str, directory: Path, clients: int) -> None:
    """The fifth grant's burst, a rolling restart, then a Redis outage, under the load of the other
    four grants (see above)."""
    limits = ("--rate-limit", str(RATE), "--rate-burst", str(BURST))
    async with fleet(SimpleNamespace(url=rs_url), directory, 2 * REPLICAS, *limits) as replicas:
        assert replicas.redis is not None
        load = replicas.load(dict(TOKENS))
        load.pause = 0
        load.start(clients_per_grant=max(1, clients // len(GRANTS)))
        await asyncio.sleep(WARM_UP_SECONDS)
        first = await burst(replicas, BURST_GRANT)
        before = len(load.outcomes)
        for successor in replicas.ports[REPLICAS:]:
            old = replicas.running.pop(0)
            await replicas.start(successor)  # the next one first, then SIGTERM to the old one
            await old.stop()
        during = load.outcomes[before:]
        replicas.redis.kill()
        await asyncio.sleep(OUTAGE_SECONDS)
        alone = await burst(replicas, OUTAGE_GRANT)
        replicas.redis.restart()  # a new, empty Redis on the same port
        waited = await all_ready(replicas.ports[REPLICAS:])  # the successors serve now
        back = await burst(replicas, BACK_GRANT)
        await asyncio.sleep(1)
        await load.stop()
    lost = [outcome for outcome in during if not outcome.ok and not outcome.detail.startswith("HTTP 429")]
    print(burst_line(f"burst of {BURST_CALLS} from one grant across {REPLICAS} replicas under load", *first))
    print(f"rolling restart under load: {len(lost)} of {len(during)} calls lost")
    print(burst_line("the same burst while Redis is down (each replica allows its share)", *alone))
    print(
        burst_line(
            f"the same burst as soon as every /readyz says Redis is back ({waited:.1f} s after its restart)",
            *back,
        )
    )


async def main(seconds: float, clients: int, rounds: int) -> None:
    missing = [name for name in ("nginx", "redis-server", "openssl") if shutil.which(name) is None]
    if missing:
        sys.exit(f"replicas_bench needs {', '.join(missing)} on PATH (scripts/test installs them with apt)")
    redis = RedisServer(str(shutil.which("redis-server")))
    port = free_port()
    public = f"https://127.0.0.1:{port}/pdpp"
    try:
        async with sandbox_process() as (rs_url, sandbox), AsyncExitStack() as stack:
            ports = [free_port() for _ in range(REPLICAS)]
            pids: dict[str, list[int]] = {"replicas": [], "others": [sandbox.pid, redis.pid, os.getpid()]}
            for replica_port in ports:
                extra = ["--redis-url", redis.url, "--trusted-proxy", "127.0.0.1", "--public-url", public]
                extra += ["--rate-limit", "1000000", "--rate-burst", "1000000"]
                replica = await stack.enter_async_context(process(*serve_args(rs_url, replica_port, *extra)))
                pids["replicas"].append(replica.pid)
                await wait_up(f"http://127.0.0.1:{replica_port}/healthz")
            print(
                f"{clients} clients over {len(GRANTS)} grants, search calls back to back, {seconds:.0f} s per "
                f"measurement, through nginx (TLS, /pdpp) to k replicas sharing Redis"
            )
            print(
                f"round | replicas | calls/s | lost | x 1 replica | CPU ms/call: replicas, all (this machine: "
                f"{os.cpu_count()} cores)"
            )
            with tempfile.TemporaryDirectory(prefix="replicas-bench-") as scratch:
                for round_number in range(1, rounds + 1):
                    baseline = 0.0
                    for k in range(1, REPLICAS + 1):
                        directory = Path(scratch) / f"r{round_number}k{k}"
                        rate, lost, mine, total = await measure(
                            directory, port, ports[:k], clients, seconds, pids
                        )
                        baseline = baseline or rate
                        print(
                            f"{round_number:>5} | {k:>8} | {rate:>7.0f} | {lost:>4} | {f'x{rate / baseline:.2f}':>11} |"
                            f" {mine:.2f}, {total:.2f}"
                        )
                await stack.aclose()  # the throughput replicas go: the fleet below is its own
                await restart_and_burst(rs_url, Path(scratch) / "restart", clients)
    finally:
        redis.kill()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=2)
    options = parser.parse_args()
    asyncio.run(main(options.seconds, options.clients, options.rounds))
