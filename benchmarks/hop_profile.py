"""Where the hosted hop's time goes: a py-spy profile of one ``tools/call``, beside the bare hop's.

Run: ``.venv/bin/python benchmarks/hop_profile.py [--calls N] [--rate HZ]``

The sandbox RS, the hosted gateway (``serve``, introspection on, as ``gateway_bench.py``
runs it) and the floor (``bare_hop.py``) run as in ``gateway_bench.py``. For each server,
after a warm-up, ``py-spy record`` samples its Python stacks (idle ones too) while this
process makes ``N`` sequential ``query_records`` calls (the call ``gateway_bench.py``
measures). Each sample goes to one part of the hop by the frames above the event loop on
its stack, the first part in ``PARTS`` that any of them matches: the records text under
``render/``, the metrics, the RS read in aiohttp's client, aiohttp-retry's wrapper around
it, the gateway's RS client around that (``rs/``), the tool pipeline (``mcp_gateway_middleware/``
stages, ``tools/``), the hosted door (``hosted/`` and what it calls), and aiohttp's server
(reading the request, writing the answer). What a frame spends in C (orjson, the HTTP
parser, a socket write) counts for the Python frame that called it.

Prints, per server, each part's sampled time per call (its samples x the recording's
length over its sample count, over ``N``); the event loop's row is the rest of the call's
wall time as the load client saw it (waiting for the RS and the client, and uvloop's own C
work); then the call's wall time and the server's CPU time per call (``/proc``). A sample
is wall-clock time: a server that is runnable but not running (the other processes of the
hop share the machine's two cores) is counted where it stands, so a part can take longer
than its CPU. Sampling is statistical: parts under ~30 µs move by a few µs between runs.

Then, from ``N`` more calls per server made before py-spy attaches, where the whole call's
wall time goes across the three processes of the hop: each one's CPU time per call and its
time runnable but waiting for a core (the kernel's ``/proc/<pid>/task/*/schedstat``), for
the server, the sandbox RS and this load client. Requires ``py-spy`` (a dev dependency).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import NamedTuple

import aiohttp
from gateway_bench import (
    WARM_UP,
    bare_hop,
    cpu_seconds,
    free_port,
    mcp_call,
    running_gateway,
    sandbox_process,
    wait_up,
)

# (part, predicate on one frame's "function (file:line)" text); the first part any frame of
# a sample's stack matches takes the sample.
PARTS: list[tuple[str, Callable[[str], bool]]] = [
    ("records text (render/)", lambda f: "pdpp_gateway/render/" in f),
    ("metrics (hosted/metrics, prometheus_client)", lambda f: "hosted/metrics.py" in f or "prometheus_client/" in f),
    ("RS read: aiohttp's client", lambda f: "aiohttp/client" in f or "aiohttp/connector.py" in f),
    ("RS read: aiohttp-retry's wrapper", lambda f: "aiohttp_retry/" in f),
    ("RS read: the gateway's client (rs/)", lambda f: "pdpp_gateway/rs/" in f),
    ("tool pipeline (middleware/ stages, tools/)", lambda f: ("mcp_gateway_middleware/" in f and "mcp_gateway_middleware/http.py" not in f) or "pdpp_gateway/tools/" in f),
    ("hosted door (hosted/, middleware/http.py)", lambda f: ("pdpp_gateway/" in f and "hosted/http_server.py" not in f) or "mcp_gateway_middleware/http.py" in f),
    ("the bare hop's handler", lambda f: "bare_hop.py" in f),
    ("aiohttp's server (request in, answer out)", lambda f: "aiohttp/" in f or "hosted/http_server.py" in f),
]  # fmt: skip
REST = "event loop: waiting, and its own C work"
# The frames that run the event loop (the serve command's, or aiohttp's run_app); what the
# loop runs sits above the last of them, and only that is sorted into parts.
_LOOP_RUNNERS = ("asyncio/runners.py", "aiohttp/web.py")


def part_of(stack: list[str]) -> str:
    roots = [n for n, frame in enumerate(stack) if any(runner in frame for runner in _LOOP_RUNNERS)]
    if roots:
        stack = stack[roots[-1] + 1 :]
    for name, matches in PARTS:
        if any(matches(frame) for frame in stack):
            return name
    return REST


def parts(raw: Path) -> collections.Counter[str]:
    """Samples per part, from py-spy's raw (collapsed-stack) output."""
    counts: collections.Counter[str] = collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            counts[part_of(stack.split(";"))] += int(count)
    return counts


def scheduled_ns(pid: int) -> tuple[int, int]:
    """Nanoseconds a process's threads have run on a core and waited runnable for one, so far."""
    ran = waited = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            run_ns, wait_ns, _ = (task / "schedstat").read_text().split()
            ran, waited = ran + int(run_ns), waited + int(wait_ns)
    return ran, waited


class Accounts(NamedTuple):
    """Per call, in µs: the wall time the load client saw, and each process's (CPU, waiting for a core)."""

    wall_us: float
    per_process: dict[str, tuple[float, float]]


