"""What unauthenticated request bodies cost the hosted gateway's memory.

Run: ``.venv/bin/python benchmarks/unauth_body_bench.py [--tree DIR]``

Starts the sandbox RS and ``pdpp-gateway serve`` (introspection on, one worker) as
processes; ``--tree`` runs the gateway from another checkout of this repository (for a
before/after comparison: ``git worktree add /tmp/old <commit>``), else from this one.
Then, for each scenario (in this order, on one gateway process), sends the requests concurrently and samples the gateway's RSS
every 5 ms:

- ``unauth 8 x 2.3 MB``: eight POSTs of a 2.3 MB JSON body with no bearer;
- ``unauth 10 gzip``: ten POSTs of a 64 KB gzip body that inflates to 3.9 MB (under the
  4 MiB cap), ``Content-Encoding: gzip``, no bearer;
- ``client 8 x 2.3 MB``: the baseline, eight POSTs of the same body with a valid client
  bearer (a body the gateway must read and parse).

Prints, per scenario: the status codes, RSS before, the peak while answering, and the
growth as a ratio of the baseline scenario's growth. Not a timed test.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
from collections import Counter
from pathlib import Path

import aiohttp
from gateway_bench import rss_mib, running_gateway, running_sandbox

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "sbx_client_broad_7c1e94b2"  # sandbox fixture material
PAD = 2_300_000
BODY = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"x" * PAD + b'"}}'
BOMB = gzip.compress(b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"' + b"y" * 3_900_000 + b'"}}')
BASE = {"Accept": "application/json", "Content-Type": "application/json"}


async def scenario(
    url: str, pid: int, count: int, body: bytes, headers: dict[str, str]
) -> tuple[Counter[int], float, float]:
    before = rss_mib(pid)
    peak = before
    done = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, rss_mib(pid))
            await asyncio.sleep(0.005)

    async def post(http: aiohttp.ClientSession) -> int:
        try:
            async with http.post(url, data=body, headers=headers) as response:
                await response.read()
                return response.status
        except aiohttp.ClientError:
            return 0  # the server closed while the body was still being sent

    sampler = asyncio.create_task(sample())
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=count, force_close=True)) as http:
        statuses = Counter(await asyncio.gather(*(post(http) for _ in range(count))))
    await asyncio.sleep(0.2)
    done.set()
    await sampler
    return statuses, before, peak


async def main(tree: Path) -> None:
    # no newer flags: --tree may be an older checkout
    async with running_sandbox() as rs_url, running_gateway(rs_url, tree=tree) as (gw_url, gateway):
        print(f"gateway from {tree}; RSS after start {rss_mib(gateway.pid):.1f} MiB")
        # unauthenticated first: memory a process took is rarely given back, so the
        # baseline (bodies that must be read) runs last and cannot hide their cost
        cases = [
            ("unauth 8 x 2.3 MB", 8, BODY, BASE),
            ("unauth 10 gzip (64 KB -> 3.9 MB)", 10, BOMB, {**BASE, "Content-Encoding": "gzip"}),
            ("client 8 x 2.3 MB (baseline)", 8, BODY, {**BASE, "Authorization": f"Bearer {TOKEN}"}),
        ]
        results = []
        for name, count, body, headers in cases:
            statuses, before, peak = await scenario(gw_url, gateway.pid, count, body, headers)
            results.append((name, statuses, before, peak))
        baseline_growth = max(results[-1][3] - results[-1][2], 0.1)
        for name, statuses, before, peak in results:
            shown = ", ".join(f"{status} x{n}" for status, n in sorted(statuses.items()))
            print(
                f"{name:34} statuses [{shown}]  RSS {before:6.1f} -> peak {peak:6.1f} MiB "
                f"(+{peak - before:5.1f}; {(peak - before) / baseline_growth:4.2f}x the baseline's growth)"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tree", type=Path, default=ROOT, help="checkout whose gateway to run")
    options = parser.parse_args()
    asyncio.run(main(options.tree.resolve()))
