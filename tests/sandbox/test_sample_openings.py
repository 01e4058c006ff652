"""The long sample texts with a buried fact open as a real message does: on their subject for
the ~2,000 characters a meaning-based search reads, with no fact, decoy or answer in them."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pdpp_gateway.sandbox.data import generate
from pdpp_gateway.sandbox.sample_facts import ISSUE_FACTS, MAIL_FACTS
from pdpp_gateway.sandbox.sample_mail import BURIED_FACTS, DECOYS
from pdpp_gateway.sandbox.sample_openings import OPENINGS

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
FACTS = {f"body_{item.key}": item.fact for item in MAIL_FACTS} | BURIED_FACTS
FACTS |= {record_id: fact for record_id, fact, _, _ in ISSUE_FACTS}


def _forbidden() -> set[str]:
    """Every fact sentence and decoy of the sample data, and every answer a question asks for."""
    sentences = set(FACTS.values())
    sentences |= {decoy for item in MAIL_FACTS for decoy in item.decoys}
    sentences |= {decoy for decoys in DECOYS.values() for decoy in decoys}
    sentences |= {decoy for _, _, decoys, _ in ISSUE_FACTS for decoy in decoys}
    for name in ("questions.json", "questions_heldout.json"):
        asked = json.loads((BENCHMARKS / name).read_text(encoding="utf-8"))["questions"]
        sentences |= {question["fact"] for question in asked}
    return sentences


def test_each_opening_reads_on_its_subject_without_any_fact_or_answer() -> None:
    forbidden = _forbidden()
    assert set(OPENINGS) == set(FACTS)
    for record_id, opening in OPENINGS.items():
        assert 1_800 <= len(opening) <= 2_200, record_id
        assert opening.count("\n\n") >= 4, record_id  # paragraphs, as a sender writes them
        assert not any(char.isdigit() for char in opening), record_id  # no amount, code, date or time
        leaked = [
            text
            for text in forbidden
            if re.search(rf"(?<!\w){re.escape(text)}(?!\w)", opening, re.IGNORECASE)
        ]
        assert not leaked, (record_id, leaked)


def test_each_long_text_opens_with_its_opening_and_keeps_its_fact_deep() -> None:
    texts = {row.record_id: str(row.data.get("body_text", row.data.get("body"))) for row in generate().rows}
    for record_id, fact in FACTS.items():
        text = texts[record_id]
        assert text.startswith(OPENINGS[record_id] + "\n\n"), record_id
        assert text.count(fact) == 1, record_id
        deep = 10_000 if record_id.startswith("body_") else 8_000
        assert text.find(fact) >= deep, record_id