async def accounted(once: Callable[[], Awaitable[None]], pids: dict[str, int], calls: int) -> Accounts:
    """``calls`` calls, with each process's run and run-queue time over them (``scheduled_ns``)."""
    before, started = {name: scheduled_ns(pid) for name, pid in pids.items()}, time.perf_counter()
    for _ in range(calls):
        await once()
    wall, after = time.perf_counter() - started, {name: scheduled_ns(pid) for name, pid in pids.items()}
    return Accounts(
        wall / calls * 1e6,
        {
            name: (
                (after[name][0] - before[name][0]) / calls / 1e3,
                (after[name][1] - before[name][1]) / calls / 1e3,
            )
            for name in pids
        },
    )


class Profile(NamedTuple):
    """One server's sampled stacks over the measured calls, and the hop's processes' accounts."""

    samples: collections.Counter[str]  # per part
    seconds_per_sample: float  # the recording's length over its sample count
    wall_ms: float  # per call, as the load client saw it
    cpu_ms: float  # per call, the server's user + system time (/proc)
    accounts: Accounts  # from calls made without py-spy

    def part_us(self, part: str, calls: int) -> float:
        return self.samples[part] * self.seconds_per_sample / calls * 1e6


async def profiled(url: str, pid: int, rs_pid: int, calls: int, rate: int, out: Path) -> Profile:
    """``calls`` calls at ``url`` accounted for the server ``pid``, the RS and this load
    client (``accounted``), then ``calls`` more while py-spy samples the server (idle
    samples included, so the samples' count divides the recording's length evenly)."""
    async with aiohttp.ClientSession() as http:
        once = mcp_call(http, url)
        for _ in range(WARM_UP):
            await once()
        hop = {"server": pid, "sandbox RS": rs_pid, "load client": os.getpid()}
        accounts = await accounted(once, hop, calls)
        recording = time.perf_counter()
        spy = await asyncio.create_subprocess_exec(
            "py-spy", "record", "--pid", str(pid), "--rate", str(rate), "--format", "raw",
            "--output", str(out), "--nonblocking", "--idle",
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        await asyncio.sleep(1.0)  # attached
        before, started = cpu_seconds(pid), time.perf_counter()
        for _ in range(calls):
            await once()
        wall, spent = time.perf_counter() - started, cpu_seconds(pid) - before
        spy.send_signal(signal.SIGINT)
        await spy.wait()
        recorded = time.perf_counter() - recording
    samples = parts(out)
    return Profile(
        samples, recorded / max(1, sum(samples.values())), wall / calls * 1000, spent / calls * 1000, accounts
    )


def table(arms: dict[str, Profile], calls: int) -> None:
    """Each part's sampled time per call; the event loop's row is the rest of the call's wall
    time (its idle samples before and after the calls are not the calls')."""
    print(f"{'per call, µs':48}" + "".join(f"{arm:>14}" for arm in arms))
    for name, _ in PARTS:
        if any(profile.samples[name] for profile in arms.values()):
            cells = [
                f"{profile.part_us(name, calls):.0f}" if profile.samples[name] else "-"
                for profile in arms.values()
            ]
            print(f"{name:48}" + "".join(f"{cell:>14}" for cell in cells))
    rest = [p.wall_ms * 1000 - sum(p.part_us(name, calls) for name, _ in PARTS) for p in arms.values()]
    print(f"{REST:48}" + "".join(f"{us:>14.0f}" for us in rest))
    print(
        f"{'wall time of the call (load client)':48}"
        + "".join(f"{p.wall_ms * 1000:>14.0f}" for p in arms.values())
    )
    print(f"{'CPU of the server (/proc)':48}" + "".join(f"{p.cpu_ms * 1000:>14.0f}" for p in arms.values()))


def accounts_table(arms: dict[str, Profile]) -> None:
    """Where each call's wall time went across the hop's processes (calls made without py-spy)."""
    print(f"{'per call, µs (calls without py-spy)':48}" + "".join(f"{arm:>14}" for arm in arms))
    print(
        f"{'wall time of the call (load client)':48}"
        + "".join(f"{p.accounts.wall_us:>14.0f}" for p in arms.values())
    )
    for process in next(iter(arms.values())).accounts.per_process:
        for n, what in enumerate(("CPU", "waiting for a core")):
            cells = "".join(f"{p.accounts.per_process[process][n]:>14.0f}" for p in arms.values())
            print(f"{f'{process}: {what}':48}" + cells)


async def main(calls: int, rate: int) -> None:
    if shutil.which("py-spy") is None:
        sys.exit("py-spy is not on PATH: install the dev dependencies (pip install -e '.[dev]')")
    arms: dict[str, Profile] = {}
    with tempfile.TemporaryDirectory(prefix="hop-profile-") as scratch:
        async with sandbox_process() as (rs_url, rs):
            async with running_gateway(rs_url, "--rate-limit", "0") as (url, gateway):
                out = Path(scratch) / "gateway.txt"
                arms["gateway"] = await profiled(url, gateway.pid, rs.pid, calls, rate, out)
            port = free_port()
            async with bare_hop(rs_url, port) as bare:
                url = f"http://127.0.0.1:{port}/mcp"
                await wait_up(url.replace("/mcp", "/healthz"))
                out = Path(scratch) / "bare.txt"
                arms["bare hop"] = await profiled(url, bare.pid, rs.pid, calls, rate, out)
    print(
        f"py-spy at {rate} Hz, {calls} sequential query_records calls per server, load {os.getloadavg()[0]:.2f}"
    )
    table(arms, calls)
    print()
    accounts_table(arms)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=8000)
    parser.add_argument("--rate", type=int, default=1000, help="samples per second")
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.rate))
