"""How long a real ``pdpp-gateway stdio`` takes to answer one very long stdin line.

Starts the sandbox RS in this process, caches a client grant, spawns the stdio server (this
tree, and ``--against DIR`` another checkout's, in the same run), opens the session, then sends a
``tools/call`` whose arguments hold a string of ``--mb`` megabytes and times the answer (the
tool refuses the argument; what is measured is reading and parsing the line), after a first
call and a 1 KB line of the same shape have warmed the server. A 1 KB line is timed the same
way as the baseline. With ``--deep`` the argument is arrays nested as deep as the size allows (25 million for 50 MB),
past the SDK parser's depth: what is measured is the refusal and reading the id back.

    .venv/bin/python benchmarks/stdio_long_line.py --mb 50 [--deep] [--against /path/to/checkout]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from pdpp_gateway.local.credentials import write_credential  # noqa: E402
from pdpp_gateway.sandbox.runner import start_sandbox  # noqa: E402

OPEN = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    b'"capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}\n'
    b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
)


def call_line(request_id: int, size: int, *, deep: bool = False) -> bytes:
    arguments = {"stream": "messages", "filter": {"subject": "" if deep else "x" * size}}
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call"}
    message["params"] = {"name": "query_records", "arguments": arguments}
    line = json.dumps(message).encode()
    if deep:
        line = line.replace(b'""', b"[" * (size // 2) + b"]" * (size // 2))
    return line + b"\n"


async def answer_to(process: asyncio.subprocess.Process, request_id: int) -> None:
    assert process.stdout is not None
    while True:
        line = await asyncio.wait_for(process.stdout.readline(), 300)
        if not line:
            raise RuntimeError("the gateway closed stdout")
        if json.loads(line).get("id") == request_id:
            return


async def measure(tree: Path, url: str, cache: str, sizes: list[int], *, deep: bool) -> list[float]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "pdpp_gateway", "stdio", "--provider-url", url, "--cache-root", cache),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        env={"PYTHONPATH": str(tree), "PATH": "/usr/bin:/bin"},
        cwd=tree,
        limit=1 << 24,
    )
    assert process.stdin is not None
    process.stdin.write(OPEN + call_line(1, 16))
    await answer_to(process, 0)
    await answer_to(process, 1)  # warm: the SDK has loaded and served a call
    took = []
    for request_id, size in enumerate(sizes, start=2):
        line = call_line(request_id, size, deep=deep)
        started = time.perf_counter()
        process.stdin.write(line)
        await process.stdin.drain()
        await answer_to(process, request_id)
        took.append(time.perf_counter() - started)
    process.stdin.close()
    await process.wait()
    return took


async def main(args: argparse.Namespace, trees: list[tuple[str, Path]]) -> None:
    sizes = [1024, 1024, args.mb * 1024 * 1024]  # the first 1 KB line of its shape warms the path
    async with start_sandbox() as sandbox:
        with tempfile.TemporaryDirectory() as cache:
            write_credential(Path(cache), sandbox.url, sandbox.tokens["client_broad"])
            for name, tree in trees:
                shape = "deep " if args.deep else ""
                try:
                    _, small, large = await measure(tree, sandbox.url, cache, sizes, deep=args.deep)
                except RuntimeError as ended:  # the session died on a line: that is the result
                    print(f"{name}: {ended} on a {shape}line; no answer")
                    continue
                print(
                    f"{name}: 1 KB {shape}line {small * 1000:.1f} ms; {args.mb} MB {shape}line {large:.2f} s "
                    f"({large / small:.0f} x the 1 KB line)"
                )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--deep", action="store_true", help="nested arrays instead of a long string")
    parser.add_argument("--against", help="another checkout of pdpp-gateway, measured in the same run")
    parsed = parser.parse_args()
    against = [("against", Path(parsed.against).resolve())] if parsed.against else []
    asyncio.run(main(parsed, [("this tree", ROOT), *against]))
