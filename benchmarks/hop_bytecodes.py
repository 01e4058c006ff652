"""What one hosted ``tools/call`` runs in Python, part by part, beside the bare hop: bytecodes counted, not sampled.

Run: ``.venv/bin/python benchmarks/hop_bytecodes.py [--calls N] [--against CHECKOUT ...]``

``hop_instructions.py`` counts a call's machine instructions exactly but cannot say whose
they are; ``hop_profile.py`` says whose, but by sampling, which moves by a few µs a part
between runs. This counts, exactly, the Python bytecodes each part of the hop executes:
each server (the bare hop, this tree's ``serve`` and each ``--against`` checkout's, in
front of one sandbox RS, introspection on, as ``gateway_bench.py`` runs it) starts under
this script's ``--serve`` wrapper, answers 300 warm-up calls untraced, then counts every
bytecode its main thread executes (``sys.settrace`` with opcode events) for ``N``
sequential ``query_records`` calls. Counts repeat within a few bytecodes a call for the
same code (the process's own timers, such as a cache's expiry, may fall in the window).

Prints bytecodes per call, in total and by where the code lives: each gateway package
(``pdpp_gateway/render``, ``pdpp_gateway/hosted``, ..., ``mcp_gateway_middleware``), each third-party
package (``aiohttp``, ``prometheus_client``, ...), and the standard library by module
(``asyncio/timeouts.py``, ...); ``<string>`` is code compiled at run time (dataclasses'
``__init__``). A bytecode is not a unit of time: C work called from one (orjson, a
regular expression) counts once, and the same bytecode costs more in a process whose
caches hold more; use it to see where a change moved work, and ``gateway_bench.py`` to
see what it bought.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import runpy
import signal
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import aiohttp
from gateway_bench import ROOT, WARM_UP, free_port, mcp_call, running_sandbox, serve_args, wait_up

SELF = ROOT / "benchmarks" / "hop_bytecodes.py"
Counts = collections.Counter[tuple[str, int, str]]  # (file, first line, function) -> bytecodes


def serve_counted(out: Path, target: list[str]) -> None:
    """Run ``target`` (``-m MODULE ARGS`` or ``SCRIPT ARGS``) in this process: SIGUSR1 starts
    counting the main thread's bytecodes per code object, SIGUSR2 stops and writes them to ``out``."""
    counts: Counts = collections.Counter()

    def trace(frame: types.FrameType, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        code = frame.f_code
        key = (code.co_filename, code.co_firstlineno, code.co_name)

        def each(frame: types.FrameType, event: str, arg: Any) -> Any:
            if event == "opcode":
                counts[key] += 1
            return each

        return each

    def start(*_: object) -> None:
        sys.settrace(trace)

    def stop(*_: object) -> None:
        sys.settrace(None)
        written = out.with_suffix(".partial")  # renamed whole: the driver never reads half a file
        written.write_text(json.dumps([[*key, count] for key, count in counts.items()]))
        written.replace(out)

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    if target[0] == "-m":
        sys.argv = [target[1], *target[2:]]
        runpy.run_module(target[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = target
        runpy.run_path(target[0], run_name="__main__")


def part_of(file: str) -> str:
    """Where the code in ``file`` lives (see the module docstring)."""
    for package in ("pdpp_gateway", "mcp_gateway_middleware"):
        marker = f"/{package}/"
        if marker in file:
            rest = file.rsplit(marker, 1)[1].split("/")
            return (
                package if package == "mcp_gateway_middleware" or len(rest) == 1 else f"{package}/{rest[0]}"
            )
    if "site-packages/" in file:
        return file.split("site-packages/", 1)[1].split("/", 1)[0]
    if "/benchmarks/" in file:
        return "the bare hop's handler"
    stdlib = file.split("/lib/python3", 1)
    return "stdlib " + stdlib[1].split("/", 1)[1] if len(stdlib) == 2 else file


async def per_call(
    target: list[str], tree: Path, port: int, n: int, scratch: Path
) -> collections.Counter[str]:
    """Bytecodes per ``tools/call`` of the server ``target`` starts on ``port``, by part."""
    out = scratch / f"bytecodes.{port}.json"
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(SELF), "--serve", str(out), *target,
        cwd=tree,
        env={**os.environ, "PYTHONPATH": str(tree)},
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        await wait_up(url.replace("/mcp", "/healthz"))
        async with aiohttp.ClientSession() as http:
            once = mcp_call(http, url)
            for _ in range(WARM_UP):
                await once()
            child.send_signal(signal.SIGUSR1)
            await asyncio.sleep(0.5)  # the handler runs between two bytecodes of the idle loop
            for _ in range(n):
                await once()
            child.send_signal(signal.SIGUSR2)
            for _ in range(300):
                if out.exists():
                    break
                await asyncio.sleep(0.1)
    finally:
        child.terminate()
        await child.wait()
    parts: collections.Counter[str] = collections.Counter()
    for file, _, _, count in json.loads(out.read_text()):
        parts[part_of(file)] += count
    return collections.Counter({part: round(count / n) for part, count in parts.items()})


async def main(n: int, baselines: list[Path]) -> None:
    arms: dict[str, collections.Counter[str]] = {}
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        async with running_sandbox() as rs_url:
            port = free_port()
            bare = [str(ROOT / "benchmarks" / "bare_hop.py"), rs_url, str(port)]
            arms["bare hop"] = await per_call(bare, ROOT, port, n, scratch)
            for name, tree in [("this tree", ROOT), *((str(path), path) for path in baselines)]:
                port = free_port()
                gateway = ["-m", "pdpp_gateway", *serve_args(rs_url, port, "--rate-limit", "0")]
                arms[name] = await per_call(gateway, tree, port, n, scratch)
    print(f"Python bytecodes per query_records call ({n} calls after {WARM_UP} of warm-up, main thread)")
    names = list(arms)
    print(f"{'':40}" + "".join(f"{name[-16:]:>18}" for name in names))
    print(f"{'total':40}" + "".join(f"{sum(arms[name].values()):>18,}" for name in names))
    everything = collections.Counter[str]()
    for counts in arms.values():
        everything.update(counts)
    for part, _ in everything.most_common():
        if max(arms[name][part] for name in names) >= 10:
            cells = (f"{arms[name][part]:,}" if arms[name][part] else "-" for name in names)
            print(f"{part[:40]:40}" + "".join(f"{cell:>18}" for cell in cells))


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--serve":
        serve_counted(Path(sys.argv[2]), sys.argv[3:])
        sys.exit(0)
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--against", type=Path, action="append", default=[], metavar="CHECKOUT")
    options = parser.parse_args()
    asyncio.run(main(options.calls, options.against))
