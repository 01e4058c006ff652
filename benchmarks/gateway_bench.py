"""Hosted gateway benchmark: what /mcp adds over a direct RS read, throughput, memory.

Run: ``.venv/bin/python benchmarks/gateway_bench.py [--calls N] [--seconds S]``

Three processes on this machine: the sandbox RS (``pdpp-gateway sandbox``), the hosted
gateway (``pdpp-gateway serve``, introspection on, one worker) and this load client
(aiohttp, keep-alive). The measured tool call is ``query_records`` for one stream page,
which the gateway turns into exactly one RS GET (checked from the gateway's own
metrics), so the baseline is that same GET sent straight to the RS in the same run.

Prints, with ratios against the baseline measured in the same run:
- latency p50/p99 of the direct GET and of the ``tools/call``, and the gateway's added
  p50/p99 (target: added p50 at most 0.8 ms, issue 14), beside the floor: the same hop
  through a bare aiohttp proxy that does nothing else (``bare_hop.py``), and the CPU
  each spends per call. The three arms run in alternating rounds, so a load change on a
  shared machine moves all three;
- requests per second at concurrency 1, 16 and 64, direct and through the gateway;
- the gateway's RSS after warm-up and after 5,000 / 10,000 / 20,000 calls (target: flat).

``--against CHECKOUT`` measures only the added p50, of this tree's gateway and of the
one in another checkout (same venv), both in front of one RS, in alternating rounds
with the bare hop: the ratio between the two is what a change bought, on a machine
whose load moves both; each ratio is also printed paired (the median of the rounds' own
ratios, which a change of the machine's load between rounds cannot move, with the middle
half of those ratios: a difference inside it is not yet a measured one). A third gateway
of this tree runs with tracing on (``OTEL_EXPORTER_OTLP_ENDPOINT`` at a sink in this
process that takes every export): what tracing costs when an operator turns it on.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import socket
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
from aiohttp import web

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "sbx_client_narrow_7c1e94b2"  # sandbox fixture material
QUERY = (("limit", "5"), ("connection_id", "cin_mail_work"))
CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {
        "name": "query_records",
        "arguments": {"stream": "messages", "limit": 5, "connection_id": "cin_mail_work"},
    },
}
HEADERS = {"Authorization": f"Bearer {TOKEN}", "Accept": "application/json"}
WARM_UP = 300  # calls each server answers before it is measured (here and in hop_*.py)


async def direct_read(http: aiohttp.ClientSession, rs_url: str) -> None:
    """The baseline: the records GET a ``tools/call`` makes, sent straight to the RS."""
    async with http.get(f"{rs_url}/v1/streams/messages/records", params=QUERY, headers=HEADERS) as r:
        assert r.status == 200
        await r.read()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def process(
    *args: str, tree: Path = ROOT, env: dict[str, str] | None = None
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``python -m pdpp_gateway ARGS`` run from ``tree`` (another checkout, for before/after)."""
    child = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pdpp_gateway",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree), **(env or {})},
    )
    try:
        yield child
    finally:
        child.terminate()
        await child.wait()


@contextlib.asynccontextmanager
async def bare_hop(rs_url: str, port: int) -> AsyncIterator[asyncio.subprocess.Process]:
    """The floor arm: ``bare_hop.py`` in front of ``rs_url`` on ``port``."""
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(ROOT / "benchmarks" / "bare_hop.py"), rs_url, str(port)
    )
    try:
        yield child
    finally:
        child.terminate()
        await child.wait()


def serve_args(rs_url: str, port: int, *extra: str) -> list[str]:
    """``serve`` on ``port`` in front of the sandbox at ``rs_url``, bearers checked by introspection."""
    return [
        "serve", "--provider-url", rs_url, "--port", str(port), "--log-level", "WARNING",
        "--introspection-url", f"{rs_url}/introspect", "--introspection-client-id", "pdpp-gateway",
        "--introspection-client-secret", "sandbox-introspection-secret", *extra,
    ]  # fmt: skip


