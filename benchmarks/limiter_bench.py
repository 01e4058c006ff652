"""What a rate-limit check costs per call: unlimited, in-process buckets, Redis buckets.

Run: ``.venv/bin/python benchmarks/limiter_bench.py [--calls N]`` (the Redis row needs
``redis-server`` on PATH; it is skipped with a note otherwise).

One sandbox RS, then one hosted gateway per mode on it (introspection on, one worker),
each driven by the same sequential ``tools/call`` (``query_records``, one page) with
limits high enough that nothing is refused. The baseline is the unlimited gateway in the
same run; the limiter's cost is the difference of the p50s. The last row freezes Redis
(SIGSTOP) after the warm-up: a hung shared store, which the gateway must skip at once.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import sys
from collections.abc import Callable
from pathlib import Path

import aiohttp
from gateway_bench import CALL, HEADERS, percentile, running_gateway, running_sandbox, timed

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.redis_server import RedisServer


async def measure(
    rs_url: str, calls: int, extra: list[str], *, then: Callable[[], None] | None = None
) -> list[float]:
    """``then`` runs after the warm-up (freezing Redis, say), before the measured calls."""
    async with running_gateway(rs_url, *extra) as (url, _), aiohttp.ClientSession() as http:

        async def once() -> None:
            async with http.post(url, json=CALL, headers=HEADERS) as response:
                assert response.status == 200, response.status
                await response.read()

        await timed(300, once)
        if then is not None:
            then()
            await once()  # the one call that meets the hang and misses its deadline
        return await timed(calls, once)


async def main(calls: int) -> None:
    generous = ["--rate-limit", "1000000", "--rate-burst", "1000000"]
    async with running_sandbox() as rs_url:
        rows = [("unlimited (baseline)", await measure(rs_url, calls, ["--rate-limit", "0"]))]
        rows.append(("in-process buckets", await measure(rs_url, calls, generous)))
        binary = shutil.which("redis-server")
        if binary:
            redis = RedisServer(binary)
            try:
                shared = [*generous, "--redis-url", redis.url]
                rows.append(("Redis buckets", await measure(rs_url, calls, shared)))
                rows.append(
                    ("Redis frozen (SIGSTOP)", await measure(rs_url, calls, shared, then=redis.freeze))
                )
                redis.thaw()
            finally:
                redis.kill()
        base = statistics.median(rows[0][1])
        print(f"sequential tools/call (query_records, 1 page), {calls} calls each (ms)")
        for name, samples in rows:
            p50, p99 = statistics.median(samples), percentile(samples, 0.99)
            print(
                f"  {name:<22} p50 {p50:6.3f}  p99 {p99:6.3f}  limiter adds {p50 - base:+.3f} ms (x{p50 / base:.2f})"
            )
        if not binary:
            print("  Redis buckets: skipped (no redis-server on PATH)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    asyncio.run(main(parser.parse_args().calls))
