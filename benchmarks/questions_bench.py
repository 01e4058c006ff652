"""What a person pays for an answer: model turns, characters read and RS reads per question.

Plays a model that reads only text over every question of a question set (each in a person's
words, with the fact that answers it; ``benchmarks/questions.json`` unless ``--questions``):
one ``search`` as asked, then only calls the text spells out (the first ready ``fetch``,
``read_record_field`` or ``query_records`` call it has not made, newest text first; a
``search`` call only when no other is offered), at most three calls. A question is answered
at the first call whose text holds its fact (``<mark>`` tags and line breaks aside).

Whom a question is asked of: a set may name its grants (``"grants": {"single": token name,
"package": [token names]}``; by default the sandbox's ``client_broad`` and the package of the
Work mail and Acme Slack grants). Questions marked ``package`` ask the package, the rest the
single grant; a set with ``"ask": "both"`` asks every question both ways and reports each way
apart. A set split into ``dev`` and ``test`` (``benchmarks/questions_fresh.json``, frozen by
``split_questions.py``) is measured on ``--split dev`` while tuning; ``--split test`` is run
once per landed step, and it is the figure reported; ``benchmarks/questions_fresh2.json``, a second
held-out set over the same records, is not split: it is run whole, once per landed step, beside it.

Each arm runs in its own process against one sandbox RS (this tree's, in this process, over
real HTTP), which counts the RS reads of every question. ``--against DIR`` adds the gateway of
another checkout (e.g. this issue's start) as the baseline, in the same run.

    .venv/bin/python benchmarks/questions_bench.py [--questions SET] [--split dev|test] [--against DIR] [--rounds N]

Prints per arm (and per way of asking): questions whose fact is in the first answer's text,
within two calls, within three; the median and mean of characters read per answered question;
RS reads per question; the first search's p50 and p95 (milliseconds, each question's median
over ``--rounds`` passes); then the questions this tree still misses within two calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = Path(__file__).resolve()
QUESTIONS = SCRIPT.parent / "questions.json"
MAX_CALLS = 3
_CALL = re.compile(r"\b(fetch|read_record_field|query_records|search) (?=\{)")
_TAG = re.compile(r"</?mark>")
PACKAGE_TOKENS = ("client_work_mail", "client_chat")
SINGLE_TOKEN = "client_broad"


def questions(path: Path = QUESTIONS, split: str | None = None) -> list[dict[str, Any]]:
    """The questions to ask, in order: each once as marked (``package`` or not), or both ways
    for a set that asks so; only those of ``split`` when given."""
    loaded = json.loads(path.read_text(encoding="utf-8"))
    asked: list[dict[str, Any]] = []
    for item in loaded["questions"]:
        if split is not None and item.get("split") != split:
            continue
        if loaded.get("ask") == "both":
            asked.extend({**item, "package": way, "both_ways": True} for way in (True, False))
        else:
            asked.append(item)
    return asked


def grants(path: Path = QUESTIONS) -> tuple[str, tuple[str, ...]]:
    """The token names a set is asked of: its single grant and its package's members."""
    named = json.loads(path.read_text(encoding="utf-8")).get("grants") or {}
    return str(named.get("single", SINGLE_TOKEN)), tuple(named.get("package", PACKAGE_TOKENS))


def holds(text: str, fact: str) -> bool:
    """Whether a model reading ``text`` sees ``fact`` (marks, spacing and case aside)."""
    return " ".join(fact.casefold().split()) in " ".join(_TAG.sub("", text).casefold().split())


def spelled_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The ready calls a text spells out, in order: ``tool {json arguments}``."""
    decoder = json.JSONDecoder()
    found = []
    for match in _CALL.finditer(text):
        try:
            arguments, _ = decoder.raw_decode(text, match.end())
        except ValueError:
            continue
        if isinstance(arguments, dict):
            found.append((match.group(1), arguments))
    return found


def next_call(
    texts: Sequence[str], made: Sequence[tuple[str, dict[str, Any]]]
) -> tuple[str, dict[str, Any]] | None:
    """The call a text-only model makes next: the newest text's first ready read not yet made."""
    for reading in (True, False):
        for text in reversed(texts):
            for call in spelled_calls(text):
                if (call[0] != "search") == reading and call not in made:
                    return call
    return None


# --- one arm: a child process importing the gateway of one tree -------------------------


