"""What one hosted ``tools/call`` costs in instructions, beside the bare hop: a figure that
does not move with the machine's load.

Run: ``.venv/bin/python benchmarks/hop_instructions.py [--calls N] [--against CHECKOUT ...]``

``gateway_bench.py`` measures the hop in milliseconds, which a shared 2-core machine
moves by 2x within the hour. This measures the CPU side of the same hop exactly: each
server runs under valgrind's callgrind with instrumentation off while it starts and
warms up (300 calls), then counts the user-space instructions its process executes for
``N`` sequential ``query_records`` calls (the call ``gateway_bench.py`` makes, against
the same sandbox RS), and prints instructions per call. Arms: this tree's ``serve``
(introspection on, as ``gateway_bench.py`` runs it), each ``--against`` checkout's, and
``bare_hop.py`` (the floor: the same hop through aiohttp doing nothing else), with each
gateway's ratio to the floor and to the first ``--against``.

Counts repeat within about 0.5% run to run, whatever else the machine does. They leave
out the kernel's share (socket reads and writes, about a fifth of a call's CPU time here,
the same for every arm) and count an instruction alike wherever it runs; the time a call
takes is still ``gateway_bench.py``'s to say. Requires ``valgrind`` (Debian's package).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
from gateway_bench import ROOT, WARM_UP, free_port, mcp_call, running_sandbox, serve_args, wait_up


async def calls(url: str, n: int) -> None:
    """``n`` of ``gateway_bench.py``'s measured call, one after another."""
    async with aiohttp.ClientSession() as http:
        once = mcp_call(http, url)
        for _ in range(n):
            await once()


async def control(*args: str) -> None:
    """``callgrind_control ARGS`` (turn counting on or off, write the counts)."""
    done = await asyncio.create_subprocess_exec(
        "callgrind_control", *args, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
    )
    if await done.wait() != 0:
        raise RuntimeError(f"callgrind_control {' '.join(args)} failed")


@contextlib.asynccontextmanager
async def under_callgrind(command: list[str], tree: Path, out: Path) -> AsyncIterator[int]:
    """``command`` (run from ``tree``) under callgrind, instrumentation off; yields its pid."""
    child = await asyncio.create_subprocess_exec(
        "valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}", *command,
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        yield child.pid
    finally:
        child.terminate()
        await child.wait()


def counted(out: Path) -> int:
    """The instructions callgrind counted, over every dump it wrote for ``out``."""
    total = 0
    for dump in out.parent.glob(out.name + ".*"):  # the dumps asked for: out.1, out.2, ...
        for line in dump.read_text().splitlines():
            if line.startswith("totals:"):
                total += int(line.split()[1])
                break
    return total


async def per_call(command: list[str], tree: Path, port: int, n: int, scratch: Path) -> float:
    """Instructions per ``tools/call`` of the server ``command`` starts on ``port``."""
    out = scratch / f"callgrind.{port}"
    url = f"http://127.0.0.1:{port}/mcp"
    async with under_callgrind(command, tree, out) as pid:
        await wait_up(url.replace("/mcp", "/healthz"), deadline_seconds=300)
        await calls(url, WARM_UP)
        await control("--instr=on", str(pid))
        await calls(url, n)
        await control("--instr=off", str(pid))
        await control("--dump", str(pid))
        for _ in range(600):  # the dump is written by the server's own process, shortly
            if counted(out):
                break
            await asyncio.sleep(0.1)
    return counted(out) / n


async def main(n: int, baselines: list[Path]) -> None:
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    python = sys.executable
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        async with running_sandbox() as rs_url:
            arms: dict[str, float] = {}
            port = free_port()
            bare = [python, str(ROOT / "benchmarks" / "bare_hop.py"), rs_url, str(port)]
            arms["bare hop"] = await per_call(bare, ROOT, port, n, scratch)
            for name, tree in [("this tree", ROOT), *((str(path), path) for path in baselines)]:
                port = free_port()
                gateway = [python, "-m", "pdpp_gateway", *serve_args(rs_url, port, "--rate-limit", "0")]
                arms[name] = await per_call(gateway, tree, port, n, scratch)
    floor = arms["bare hop"]
    first = str(baselines[0]) if baselines else None
    print(f"user-space instructions per query_records call (callgrind, {n} calls after {WARM_UP} of warm-up)")
    for name, count in arms.items():
        line = f"  {name:<40} {count / 1000:8.0f}k  x{count / floor:.2f} of the bare hop"
        if first is not None and name != first and name != "bare hop":
            line += f", x{count / arms[first]:.3f} of {first}"
        if name != "bare hop":
            line += f"; beyond the hop {(count - floor) / 1000:.0f}k"
        print(line)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--against", type=Path, action="append", default=[], metavar="CHECKOUT")
    options = parser.parse_args()
    asyncio.run(main(options.calls, [path.resolve() for path in options.against]))
