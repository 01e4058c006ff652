"""What the text of a ``query_records`` answer costs: µs per ``render_records`` call.

Run: ``.venv/bin/python benchmarks/render_bench.py [--repeats R] [--calls N] [--against CHECKOUT]``

The sandbox RS runs in this process (``start_sandbox``); the pages are its real answers,
fetched once over HTTP as the ``query_records`` tool would forward them (the structured
envelope the renderer reads, ``merged_connections`` included where the tool adds it).
Each page is then rendered ``N`` times in a row, ``R`` times over, and the minimum is kept
(the least disturbed run on a shared machine). The baseline in the same run is
``orjson.dumps`` of the same page: the floor of writing the page out at all.

``--against CHECKOUT`` measures this tree and another checkout (e.g. a worktree of
``main``) each in fresh processes, alternating ``--rounds`` times, and prints the best
of each beside the other, with their ratio: what a change to the renderer bought.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

import aiohttp
import orjson

if __name__ == "__main__" and "PDPP_RENDER_BENCH_TREE" not in os.environ:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mcp_gateway_middleware import ToolCall, ToolResult

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.render.records import render_records
from pdpp_gateway.sandbox.config import TOKENS, SandboxConfig
from pdpp_gateway.sandbox.runner import start_sandbox
from pdpp_gateway.schema_view import stream_connections, unwrap_schema

ROOT = Path(__file__).resolve().parents[1]
# (label, token name, arguments): the first is the gateway benchmark's call (issue 14).
PAGES: list[tuple[str, str, dict[str, Any]]] = [
    ("messages 5, narrow grant (gateway_bench)", "client_narrow", {"stream": "messages", "limit": 5, "connection_id": "cin_mail_work"}),
    ("messages 5, every field", "client_work_mail", {"stream": "messages", "limit": 5}),
    ("messages 25, merged connections", "client_broad", {"stream": "messages", "limit": 25}),
    ("messages 10, expand bodies+attachments", "client_work_mail", {"stream": "messages", "limit": 10, "expand": ["message_bodies", "attachments"]}),
    ("message_bodies 5, long text", "client_work_mail", {"stream": "message_bodies", "limit": 5}),
    ("saved_tracks 20, blobs", "client_broad", {"stream": "saved_tracks", "limit": 20}),
    ("events 100, over budget", "client_broad", {"stream": "events", "limit": 100}),
]  # fmt: skip


def _query(arguments: dict[str, Any]) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for key, value in arguments.items():
        if key != "stream":
            pairs.extend((key, str(item)) for item in (value if isinstance(value, list) else [value]))
    return pairs


def rendered_for(arguments: dict[str, Any]) -> object:
    """What this tree's ``render_records`` takes: the parsed arguments (issue 38 on), or the
    call (before; it read only the call's name and arguments, never its context)."""
    if next(iter(inspect.signature(render_records).parameters)) == "args":
        from pdpp_gateway.tools.args import parse_query_records

        return parse_query_records(arguments)
    return ToolCall("query_records", arguments, cast(GatewayContext, None))


async def fetch_pages() -> list[tuple[str, Any, ToolResult]]:
    """The sandbox's answers to ``PAGES``, shaped as the ``query_records`` tool shapes them."""
    pages = []
    async with start_sandbox(SandboxConfig(bulk_records=300)) as sandbox, aiohttp.ClientSession() as http:
        for label, token, arguments in PAGES:
            headers = {"Authorization": f"Bearer {TOKENS[token]}"}
            stream = arguments["stream"]
            path = f"{sandbox.url}/v1/streams/{stream}/records"
            async with http.get(path, params=_query(arguments), headers=headers) as response:
                assert response.status == 200, (label, await response.text())
                body = await response.json()
            structured: dict[str, Any] = {"data": body, "provider_url": sandbox.url, "request_id": "req_b"}
            if "connection_id" not in arguments:
                params = {"view": "compact", "stream": stream}
                async with http.get(f"{sandbox.url}/v1/schema", params=params, headers=headers) as response:
                    connections = stream_connections(unwrap_schema(await response.json()), stream)
                if connections and len(connections) > 1:
                    structured["merged_connections"] = connections
            pages.append((label, rendered_for(arguments), ToolResult(structured)))
    return pages


def best_us(run: Callable[[], object], calls: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(calls):
            run()
        best = min(best, time.perf_counter() - started)
    return best / calls * 1e6


def measure(calls: int, repeats: int) -> list[dict[str, Any]]:
    rows = []
    for label, asked, result in asyncio.run(fetch_pages()):
        rows.append(
            {
                "page": label,
                "chars": len(render_records(asked, result)),
                "render_us": best_us(partial(render_records, asked, result), calls, repeats),
                "dumps_us": best_us(partial(orjson.dumps, result.structured), calls, repeats),
            }
        )
    return rows


def measure_tree(tree: Path, calls: int, repeats: int) -> list[dict[str, Any]]:
    """``measure`` in a fresh process importing ``pdpp_gateway`` from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PDPP_RENDER_BENCH_TREE": str(tree)}
    argv = [sys.executable, __file__, "--json", "--calls", str(calls), "--repeats", str(repeats)]
    done = subprocess.run(argv, env=env, check=True, stdout=subprocess.PIPE, text=True)  # noqa: S603 - this script
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def fastest(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per page, the fastest of several runs (each a list of rows in ``PAGES`` order)."""
    return [
        {
            **pages[0],
            "render_us": min(p["render_us"] for p in pages),
            "dumps_us": min(p["dumps_us"] for p in pages),
        }
        for pages in zip(*runs, strict=True)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout to measure in the same run")
    parser.add_argument(
        "--rounds", type=int, default=3, help="alternating runs of each tree (with --against)"
    )
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.json:
        print(json.dumps(measure(options.calls, options.repeats)))
        return
    other = None
    if options.against:
        # Both trees in fresh processes, alternating, so a machine whose load moves hits both.
        trees = {"ours": ROOT, "other": options.against.resolve()}
        runs: dict[str, list[list[dict[str, Any]]]] = {"ours": [], "other": []}
        for turn in range(options.rounds):
            for name in ("other", "ours") if turn % 2 == 0 else ("ours", "other"):
                runs[name].append(measure_tree(trees[name], options.calls, options.repeats))
        rows, other = fastest(runs["ours"]), fastest(runs["other"])
    else:
        rows = measure(options.calls, options.repeats)
    print(
        f"render_records, µs per call (min of {options.repeats} x {options.calls}"
        + (f", best of {options.rounds} alternating runs per tree" if other else "")
        + "); baseline: orjson.dumps of the page"
    )
    head = f"{'page':42} {'chars':>5} {'dumps':>7} {'render':>8} {'x dumps':>8}"
    print(head + (f" {'against':>8} {'ratio':>6}" if other else ""))
    for n, row in enumerate(rows):
        line = f"{row['page']:42} {row['chars']:5d} {row['dumps_us']:7.1f} {row['render_us']:8.1f} {row['render_us'] / row['dumps_us']:8.1f}"
        if other:
            theirs = other[n]
            assert theirs["page"] == row["page"]
            line += f" {theirs['render_us']:8.1f} {row['render_us'] / theirs['render_us']:6.2f}"
        print(line)
    if other:
        print(f"against = render_records of {options.against}; ratio = this tree / against (below 1: faster)")


if __name__ == "__main__":
    main()
