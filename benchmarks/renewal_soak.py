"""A person's day, compressed: stdio sessions that outlive many short-lived access tokens.

Starts the sandbox RS in this process with short access tokens (``--ttl``, default 5 s, as the
issue asks; the PDPP reference issues 600 s), approves one grant per connector through its real
authorization server, then runs ``--sessions`` stdio gateways (``pdpp-gateway stdio``, real
subprocesses, the SDK's client) on the same credential cache for ``--seconds``, each sending a
``schema`` and a ``query_records`` call at once every ``--pause`` seconds. Prints the calls made,
the failed calls, the refresh-token exchanges the authorization server served, and that count
per token lifetime (1.0 is one renewal per expiry for all sessions together).

    .venv/bin/python benchmarks/renewal_soak.py --seconds 30 --ttl 5 --sessions 2
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pdpp_gateway.sandbox.config import SandboxConfig  # noqa: E402
from pdpp_gateway.sandbox.runner import start_sandbox  # noqa: E402
from tests.grants import approve, refreshes  # noqa: E402


async def session(params: StdioServerParameters, seconds: float, pause: float, tally: dict[str, int]) -> None:
    async with Client(params, cache=None) as client:  # type: ignore[arg-type]
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            results = await asyncio.gather(
                client.call_tool("schema", {}),
                client.call_tool("query_records", {"stream": "messages", "limit": 2}),
            )
            tally["calls"] += len(results)
            tally["failed"] += sum(1 for result in results if result.is_error)
            await asyncio.sleep(pause)


async def main(args: argparse.Namespace) -> None:
    async with start_sandbox(SandboxConfig(access_token_ttl=args.ttl)) as sandbox:
        with tempfile.TemporaryDirectory() as cache:
            for connector in args.connector:
                await approve(sandbox.url, Path(cache), connector)
            params = StdioServerParameters(
                command=sys.executable,
                args=["-m", "pdpp_gateway", "stdio", "--provider-url", sandbox.url, "--cache-root", cache],
                env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
            )
            tally = {"calls": 0, "failed": 0}
            started = time.monotonic()
            await asyncio.gather(
                *(session(params, args.seconds, args.pause, tally) for _ in range(args.sessions))
            )
            took = time.monotonic() - started
            renewals = refreshes(sandbox)
    expiries = took / args.ttl
    print(f"sessions={args.sessions} connectors={','.join(args.connector)} ttl={args.ttl}s run={took:.1f}s")
    print(f"calls={tally['calls']} failed={tally['failed']}")
    print(
        f"refreshes={renewals} token lifetimes={expiries:.1f} grants={len(args.connector)} "
        f"refreshes per grant per lifetime={renewals / len(args.connector) / expiries:.2f}"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--ttl", type=int, default=5)
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--pause", type=float, default=0.2)
    parser.add_argument("--connector", action="append", default=None)
    parsed = parser.parse_args()
    parsed.connector = parsed.connector or ["gmail", "github"]
    asyncio.run(main(parsed))
