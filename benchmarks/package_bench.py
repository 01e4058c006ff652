"""A package search over 8 children, each answering in 50 ms, against its slowest child alone.

Run: ``.venv/bin/python benchmarks/package_bench.py [--calls N] [--delay-ms 50] [--children 8]``

Each child grant is an in-memory RS (``tests/fake_rs.FakeRs``, 60 canned hits) that waits
``--delay-ms`` before every answer. Two transports, each in the same run:

- ``http``: one RS on 127.0.0.1 serving every child by its bearer (as one real RS serves a
  package's child grants), read through the gateway's real ``RsClient`` (one pooled client,
  a reader bound per child);
- ``memory``: the same children read directly, no socket (the tool pipeline alone).

For each transport: every child searched alone through the full tool pipeline (routed by
``connection_id``), then the package search of all children (merged page 1, limit 25), then
page 2 (following the merged ``next_cursor``: each child re-read with its position). The
baseline is the slowest child alone in the same run (its p50); the target is a merged page
within 1.3x of it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from mcp_gateway_middleware import ToolCall

from pdpp_gateway.context import GatewayContext, PackageMember, RsReader
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.rs.errors import RsStatusError
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.fake_rs import FakeRs, hit

TARGET = 1.3
PIPELINE = build_pipeline()
ARGS = {"query": "invoice", "limit": 25}


def children(count: int, delay: float) -> list[FakeRs]:
    fakes = []
    for n in range(count):
        connection = f"cin_child{n}"
        hits = [
            hit("messages", f"r{n}_{rank:03d}", connection, f"<mark>invoice</mark> {rank}")
            for rank in range(60)
        ]
        fakes.append(FakeRs(f"grt_child{n}", connection_id=connection, hits=hits, delay=delay))
    return fakes


def members(fakes: Sequence[FakeRs], readers: Sequence[RsReader]) -> list[PackageMember]:
    return [
        PackageMember(
            rs=reader, grant_id=fake.grant, connection_ids=(fake.connection_id,), streams=("messages",)
        )
        for fake, reader in zip(fakes, readers, strict=True)
    ]


async def serve_rs(fakes: Sequence[FakeRs]) -> tuple[web.AppRunner, str]:
    """One RS on 127.0.0.1 answering each bearer from its child's fake."""
    by_token = {f"bench-token-{n}": fake for n, fake in enumerate(fakes)}

    async def answer(request: web.Request) -> web.Response:
        fake = by_token.get(request.headers.get("Authorization", "").removeprefix("Bearer "))
        if fake is None:
            return web.json_response({"error": {"code": "invalid_token"}}, status=401)
        try:
            response = await fake.get_json(request.path, list(request.query.items()))
        except RsStatusError as error:
            return web.json_response({"error": error.envelope}, status=error.status)
        return web.json_response(response.body)

    app = web.Application()
    app.router.add_get("/{tail:.*}", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    return runner, f"http://127.0.0.1:{port}"


async def timed(calls: int, once: Callable[[], Awaitable[None]]) -> list[float]:
    await once()  # warm the pool and caches
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await once()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def run(context: GatewayContext, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await PIPELINE(ToolCall("search", arguments, context))
    assert not result.is_error, result.text
    return result.structured


async def measure(label: str, package_members: list[PackageMember], calls: int) -> None:
    context = GatewayContext.for_package(package_members, "https://rs.example.test")
    alone = []
    for member in package_members:
        arguments = {**ARGS, "connection_id": member.connection_ids[0]}

        async def one_child(arguments: dict[str, Any] = arguments) -> None:
            await run(context, arguments)

        alone.append(statistics.median(await timed(max(5, calls // 2), one_child)))
    slowest = max(alone)

    async def page_one() -> None:
        assert len((await run(context, ARGS))["results"]) == 25

    cursor = (await run(context, ARGS))["data"]["next_cursor"]

    async def page_two() -> None:
        assert len((await run(context, {**ARGS, "cursor": cursor}))["results"]) == 25

    print(
        f"{label}: {len(package_members)} children; each child alone p50 (ms): "
        + " ".join(f"{a:.1f}" for a in alone)
    )
    print(f"  slowest child alone (baseline)  p50 {slowest:7.2f}")
    for name, once in (("package page 1", page_one), ("package page 2 (cursor)", page_two)):
        samples = await timed(calls, once)
        p50, p90 = statistics.median(samples), sorted(samples)[int(0.9 * (len(samples) - 1))]
        verdict = "ok" if p50 <= TARGET * slowest else "OVER TARGET"
        print(
            f"  {name:<31} p50 {p50:7.2f}  p90 {p90:7.2f}  x{p50 / slowest:.3f} of the slowest child ({verdict}, target x{TARGET})"
        )


async def main(calls: int, delay_ms: float, count: int) -> None:
    fakes = children(count, delay_ms / 1000)
    runner, url = await serve_rs(fakes)
    try:
        async with RsClient(url) as client:
            readers = [client.bind(f"bench-token-{n}") for n in range(count)]
            await measure("http (one RS on 127.0.0.1, pooled RsClient)", members(fakes, readers), calls)
    finally:
        await runner.cleanup()
    await measure("memory (FakeRs, no socket)", members(fakes, fakes), calls)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=40)
    parser.add_argument("--delay-ms", type=float, default=50.0)
    parser.add_argument("--children", type=int, default=8)
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.delay_ms, options.children))
