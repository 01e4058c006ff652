"""Whether a real caller still gets in while one client floods the hosted door with sockets.

Starts the sandbox RS and ``pdpp-gateway serve`` (default settings) as processes, limits
the gateway to ``--fd-limit`` descriptors (``prlimit``, as a small container would), then:

1. baseline: ``--calls`` ``tools/list`` calls, each on a fresh connection, and as many
   ``GET /healthz``;
2. flood: one client opens ``--idle`` silent sockets and ``--slow`` sockets that send
   half a request head and stop (more than the descriptor limit in all);
3. the same calls and probes again, with the flood still held.

Prints, per tree, how many calls and probes were answered before and during the flood,
their median time, and the gateway's ``pdpp_gateway_connections_closed`` counters.
``--against DIR`` runs another checkout the same way in the same run (``git worktree add``
or ``git archive <commit> | tar -x -C DIR``). Not a timed test.

    .venv/bin/python benchmarks/connection_flood.py [--idle 1126 --slow 200] [--against DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import resource
import statistics
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
from gateway_bench import ROOT, running_gateway, running_sandbox

TOKEN = "sbx_client_broad_7c1e94b2"  # sandbox fixture material
LIST = b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}'
HEADERS = {
    "Authorization": f"Bearer {TOKEN}",
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}
Sockets = list[asyncio.StreamWriter]


async def once(url: str, *, call: bool) -> float | None:
    """One request on a fresh connection: its time in ms, or None when it was not answered."""
    started = time.perf_counter()
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http:
            if call:
                async with http.post(url, data=LIST, headers=HEADERS) as response:
                    await response.read()
            else:
                async with http.get(url.replace("/mcp", "/healthz")) as response:
                    await response.read()
    except (aiohttp.ClientError, TimeoutError):
        return None
    return (time.perf_counter() - started) * 1000 if response.status == 200 else None


async def round_of(url: str, count: int) -> str:
    calls = [await once(url, call=True) for _ in range(count)]
    probes = [await once(url, call=False) for _ in range(count)]
    answered = [ms for ms in calls if ms is not None]
    healthy = sum(ms is not None for ms in probes)
    median = f"{statistics.median(answered):.1f} ms" if answered else "-"
    return f"calls {len(answered)}/{count} answered (p50 {median}), /healthz {healthy}/{count}"


async def flood(port: int, idle: int, slow: int) -> tuple[Sockets, int]:
    """The client's sockets, and how many it could not open (refused or reset)."""
    held: Sockets = []
    failed = 0
    for n in range(idle + slow):
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), 5)
            if n >= idle:
                writer.write(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl")
            held.append(writer)
        except (OSError, TimeoutError):
            failed += 1
    return held, failed


async def closed_counters(url: str) -> str:
    with contextlib.suppress(aiohttp.ClientError, TimeoutError):
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as http,
            http.get(url.replace("/mcp", "/metrics")) as response,
        ):
            text = await response.text()
            found = [
                line for line in text.splitlines() if line.startswith("pdpp_gateway_connections_closed_total")
            ]
            return "; ".join(line.split("{")[1].replace('"} ', "=").replace('reason="', "") for line in found)
    return "unavailable"


@contextlib.asynccontextmanager
async def limited_gateway(rs_url: str, tree: Path, fd_limit: int) -> AsyncIterator[str]:
    """The gateway started with ``fd_limit`` descriptors (inherited from this process, whose
    own limit is restored once the gateway runs)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, hard))
    try:
        gateway = running_gateway(rs_url, tree=tree)
        url, _ = await gateway.__aenter__()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        yield url
    finally:
        await gateway.__aexit__(None, None, None)


async def measure(name: str, tree: Path, rs_url: str, args: argparse.Namespace) -> None:
    async with limited_gateway(rs_url, tree, args.fd_limit) as url:
        print(f"{name}: before the flood: {await round_of(url, args.calls)}")
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        held, failed = await flood(port, args.idle, args.slow)
        print(f"{name}: flood of {args.idle} silent + {args.slow} slow-header sockets ({failed} not opened)")
        print(f"{name}: during the flood: {await round_of(url, args.calls)}")
        print(f"{name}: connections closed by the gateway: {await closed_counters(url) or 'none counted'}")
        for writer in held:
            writer.close()


async def main(args: argparse.Namespace, trees: list[tuple[str, Path]]) -> None:
    async with running_sandbox() as rs_url:
        for name, tree in trees:
            await measure(name, tree, rs_url, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fd-limit", type=int, default=1024)
    parser.add_argument("--idle", type=int, default=1126)
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--calls", type=int, default=16)
    parser.add_argument("--against", help="another checkout, measured the same way in the same run")
    parsed = parser.parse_args()
    against = [("against", Path(parsed.against).resolve())] if parsed.against else []
    asyncio.run(main(parsed, [("this tree", ROOT), *against]))