async def wait_up(url: str, deadline_seconds: float = 60) -> None:
    deadline = time.monotonic() + deadline_seconds
    async with aiohttp.ClientSession() as http:
        while time.monotonic() < deadline:
            with contextlib.suppress(aiohttp.ClientError):
                async with http.get(url) as response:
                    if response.status < 500:
                        return
            await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")


@contextlib.asynccontextmanager
async def sandbox_process() -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """The sandbox RS on a free loopback port, answering; yields its URL and process."""
    port = free_port()
    async with process("sandbox", "--port", str(port), "--fixed-ids") as child:  # the ids QUERY names
        url = f"http://127.0.0.1:{port}"
        await wait_up(f"{url}/.well-known/oauth-protected-resource")
        yield url, child


@contextlib.asynccontextmanager
async def running_sandbox() -> AsyncIterator[str]:
    """The sandbox RS on a free loopback port, answering; yields its URL."""
    async with sandbox_process() as (url, _):
        yield url


@contextlib.asynccontextmanager
async def running_gateway(
    rs_url: str, *extra: str, tree: Path = ROOT, env: dict[str, str] | None = None
) -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    """``serve`` (from ``tree``) in front of ``rs_url`` on a free port, answering; yields
    its ``/mcp`` URL and process."""
    port = free_port()
    async with process(*serve_args(rs_url, port, *extra), tree=tree, env=env) as child:
        url = f"http://127.0.0.1:{port}/mcp"
        await wait_up(url.replace("/mcp", "/healthz"))
        yield url, child


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def timed(n: int, once: Callable[[], Awaitable[None]]) -> list[float]:
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        await once()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def throughput(concurrency: int, seconds: float, once: Callable[[], Awaitable[None]]) -> float:
    done = 0
    stop = time.perf_counter() + seconds

    async def worker() -> None:
        nonlocal done
        while time.perf_counter() < stop:
            await once()
            done += 1

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done / (time.perf_counter() - started)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    return int(match.group(1)) / 1024 if match else float("nan")


@dataclass
class Arm:
    """One way of making the measured read, and the process serving it (if any)."""

    once: Callable[[], Awaitable[None]]
    pid: int | None = None
    samples: list[float] = field(default_factory=list)
    round_p50s: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)


