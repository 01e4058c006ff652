"""Sandbox RS benchmark: starting it, paging a 10,000-record stream end to end, searching it.

Prints numbers and ratios against a baseline measured in the same run, so results compare
across machines (the baseline is the protected-resource metadata document: same
server, same connection, no database work). Run: ``.venv/bin/python benchmarks/sandbox_bench.py [--records N]``.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

from pdpp_gateway.sandbox.config import SandboxConfig
from pdpp_gateway.sandbox.runner import start_sandbox

EVENTS = "/v1/streams/events/records"


async def _timed(samples: int, call: Callable[[], Awaitable[Any]]) -> list[float]:
    await call()  # warm-up
    timings = []
    for _ in range(samples):
        started = time.perf_counter()
        await call()
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def _line(name: str, timings: list[float], baseline: float) -> str:
    p50 = statistics.median(timings)
    p95 = sorted(timings)[int(len(timings) * 0.95) - 1]
    return f"{name:<38} p50 {p50:8.2f} ms  p95 {p95:8.2f} ms  x{p50 / baseline:6.1f} baseline"


async def _starts(count: int) -> None:
    """A sample-data sandbox's first start in this process (it builds the template database
    and its search indexes) against the median of the next ``count`` (they copy the template)."""
    timings = []
    for _ in range(count + 1):
        started = time.perf_counter()
        async with start_sandbox(SandboxConfig()):
            timings.append((time.perf_counter() - started) * 1000)
    first, rest = timings[0], statistics.median(timings[1:])
    print(
        f"{'sample-data sandbox start':<38} first {first:8.0f} ms  next p50 {rest:6.1f} ms  (x{first / rest:.0f})"
    )


async def main(records: int, samples: int) -> None:
    await _starts(5)
    started = time.perf_counter()
    async with start_sandbox(SandboxConfig(bulk_records=records)) as sandbox:
        print(
            f"sandbox with {records} bulk records ready in {(time.perf_counter() - started) * 1000:.0f} ms "
            "(first start builds the template database)"
        )
        headers = {"Authorization": f"Bearer {sandbox.tokens['client_broad']}"}
        async with aiohttp.ClientSession(sandbox.url, headers=headers) as session:

            async def get(path: str) -> Any:
                async with session.get(path) as response:
                    assert response.status == 200, await response.text()
                    return await response.json()

            baseline_timings = await _timed(samples, lambda: get("/.well-known/oauth-protected-resource"))
            baseline = statistics.median(baseline_timings)
            print(_line("baseline: metadata document (no DB)", baseline_timings, baseline))
            print(
                _line(
                    "one page (limit 100)",
                    await _timed(samples, lambda: get(f"{EVENTS}?limit=100")),
                    baseline,
                )
            )
            print(
                _line(
                    "filtered page (kind + range)",
                    await _timed(
                        samples,
                        lambda: get(f"{EVENTS}?limit=100&filter[kind]=purchase&filter[value][gte]=500"),
                    ),
                    baseline,
                )
            )
            print(
                _line(
                    "FTS search, common words",
                    await _timed(
                        samples, lambda: get("/v1/search?q=invoice+payment&streams=events&limit=25")
                    ),
                    baseline,
                )
            )
            print(
                _line(
                    "FTS search, one common word (events)",
                    await _timed(samples, lambda: get("/v1/search?q=project&streams=events&limit=25")),
                    baseline,
                )
            )
            print(
                _line(
                    "FTS search, one common word (all)",
                    await _timed(samples, lambda: get("/v1/search?q=team&limit=25")),
                    baseline,
                )
            )
            print(
                _line(
                    "FTS search, rare word",
                    await _timed(
                        samples, lambda: get("/v1/search?q=workshop+forecast+renewal&streams=events&limit=25")
                    ),
                    baseline,
                )
            )
            print(
                _line(
                    "semantic search, a person's words",
                    await _timed(
                        samples, lambda: get("/v1/search/semantic?q=when+does+my+gym+membership+renew")
                    ),
                    baseline,
                )
            )
            print(
                _line(
                    "hybrid search, a person's words",
                    await _timed(
                        samples, lambda: get("/v1/search/hybrid?q=when+does+my+gym+membership+renew")
                    ),
                    baseline,
                )
            )
            print(
                _line(
                    "aggregate count by month",
                    await _timed(
                        samples,
                        lambda: get(
                            "/v1/streams/events/aggregate?metric=count&group_by_time=occurred_at&granularity=month"
                        ),
                    ),
                    baseline,
                )
            )

            walk_started = time.perf_counter()
            seen, pages, cursor = 0, 0, None
            while True:
                page = await get(f"{EVENTS}?limit=100" + (f"&cursor={cursor}" if cursor else ""))
                seen += len(page["data"])
                pages += 1
                cursor = page.get("next_cursor")
                if not cursor:
                    break
            walk_ms = (time.perf_counter() - walk_started) * 1000
            assert seen == records, (seen, records)
            print(
                f"{'page through every record':<38} {seen} records in {pages} pages: {walk_ms:.0f} ms total, "
                f"{walk_ms / pages:.2f} ms/page (x{walk_ms / pages / baseline:.1f} baseline)"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=200)
    options = parser.parse_args()
    asyncio.run(main(options.records, options.samples))
