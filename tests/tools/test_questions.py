"""The question set in a person's words (``benchmarks/questions.json``): no question gets an empty
first search, and the record that answers it is found by the first search for 20 of the 25
(lexical search alone finds none of them; ``benchmarks/questions_bench.py`` prints the figures)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any


def _bench() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "questions_bench.py"
    spec = importlib.util.spec_from_file_location("questions_bench", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_questions_in_a_person_s_words_find_their_record(shared_sandbox: Any) -> None:
    bench = _bench()
    assert len(bench.questions()) >= 25
    default = await bench.run(shared_sandbox, lexical_only=False)
    assert all(hits > 0 for _, _, hits, _ in default)  # never an empty first search
    assert sum(rank is not None and rank < 5 for _, rank, _, _ in default) >= 20
    lexical = await bench.run(shared_sandbox, lexical_only=True)
    assert sum(rank is not None for _, rank, _, _ in lexical) == 0  # what a model got before
    # the extra read happens only after an empty lexical page
    for (_, _, lexical_hits, _), (_, _, _, reads) in zip(lexical, default, strict=True):
        assert reads == (2 if lexical_hits == 0 else 1)
