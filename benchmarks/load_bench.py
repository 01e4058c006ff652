"""Load benchmark: N concurrent MCP clients for a fixed time against the sandbox.

Run: ``.venv/bin/python benchmarks/load_bench.py [--clients 8 32 64] [--seconds 10]``

Three processes on this machine: the sandbox RS, the hosted gateway (``serve``,
introspection on, one worker) and this load client. Each simulated client keeps its
own keep-alive connection and loops over a realistic mix of tool calls (schema index,
a stream page, a lexical search, a fetch, a count), with its own bearer. The baseline,
measured in the same run with the same number of clients for the same time, is the
direct RS GET behind the cheapest of those calls (one page of records).

Prints, per client count: calls per second, latency p50/p99, errors (any non-200, any
JSON-RPC error, any ``isError`` result), and the ratio of throughput to the baseline;
then the gateway's RSS at the start and at the end of the whole run.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import time
from collections.abc import Awaitable, Callable

import aiohttp
from gateway_bench import HEADERS, QUERY, percentile, rss_mib, running_gateway, running_sandbox

TOKENS = ("sbx_client_narrow_7c1e94b2",)
MIX = [
    ("schema", {}),
    ("query_records", {"stream": "messages", "limit": 5, "connection_id": "cin_mail_work"}),
    ("search", {"query": "invoice", "limit": 5}),
    ("fetch", {"id": "cin_mail_work/messages:msg_work_0074"}),
    ("aggregate", {"stream": "messages", "metric": "count", "connection_id": "cin_mail_work"}),
]


def frame(request_id: int, tool: str, arguments: dict[str, object]) -> dict[str, object]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }


async def run_for(
    clients: int, seconds: float, make_once: Callable[[int], Callable[[], Awaitable[bool]]]
) -> tuple[int, int, list[float], float]:
    """``clients`` loops of ``once`` for ``seconds``: (calls, errors, latencies in ms, elapsed)."""
    latencies: list[float] = []
    errors = 0
    stop = time.perf_counter() + seconds

    async def client(number: int) -> None:
        nonlocal errors
        once = make_once(number)
        while time.perf_counter() < stop:
            started = time.perf_counter()
            ok = await once()
            latencies.append((time.perf_counter() - started) * 1000)
            errors += not ok

    started = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    return len(latencies), errors, latencies, time.perf_counter() - started


async def main(client_counts: list[int], seconds: float) -> None:
    async with running_sandbox() as rs_url, running_gateway(rs_url, "--rate-limit", "0") as (gw_url, gateway):
        sessions = [
            aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=1)) for _ in range(max(client_counts))
        ]
        try:

            def direct(number: int) -> Callable[[], Awaitable[bool]]:
                http = sessions[number]

                async def once() -> bool:
                    async with http.get(
                        f"{rs_url}/v1/streams/messages/records", params=QUERY, headers=HEADERS
                    ) as r:
                        await r.read()
                        return r.status == 200

                return once

            def through(number: int) -> Callable[[], Awaitable[bool]]:
                http = sessions[number]
                calls = itertools.cycle(MIX[number % len(MIX) :] + MIX[: number % len(MIX)])
                ids = itertools.count(1)

                async def once() -> bool:
                    tool, arguments = next(calls)
                    async with http.post(
                        gw_url, json=frame(next(ids), tool, arguments), headers=HEADERS
                    ) as r:
                        if r.status != 200:
                            await r.read()
                            return False
                        body = await r.json()
                        return "result" in body and not body["result"].get("isError")

                return once

            for number in range(len(sessions)):  # warm every connection and the token cache
                await through(number)()
            rss_start = rss_mib(gateway.pid)
            print(f"tool mix: {', '.join(tool for tool, _ in MIX)}; {seconds:.0f} s per run")
            print(
                "clients |  direct RS GET calls/s  p50   p99 |  via /mcp calls/s  p50   p99  errors | x direct"
            )
            for clients in client_counts:
                b_calls, b_errors, b_lat, b_time = await run_for(clients, seconds, direct)
                g_calls, g_errors, g_lat, g_time = await run_for(clients, seconds, through)
                b_rate, g_rate = b_calls / b_time, g_calls / g_time
                print(
                    f"{clients:>7} | {b_rate:>21.0f} {statistics.median(b_lat):5.1f} {percentile(b_lat, 0.99):5.1f} |"
                    f" {g_rate:>16.0f} {statistics.median(g_lat):5.1f} {percentile(g_lat, 0.99):5.1f} {g_errors:>7}"
                    f" | x{g_rate / b_rate:.2f}" + (f"  (direct errors: {b_errors})" if b_errors else "")
                )
            rss_end = rss_mib(gateway.pid)
            print(
                f"gateway RSS: start {rss_start:.1f} MiB, end {rss_end:.1f} MiB (x{rss_end / rss_start:.2f})"
            )
        finally:
            for http in sessions:
                await http.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument("--seconds", type=float, default=10.0)
    options = parser.parse_args()
    asyncio.run(main(options.clients, options.seconds))