async def serve_arm(tree: Path, rs_url: str) -> None:
    """Answer questions read from stdin, one JSON line each, with this tree's gateway."""
    sys.path.insert(0, str(tree))
    from mcp_gateway_middleware import ToolCall

    from pdpp_gateway.caller import TokenKind
    from pdpp_gateway.context import GatewayContext, PackageMember
    from pdpp_gateway.rs.client import RsClient
    from pdpp_gateway.tools.pipeline import build_pipeline

    setup = json.loads(sys.stdin.readline())
    tokens, members = setup["tokens"], setup["members"]
    pipeline = build_pipeline()
    async with RsClient(rs_url) as rs:
        single = GatewayContext.for_client(rs.bind(tokens[setup["single"]]), rs_url)
        package = GatewayContext.for_package(
            [
                PackageMember(
                    rs=rs.bind(tokens[m["token"]]),
                    grant_id=m["grant_id"],
                    connection_ids=tuple(m["connection_ids"]),
                    streams=tuple(m["streams"]),
                    connector_key=m["connector_key"],
                )
                for m in members
            ],
            rs_url,
            TokenKind.CLIENT,
        )
        print("ready", flush=True)
        for line in sys.stdin:
            item = json.loads(line)
            context = package if item.get("package") else single
            texts: list[str] = []
            made: list[tuple[str, dict[str, Any]]] = []
            answered_at = None
            elapsed = 0.0
            call: tuple[str, dict[str, Any]] | None = ("search", {"query": item["q"]})
            while call is not None and len(made) < MAX_CALLS:
                made.append(call)
                started = time.perf_counter()
                result = await pipeline(ToolCall(call[0], call[1], context))
                if len(made) == 1:
                    elapsed = (time.perf_counter() - started) * 1000
                texts.append(result.text or "")
                if holds(texts[-1], item["fact"]):
                    answered_at = len(made)
                    break
                call = next_call(texts, made)
            print(
                json.dumps({"answered_at": answered_at, "texts": texts, "search_ms": elapsed}),
                flush=True,
            )


# --- the driver -----------------------------------------------------------------------


class Arm:
    def __init__(self, name: str, tree: Path) -> None:
        self.name, self.tree = name, tree
        self.process: asyncio.subprocess.Process | None = None

    async def start(self, rs_url: str, setup: Mapping[str, Any]) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(SCRIPT),
            "--arm",
            str(self.tree),
            "--rs",
            rs_url,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            cwd=str(self.tree),
        )
        await self._send(setup)
        ready = await self._line()
        if ready.strip() != "ready":
            raise RuntimeError(f"{self.name}: the arm did not start ({ready!r})")

    async def ask(self, item: Mapping[str, Any]) -> dict[str, Any]:
        await self._send(item)
        answer: dict[str, Any] = json.loads(await self._line())
        return answer

    async def stop(self) -> None:
        if self.process is not None and self.process.stdin is not None:
            self.process.stdin.close()
            await self.process.wait()

    async def _send(self, value: Mapping[str, Any]) -> None:
        assert self.process is not None
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(value).encode() + b"\n")
        await self.process.stdin.drain()

    async def _line(self) -> str:
        assert self.process is not None
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 120)
        if not line:
            raise RuntimeError(f"{self.name}: the arm ended")
        return line.decode()


def _setup(asked: Path = QUESTIONS) -> dict[str, Any]:
    from pdpp_gateway.sandbox.config import PRINCIPALS, TOKENS
    from pdpp_gateway.sandbox.manifests import CONNECTORS

    keys = {c.connection_id: k.key for k in CONNECTORS for c in k.connections}
    single, package = grants(asked)
    members = []
    for name in package:
        principal = PRINCIPALS[name]
        connections = sorted({cid for grant in principal.streams.values() for cid in grant.connections})
        members.append(
            {
                "token": name,
                "grant_id": principal.grant_id,
                "connection_ids": connections,
                "streams": sorted(principal.streams),
                "connector_key": keys[connections[0]],
            }
        )
    return {"tokens": dict(TOKENS), "members": members, "single": single}