async def alternate(arms: dict[str, Arm], calls: int, rounds: int) -> None:
    """``calls`` calls per arm in ``rounds`` rounds, the arms' order reversed every round;
    each round's samples, p50 and the serving process's CPU per call kept on the arm."""
    for arm in arms.values():
        await timed(WARM_UP, arm.once)
    block = max(1, calls // rounds)
    for turn in range(rounds):
        for arm in list(arms.values())[:: 1 if turn % 2 == 0 else -1]:
            cpu_before = cpu_seconds(arm.pid) if arm.pid is not None else 0.0
            samples = await timed(block, arm.once)
            arm.samples.extend(samples)
            arm.round_p50s.append(statistics.median(samples))
            if arm.pid is not None:
                arm.cpu_ms.append((cpu_seconds(arm.pid) - cpu_before) / block * 1000)


def mcp_call(http: aiohttp.ClientSession, url: str) -> Callable[[], Awaitable[None]]:
    async def once() -> None:
        async with http.post(url, json=CALL, headers=HEADERS) as r:
            assert r.status == 200
            body = await r.json()
            assert not body["result"].get("isError"), body

    return once


async def main(calls: int, seconds: float, rounds: int) -> None:
    bare_port = free_port()
    bare_url = f"http://127.0.0.1:{bare_port}/mcp"
    async with (
        running_sandbox() as rs_url,
        running_gateway(rs_url, "--rate-limit", "0") as (gw_url, gateway),
        bare_hop(rs_url, bare_port) as bare,
    ):
        await wait_up(bare_url.replace("/mcp", "/healthz"))
        connector = aiohttp.TCPConnector(limit=128)
        async with aiohttp.ClientSession(connector=connector) as http:

            def direct() -> Awaitable[None]:
                return direct_read(http, rs_url)

            through = mcp_call(http, gw_url)
            await timed(300, direct)
            await timed(300, through)
            async with http.get(gw_url.replace("/mcp", "/metrics")) as r:
                metrics = await r.text()
            gets = re.search(
                r'pdpp_gateway_upstream_seconds_count\{route="records",status="2xx"\} (\S+)', metrics
            )
            upstream_per_call = float(gets.group(1)) / 300 if gets else float("nan")
            rss_warm = rss_mib(gateway.pid)

            arms = {
                "direct": Arm(direct),
                "via": Arm(through, gateway.pid),
                "bare": Arm(mcp_call(http, bare_url), bare.pid),
            }
            load_before = os.getloadavg()[0]
            await alternate(arms, calls, rounds)
            load_after = os.getloadavg()[0]
            p50 = {name: statistics.median(arm.samples) for name, arm in arms.items()}
            p99 = {name: percentile(arm.samples, 0.99) for name, arm in arms.items()}
            cpu = {name: statistics.median(arm.cpu_ms) for name, arm in arms.items() if arm.cpu_ms}
            b50, b99 = p50["direct"], p99["direct"]
            g50, g99 = p50["via"], p99["via"]
            added, floor = g50 - b50, p50["bare"] - b50
            print(f"tool call = query_records (1 page of 5); RS GETs per tool call: {upstream_per_call:.2f}")
            print(
                f"sequential latency, {calls} calls per arm in {rounds} alternating rounds (ms); "
                f"load average {load_before:.2f} -> {load_after:.2f}"
            )
            print(f"  direct RS GET   p50 {b50:6.2f}  p99 {b99:6.2f}  (baseline)")
            print(
                f"  via /mcp        p50 {g50:6.2f}  p99 {g99:6.2f}  (x{g50 / b50:.2f} p50, x{g99 / b99:.2f} p99)"
            )
            print(
                f"  bare hop        p50 {p50['bare']:6.2f}  p99 {p99['bare']:6.2f}  (the floor: bare_hop.py)"
            )
            print(f"  gateway adds    p50 {added:6.2f}  p99 {g99 - b99:6.2f}  (target: added p50 <= 0.8 ms)")
            print(
                f"  bare hop adds   p50 {floor:6.2f}  (gateway: x{added / floor:.2f} the floor; "
                f"its own code beyond the hop {added - floor:.2f} ms)"
            )
            print(
                f"  CPU per call    gateway {cpu['via']:.2f} ms, bare hop {cpu['bare']:.2f} ms "
                f"(x{cpu['via'] / cpu['bare']:.2f})"
            )

            print(f"throughput (req/s over {seconds:.0f} s each)")
            for concurrency in (1, 16, 64):
                d = await throughput(concurrency, seconds, direct)
                g = await throughput(concurrency, seconds, through)
                print(f"  concurrency {concurrency:>2}: direct {d:7.0f}  via /mcp {g:7.0f}  (x{g / d:.2f})")

            print("gateway RSS (MiB)")
            print(f"  after warm-up           {rss_warm:7.1f}  (baseline)")
            total = 0
            for mark in (5_000, 10_000, 20_000):
                while total < mark:
                    await asyncio.gather(*(through() for _ in range(50)))
                    total += 50
                rss = rss_mib(gateway.pid)
                print(f"  after {mark:>6,} calls      {rss:7.1f}  (x{rss / rss_warm:.2f})")


@contextlib.asynccontextmanager
async def otlp_sink() -> AsyncIterator[str]:
    """An OTLP/HTTP endpoint that takes every export and keeps nothing; yields its URL."""

    async def accept(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(body=b"", content_type="application/x-protobuf")

    app = web.Application()
    app.router.add_post("/v1/traces", accept)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def against(baseline: Path, calls: int, rounds: int) -> None:
    """Added p50 of this tree's gateway (tracing off, and on: exporting every span over
    OTLP/HTTP) and of ``baseline``'s, all in front of one RS, measured in alternating
    rounds with the direct GET and the bare hop."""
    bare_port = free_port()
    async with (
        running_sandbox() as rs_url,
        otlp_sink() as sink,
        running_gateway(rs_url, "--rate-limit", "0") as (ours_url, ours),
        running_gateway(rs_url, "--rate-limit", "0", env={"OTEL_EXPORTER_OTLP_ENDPOINT": sink}) as (
            traced_url,
            traced,
        ),
        running_gateway(rs_url, "--rate-limit", "0", tree=baseline) as (base_url, base),
        bare_hop(rs_url, bare_port) as bare,
    ):
        urls = {
            "ours": ours_url,
            "traced": traced_url,
            "base": base_url,
            "bare": f"http://127.0.0.1:{bare_port}/mcp",
        }
        pids = {"ours": ours.pid, "traced": traced.pid, "base": base.pid, "bare": bare.pid}
        await wait_up(urls["bare"].replace("/mcp", "/healthz"))
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=8)) as http:
            arms = {"direct": Arm(lambda: direct_read(http, rs_url))}
            arms |= {name: Arm(mcp_call(http, url), pids[name]) for name, url in urls.items()}
            load_before = os.getloadavg()[0]
            await alternate(arms, calls, rounds)
            load_after = os.getloadavg()[0]
    direct = arms["direct"].round_p50s
    added = {name: [p - d for p, d in zip(arms[name].round_p50s, direct, strict=True)] for name in urls}
    add = {name: statistics.median(values) for name, values in added.items()}
    per_call = {name: statistics.median(arms[name].cpu_ms) for name in urls}
    print(
        f"{rounds} alternating rounds of {calls // rounds} calls per arm; "
        f"load average {load_before:.2f} -> {load_after:.2f}; direct GET p50 {statistics.median(direct):.2f} ms"
    )
    print("added p50 = a round's p50 via /mcp minus its direct GET p50; medians over the rounds (ms)")
    print(f"  baseline {baseline}: adds p50 {add['base']:5.2f}  gateway CPU/call {per_call['base']:5.2f}")
    print(
        f"  this tree: adds p50 {add['ours']:5.2f} (x{add['ours'] / add['base']:.2f})"
        f"  gateway CPU/call {per_call['ours']:5.2f} (x{per_call['ours'] / per_call['base']:.2f})"
    )
    print(
        f"  this tree, tracing on (OTLP/HTTP): adds p50 {add['traced']:5.2f} (x{add['traced'] / add['ours']:.2f} "
        f"of tracing off)  gateway CPU/call {per_call['traced']:5.2f}"
    )
    print(
        f"  bare aiohttp hop (the floor): adds p50 {add['bare']:5.2f}  CPU/call {per_call['bare']:5.2f}; "
        f"this tree x{add['ours'] / add['bare']:.2f} of it"
    )
    print(
        "  paired (median over rounds of one round's ratio, the arms measured within seconds of each other; "
        "in brackets the middle half of the rounds' ratios):"
    )
    print(
        f"    this tree {paired(added['ours'], added['base'])} of the baseline, "
        f"{paired(added['ours'], added['bare'])} of the bare hop; "
        f"baseline {paired(added['base'], added['bare'])} of the bare hop"
    )
    for name in ("base", "ours", "traced", "bare"):
        print(f"  rounds, {name}: {' '.join(f'{value:.2f}' for value in added[name])}")


def paired(values: list[float], floor: list[float]) -> str:
    """The median of the round-by-round ratios ``values[i] / floor[i]`` (a load change that
    moves a whole round moves both arms of it, so the ratio stays where it was), with their
    quartiles: how far one round's ratio strays, so a difference smaller than that is read as noise."""
    ratios = [value / base for value, base in zip(values, floor, strict=True) if base > 0]
    if len(ratios) < 2:
        return f"x{statistics.median(ratios):.2f}"
    low, middle, high = statistics.quantiles(ratios, n=4)
    return f"x{middle:.2f} [x{low:.2f}-x{high:.2f}]"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument(
        "--against",
        type=Path,
        metavar="CHECKOUT",
        help="compare only the added p50 with another checkout's gateway (e.g. the commit before a "
        "change), both in front of one RS, in alternating rounds",
    )
    parser.add_argument("--rounds", type=int, default=10)
    options = parser.parse_args()
    if options.against is not None:
        asyncio.run(against(options.against.resolve(), options.calls, options.rounds))
    else:
        asyncio.run(main(options.calls, options.seconds, options.rounds))
