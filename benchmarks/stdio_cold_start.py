"""stdio cold start: from spawn to the ``tools/list`` answer, beside baselines measured in the same run.

Run: ``.venv/bin/python benchmarks/stdio_cold_start.py [--spawns N] [--compare-with PATH] [--package]``

Starts the sandbox RS (``pdpp-gateway sandbox``) and caches a client credential for it,
then spawns, N times each and interleaved (so a load swing on the machine hits every
row alike), one process after another:

- ``python -c pass``: the interpreter's own start, the floor;
- ``python -c "import pdpp_gateway.stdio"``: the gateway's import with the SDK, what
  every start paid before early answers;
- ``pdpp-gateway stdio`` in the handshake era (``initialize``, its answer, then
  ``notifications/initialized`` + ``tools/list``) and in the 2026-07-28 era
  (``server/discover``, its answer, then ``tools/list``), as a client sends them: each
  row is spawn → the ``tools/list`` answer read;
- the same with ``PDPP_STDIO_EARLY_ANSWERS=0`` (every answer from the SDK);
- ``... -> first tools/call``: spawn → the answer of a first ``schema`` call, sent right
  after the ``tools/list`` answer in each era, or with the whole opening in one write
  ("all at once", as a script or a resumed agent sends it), and that last one with
  every answer from the SDK;
- with ``--compare-with PATH``: the handshake and 2026 rows for the checkout at PATH
  (e.g. the main branch before this change), same interpreter, same RS;
- with ``--package``: the handshake and first-call rows for a local package of two cached
  grants (the same RS under ``127.0.0.1`` and ``localhost``), each checked at start.

Prints the median and p90 of each row, in ms, and its ratio to ``python -c pass``; then
the resident memory of one stdio process after its first tool answer and after 1,000
more calls, with early answers and with the SDK answering everything.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOKEN = "sbx_client_broad_7c1e94b2"  # sandbox fixture material
PACKAGE_TOKENS = ("sbx_client_work_mail_7c1e94b2", "sbx_client_chat_7c1e94b2")  # two package children
ENVELOPE = {
    "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
CALL = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "schema", "arguments": {}}}
# Each exchange: the frames sent together, then the id whose answer is awaited.
HANDSHAKE = [([INITIALIZE], 1), ([INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}], 2)]
MODERN = [
    ([{"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": ENVELOPE}], 1),
    ([{"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": ENVELOPE}], 2),
]
WITH_CALL = [*HANDSHAKE, ([CALL], 3)]
MODERN_CALL = {**CALL, "params": {**CALL["params"], **ENVELOPE}}
MODERN_WITH_CALL = [*MODERN, ([MODERN_CALL], 3)]
# As a script or a resumed agent sends them: the whole opening and the call in one write.
AT_ONCE = [([INITIALIZE, INITIALIZED, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, CALL], 3)]
MEMORY_CALLS = 1000


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def sandbox() -> Iterator[str]:
    port = free_port()
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "pdpp_gateway", "sandbox", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/.well-known/oauth-protected-resource", timeout=2):  # noqa: S310
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        yield url
    finally:
        child.terminate()
        child.wait()


def read_answer(stdout: int, want: int, buffer: bytearray) -> None:
    """Read stdout until the answer with id ``want`` has arrived whole."""
    deadline = time.monotonic() + 30
    while True:
        while b"\n" in buffer:
            line, _, rest = bytes(buffer).partition(b"\n")
            buffer[:] = rest
            if json.loads(line).get("id") == want:
                return
        ready, _, _ = select.select([stdout], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(stdout, 1 << 16) if ready else b""
        if not chunk:
            raise RuntimeError(f"no answer with id {want}")
        buffer.extend(chunk)


def session(
    command: list[str],
    env: dict[str, str],
    exchanges: list[tuple[list[dict[str, Any]], int]],
    cwd: Path = ROOT,
) -> float:
    """ms from spawn to the last exchange's answer; the process is then closed and awaited.

    ``cwd`` is the checkout whose gateway runs (``-m`` puts the working directory first on the path).
    """
    started = time.perf_counter()
    child = subprocess.Popen(  # noqa: S603 - our own interpreter
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )
    assert child.stdin is not None
    assert child.stdout is not None
    buffer = bytearray()
    try:
        for frames, want in exchanges:
            child.stdin.write(b"".join(json.dumps(frame).encode() + b"\n" for frame in frames))
            child.stdin.flush()
            read_answer(child.stdout.fileno(), want, buffer)
        elapsed = (time.perf_counter() - started) * 1000
    finally:
        child.stdin.close()
        try:
            child.wait(timeout=30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        child.stdout.close()
    return elapsed


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def memory(command: list[str], env: dict[str, str]) -> tuple[int, int]:
    """RSS (KiB) of a stdio process after its first tool answer, and after MEMORY_CALLS more."""
    child = subprocess.Popen(  # noqa: S603 - our own interpreter
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=ROOT
    )
    assert child.stdin is not None
    assert child.stdout is not None
    buffer = bytearray()
    try:
        for frames, want in AT_ONCE:
            child.stdin.write(b"".join(json.dumps(frame).encode() + b"\n" for frame in frames))
            child.stdin.flush()
            read_answer(child.stdout.fileno(), want, buffer)
        first = rss_kb(child.pid)
        for index in range(MEMORY_CALLS):
            call = {**CALL, "id": 100 + index}
            child.stdin.write(json.dumps(call).encode() + b"\n")
            child.stdin.flush()
            read_answer(child.stdout.fileno(), 100 + index, buffer)
        return first, rss_kb(child.pid)
    finally:
        child.stdin.close()
        child.wait(timeout=30)
        child.stdout.close()


def spawn_to_exit(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)  # noqa: S603
    return (time.perf_counter() - started) * 1000


def main(spawns: int, compare_with: Path | None, package: bool = False) -> None:
    python = sys.executable
    with sandbox() as url, tempfile.TemporaryDirectory() as scratch:
        sys.path.insert(0, str(ROOT))
        from pdpp_gateway.local.credentials import write_credential

        cache = Path(scratch) / ".pdpp"
        write_credential(cache, url, TOKEN)
        base_env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT)}
        gateway = [python, "-m", "pdpp_gateway", "stdio", "--provider-url", url, "--cache-root", str(cache)]
        sdk_only = {**base_env, "PDPP_STDIO_EARLY_ANSWERS": "0"}
        rows: dict[str, Any] = {
            "python -c pass": lambda: spawn_to_exit([python, "-c", "pass"], base_env),
            "import pdpp_gateway.stdio (SDK)": lambda: spawn_to_exit(
                [python, "-c", "import pdpp_gateway.stdio"], base_env
            ),
            "handshake era -> tools/list": lambda: session(gateway, base_env, HANDSHAKE),
            "2026-07-28 era -> tools/list": lambda: session(gateway, base_env, MODERN),
            "handshake, SDK answers only": lambda: session(gateway, sdk_only, HANDSHAKE),
            "2026-07-28, SDK answers only": lambda: session(gateway, sdk_only, MODERN),
            "handshake -> first tools/call": lambda: session(gateway, base_env, WITH_CALL),
            "2026-07-28 -> first tools/call": lambda: session(gateway, base_env, MODERN_WITH_CALL),
            "all at once -> first tools/call": lambda: session(gateway, base_env, AT_ONCE),
            "first tools/call, SDK answers only": lambda: session(gateway, sdk_only, AT_ONCE),
        }
        if compare_with is not None:
            checkout = compare_with.resolve()
            other = {**base_env, "PYTHONPATH": str(checkout)}
            rows[f"handshake, {compare_with}"] = lambda: session(gateway, other, HANDSHAKE, checkout)
            rows[f"2026-07-28, {compare_with}"] = lambda: session(gateway, other, MODERN, checkout)
            rows[f"first tools/call, {compare_with}"] = lambda: session(gateway, other, AT_ONCE, checkout)
        if package:
            second = url.replace("127.0.0.1", "localhost")
            for provider, token in zip((url, second), PACKAGE_TOKENS, strict=True):
                write_credential(cache, provider, token)
            two = [*gateway[:5], url, "--provider-url", second, "--cache-root", str(cache)]
            rows["package of 2, handshake -> tools/list"] = lambda: session(two, base_env, HANDSHAKE)
            rows["package of 2 -> first tools/call"] = lambda: session(two, base_env, WITH_CALL)
        for measure in rows.values():  # warm the file cache and the byte-code caches
            measure()
        samples: dict[str, list[float]] = {name: [] for name in rows}
        for _ in range(spawns):
            for name, measure in rows.items():
                samples[name].append(measure())
        footprints = {
            "early path": memory(gateway, base_env),
            "SDK answers only": memory(gateway, sdk_only),
        }
    floor = statistics.median(samples["python -c pass"])
    print(f"stdio cold start over {spawns} spawns per row (ms; sandbox RS on loopback)")
    print(f"{'':36} {'median':>8} {'p90':>8}  vs python -c pass")
    for name, values in samples.items():
        ordered = sorted(values)
        p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
        median = statistics.median(values)
        print(f"{name:36} {median:8.1f} {p90:8.1f}  x{median / floor:.2f}")
    base_first, base_after = footprints["SDK answers only"]
    print(f"\nstdio RSS (MiB): after the first tools/call answer, and after {MEMORY_CALLS} more calls")
    for name, (first, after) in footprints.items():
        print(
            f"{name:36} {first / 1024:8.1f} {after / 1024:8.1f}  "
            f"x{first / base_first:.2f} / x{after / base_after:.2f} of SDK answers only"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--spawns", type=int, default=20)
    parser.add_argument(
        "--compare-with", "--against", type=Path, help="another checkout of the gateway to measure alike"
    )
    parser.add_argument("--package", action="store_true", help="also a local package of two cached grants")
    options = parser.parse_args()
    main(options.spawns, options.compare_with, options.package)
