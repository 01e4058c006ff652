"""The corpus nobody tuned to (``sandbox.corpus``) and its question sets hold what they promise:
every fact verbatim, once, in the record its question names; the first set's split is the seeded
one, and the second held-out set asks about other facts; the records read as linked records (a
mail and its body, an issue and its comments, a conversation and its turns) over real HTTP,
through the grants the benchmark asks with."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pdpp_gateway.sandbox.data import generate
from tests.sandbox.rs_http import get

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
FRESH = BENCHMARKS / "questions_fresh.json"
FRESH2 = BENCHMARKS / "questions_fresh2.json"  # the second held-out set, never split nor tuned on
CORPUS_CONNECTIONS = ("cin_mail_home", "cin_slack_orbit", "cin_github_orbit", "cin_chatgpt")


def _split_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("split_questions", BENCHMARKS / "split_questions.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _fresh(path: Path = FRESH) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _plain(text: str) -> str:
    return " ".join(text.casefold().split())


def test_the_corpus_spans_four_sources_with_linked_records() -> None:
    rows = [row for row in generate().rows if row.connection_id in CORPUS_CONNECTIONS]
    by_stream = Counter((row.connection_id, row.stream) for row in rows)
    assert {connection for connection, _ in by_stream} == set(CORPUS_CONNECTIONS)
    records = sum(count for (_, stream), count in by_stream.items() if stream != "threads")
    assert records >= 40
    ids = {(row.stream, row.record_id) for row in rows}
    for row in rows:  # every link names a record that is there
        if row.stream == "message_bodies":
            assert ("messages", row.data["message_id"]) in ids
        if row.stream == "issue_comments":
            assert ("issues", row.data["issue_id"]) in ids
    assert by_stream[("cin_github_orbit", "issue_comments")] >= 10
    assert by_stream[("cin_chatgpt", "messages")] >= 2 * by_stream[("cin_chatgpt", "conversations")]


@pytest.mark.parametrize(("path", "least"), [(FRESH, 100), (FRESH2, 60)], ids=["fresh", "fresh2"])
def test_every_fact_is_verbatim_once_in_the_record_its_question_names(path: Path, least: int) -> None:
    texts: dict[str, list[str]] = {}  # a mail's message and its body are one record here
    for row in generate().rows:
        owner = row.data["message_id"] if row.stream == "message_bodies" else row.record_id
        for name, value in row.data.items():
            derived = row.stream == "messages" and name == "snippet"  # its body's opening again
            if isinstance(value, str) and not derived:
                texts.setdefault(owner, []).append(_plain(value))
    questions = _fresh(path)["questions"]
    assert len(questions) >= least
    for question in questions:
        fact = _plain(question["fact"])
        everywhere = sum(text.count(fact) for found in texts.values() for text in found)
        assert everywhere == 1, question
        assert any(fact in text for text in texts[question["record"]]), question


def test_the_split_is_the_seeded_one_and_every_source_is_in_both_halves() -> None:
    questions = _fresh()["questions"]
    assert [q["split"] for q in questions] == _split_script().assign(questions)
    for split in ("dev", "test"):
        assert {q["source"] for q in questions if q["split"] == split} == {
            "home_mail",
            "orbit_slack",
            "orbit_github",
            "chatgpt",
        }
    deep = [q for q in questions if q["kind"] == "deep"]
    assert len(deep) >= 6
    assert all(q["depth"] >= 3_000 for q in deep)


def test_the_second_set_asks_about_other_facts_of_every_source_and_is_not_split() -> None:
    first = {_plain(q["fact"]) for q in _fresh()["questions"]}
    second = _fresh(FRESH2)
    assert second["grants"] == _fresh()["grants"]
    assert second["ask"] == "both"
    questions = second["questions"]
    for question in questions:
        fact = _plain(question["fact"])
        assert not any(fact in known or known in fact for known in first), question
        assert "split" not in question  # nothing is tuned on it
    assert {q["source"] for q in questions} == {"home_mail", "orbit_slack", "orbit_github", "chatgpt"}
    deep = [q for q in questions if q["kind"] == "deep"]
    assert len(deep) >= 12
    assert all(q["depth"] >= 3_000 for q in deep)


async def test_a_benchmark_grant_reads_an_issue_s_comments_and_a_conversation_s_turns(
    shared_sandbox: Any,
) -> None:
    status, issues, _ = await get(shared_sandbox, "/v1/streams/issues/records?limit=1", "client_life")
    assert status == 200
    issue = issues["data"][0]
    assert issue["connection_id"] == "cin_github_orbit"
    path = f"/v1/streams/issue_comments/records?filter[issue_id]={issue['data']['id']}"
    status, comments, _ = await get(shared_sandbox, path, "client_life")
    assert status == 200
    assert comments["data"]
    assert {comment["data"]["issue_id"] for comment in comments["data"]} == {issue["data"]["id"]}
    path = "/v1/streams/messages/records?connection_id=cin_chatgpt&limit=2"
    status, turns, _ = await get(shared_sandbox, path, "client_chat")
    assert status == 401  # a connection outside the grant, refused as the reference refuses it
    status, turns, _ = await get(shared_sandbox, path, "client_assistant")
    assert status == 200
    assert {turn["data"]["role"] for turn in turns["data"]} <= {"user", "assistant"}
