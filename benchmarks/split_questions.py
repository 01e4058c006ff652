"""Freeze a question set's dev/test split: 60% dev to tune on, 40% test to report, by a fixed seed.

Each source's questions are shuffled by one seeded generator (``SEED``), in the order the
sources first appear, and the first 60% of each (rounded) are ``dev``, the rest ``test``, so
both halves ask of every source. ``assign(questions)`` is pure: the same questions give the same
split, and ``tests/sandbox/test_fresh_corpus.py`` holds the committed file to it, so a split
cannot drift once frozen.

    .venv/bin/python benchmarks/split_questions.py OUT.json IN.json [IN.json ...]

writes OUT.json: the questions of every IN file in order, each with its ``split``, under the
grants the set is asked of (both ways: the package of the four corpus sources and the one grant
over them).
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

SEED: Final = 20261128
DEV_SHARE: Final = 0.6
GRANTS: Final = {
    "single": "client_life",
    "package": ["client_home_mail", "client_orbit_chat", "client_orbit_code", "client_assistant"],
}


def assign(questions: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each question's split, ``dev`` or ``test``, in the questions' order."""
    rng = random.Random(SEED)
    by_source: dict[str, list[int]] = {}
    for index, question in enumerate(questions):
        by_source.setdefault(str(question.get("source")), []).append(index)
    splits = [""] * len(questions)
    for indexes in by_source.values():
        shuffled = list(indexes)
        rng.shuffle(shuffled)
        dev = round(DEV_SHARE * len(shuffled))
        for position, index in enumerate(shuffled):
            splits[index] = "dev" if position < dev else "test"
    return splits


def main() -> None:
    out, *sources = (Path(arg) for arg in sys.argv[1:])
    questions: list[dict[str, Any]] = []
    for source in sources:
        questions.extend(json.loads(source.read_text(encoding="utf-8"))["questions"])
    for question, split in zip(questions, assign(questions), strict=True):
        question["split"] = split
    document = {
        "about": (
            "Questions in people's words over the sandbox's second corpus (pdpp_gateway/sandbox/corpus: "
            "Home mail threads, Orbit Labs Slack, orbit-labs GitHub issues and comments, ChatGPT), written "
            "by writers who read only the records, never the gateway's search code; each fact verified "
            "verbatim and unique in the data (tests/sandbox/test_fresh_corpus.py). Split 60/40 into dev "
            "and test by benchmarks/split_questions.py before any ranking change: tune on dev, report "
            "test. Every question is asked both as a package of the four sources and as one grant."
        ),
        "ask": "both",
        "grants": GRANTS,
        "questions": questions,
    }
    out.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    counts = {split: sum(1 for q in questions if q["split"] == split) for split in ("dev", "test")}
    print(f"{out}: {len(questions)} questions, {counts['dev']} dev, {counts['test']} test")


if __name__ == "__main__":
    main()