async def measure(
    arms: Sequence[Arm],
    rounds: int = 1,
    show: str | None = None,
    asked: Path = QUESTIONS,
    split: str | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """Every question through every arm, RS reads counted by the sandbox; the search time is
    the median over ``rounds`` passes (answers and reads come from the first). The texts a
    model read for the questions containing ``show`` are printed as they come."""
    from pdpp_gateway.sandbox.runner import start_sandbox

    rows: dict[str, list[dict[str, Any]]] = {arm.name: [] for arm in arms}
    async with start_sandbox() as sandbox:
        for arm in arms:
            await arm.start(sandbox.url, _setup(asked))
        try:
            for item in questions(asked, split):
                for arm in arms:
                    times = []
                    first: dict[str, Any] = {}
                    for n in range(rounds):
                        sandbox.calls.clear()
                        answer = await arm.ask(item)
                        times.append(answer["search_ms"])
                        if n == 0:
                            first = {
                                **answer,
                                "reads": len(sandbox.calls),
                                "q": item["q"],
                                "package": bool(item.get("package")),
                                "both_ways": bool(item.get("both_ways")),
                            }
                            first["chars"] = [len(text) for text in first.pop("texts")]
                            if show and show in item["q"]:
                                print(
                                    f"--- {arm.name}: {item['q']}\n"
                                    + "\n--- next call\n".join(answer["texts"])
                                )
                    rows[arm.name].append({**first, "search_ms": statistics.median(times)})
        finally:
            for arm in arms:
                await arm.stop()
    return rows


def summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    total = len(rows)
    within = {
        n: sum(1 for r in rows if r["answered_at"] is not None and r["answered_at"] <= n) for n in (1, 2, 3)
    }
    read = [sum(r["chars"][: r["answered_at"]]) for r in rows if r["answered_at"] is not None]
    return {
        "questions": total,
        "first": within[1],
        "two": within[2],
        "three": within[3],
        "chars_median": statistics.median(read) if read else 0.0,
        "chars_mean": statistics.mean(read) if read else 0.0,
        "reads_per_question": sum(r["reads"] for r in rows) / total,
        "search_p50_ms": statistics.median(r["search_ms"] for r in rows),
        "search_p95_ms": _percentile([r["search_ms"] for r in rows], 0.95),
    }


def _percentile(values: Sequence[float], share: float) -> float:
    """The nearest-rank percentile of ``values``."""
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(share * len(ordered)) - 1))]


def _ways(rows: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """The rows by way of asking, when every question was asked both ways; else all as one."""
    if not rows or not all(row["both_ways"] for row in rows):
        return [("", list(rows))]
    return [
        ("as a package", [row for row in rows if row["package"]]),
        ("as one grant", [row for row in rows if not row["package"]]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--against", type=Path, help="a checkout whose gateway is the baseline")
    parser.add_argument("--rounds", type=int, default=3, help="passes for the search timing")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="the question set (JSON)")
    parser.add_argument("--split", choices=("dev", "test"), help="only the questions of this split")
    parser.add_argument("--show", metavar="WORDS", help="print the texts read for questions containing WORDS")
    parser.add_argument("--arm", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rs", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.arm is not None:
        asyncio.run(serve_arm(options.arm, options.rs))
        return
    sys.path.insert(0, str(ROOT))
    arms = [Arm("this tree", ROOT)]
    if options.against is not None:
        arms.append(Arm(f"baseline ({options.against})", options.against.resolve()))
    rows = asyncio.run(measure(arms, options.rounds, options.show, options.questions, options.split))
    asked = options.questions.resolve()
    shown = asked.relative_to(ROOT) if asked.is_relative_to(ROOT) else asked
    split = f", {options.split} split" if options.split else ""
    print(
        f"{len(questions(asked, options.split))} questions in a person's words ({shown}{split}), sandbox RS"
    )
    for name, arm_rows in rows.items():
        for way, way_rows in _ways(arm_rows):
            s = summary(way_rows)
            n = int(s["questions"])
            print(
                f"  {name}{' ' + way if way else ''}: fact in the first answer {int(s['first'])}/{n}, "
                f"within two calls {int(s['two'])}/{n}, within three {int(s['three'])}/{n}; characters "
                f"read per answered question median {s['chars_median']:.0f}, mean {s['chars_mean']:.0f}; "
                f"RS reads per question {s['reads_per_question']:.2f}; first search p50 "
                f"{s['search_p50_ms']:.1f} ms, p95 {s['search_p95_ms']:.1f} ms"
            )
    for row in rows["this tree"]:
        if row["answered_at"] is None or row["answered_at"] > 2:
            way = " (package)" if row["package"] else ""
            print(f"  this tree, not within two calls{way}: {row['q']}")


if __name__ == "__main__":
    main()
