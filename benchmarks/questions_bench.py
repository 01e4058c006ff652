"""Questions in a person's words: how often the first search finds the record that answers them.

Runs every question of ``benchmarks/questions.json`` through the gateway's own ``search`` tool on
a sandbox RS (in this process), twice in one run: lexical only (``mode: "lexical"``, the RS's
plain search, the baseline) and as a model calls it (no ``mode``: lexical, then meaning-based
search after an empty lexical page). Prints, for each, how many questions find their record in
the first search, how many among the first five hits, how many got no hit at all, and the RS
reads spent, then the questions the new behaviour still misses.

    .venv/bin/python benchmarks/questions_bench.py
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from middleware import ToolCall  # noqa: E402
from pdpp_gateway.context import GatewayContext  # noqa: E402
from pdpp_gateway.rs.client import RsClient  # noqa: E402
from pdpp_gateway.sandbox.runner import start_sandbox  # noqa: E402
from pdpp_gateway.tools.pipeline import build_pipeline  # noqa: E402

QUESTIONS = Path(__file__).resolve().parent / "questions.json"


def questions() -> list[dict[str, str]]:
    loaded: list[dict[str, str]] = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    return loaded


def answers(hit: dict[str, Any], item: dict[str, str]) -> bool:
    """Whether a search hit is the record that answers the question."""
    handle = str(hit.get("id", ""))
    if handle.split("/", 1)[-1].split(":", 1)[0] != item["stream"]:
        return False
    if "id" in item:
        return handle.endswith(":" + item["id"])
    if "text" in item:
        return item["text"].lower() in json.dumps(hit).lower()
    return item["title"].lower() in str(hit.get("title", "")).lower()


async def run(sandbox: Any, *, lexical_only: bool) -> list[tuple[dict[str, str], int | None, int, int]]:
    """(question, rank of its record or None, hits, RS reads) for each question."""
    pipeline = build_pipeline()
    rows = []
    async with RsClient(sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(sandbox.tokens["client_broad"]), sandbox.url)
        for item in questions():
            sandbox.reset_calls()
            arguments = {"query": item["q"], **({"mode": "lexical"} if lexical_only else {})}
            result = await pipeline(ToolCall("search", arguments, context))
            hits = [h for h in result.structured.get("results") or () if isinstance(h, dict)]
            rank = next((n for n, hit in enumerate(hits) if answers(hit, item)), None)
            rows.append((item, rank, len(hits), len(sandbox.calls)))
    return rows


async def main() -> None:
    async with start_sandbox() as sandbox:
        arms = {
            "lexical only (baseline)": await run(sandbox, lexical_only=True),
            "as a model calls it": await run(sandbox, lexical_only=False),
        }
    total = len(questions())
    print(f"{total} questions in a person's words (benchmarks/questions.json), sandbox RS")
    for name, rows in arms.items():
        found = sum(rank is not None for _, rank, _, _ in rows)
        top5 = sum(rank is not None and rank < 5 for _, rank, _, _ in rows)
        empty = sum(hits == 0 for _, _, hits, _ in rows)
        reads = sum(r for _, _, _, r in rows)
        print(
            f"  {name:<24} record in the first search {found:2d}/{total}, in the first five hits "
            f"{top5:2d}/{total}, no hit at all {empty:2d}/{total}, RS reads {reads} ({reads / total:.2f} per question)"
        )
    missed = [item["q"] for item, rank, _, _ in arms["as a model calls it"] if rank is None]
    for question in missed:
        print(f"  still missed: {question}")


if __name__ == "__main__":
    asyncio.run(main())
