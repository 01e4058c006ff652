"""``mcp_gateway_middleware.outage``: an outage is logged once when it starts and once when it ends, and a
guarded dependency that hangs or flaps stays off the hot path until it answers steadily."""

from __future__ import annotations

import asyncio
import logging

import pytest
from mcp_gateway_middleware.outage import DependencyDown, Guard, Outage


def test_an_outage_is_said_once_and_its_end_once(caplog: pytest.LogCaptureFixture) -> None:
    outage = Outage("shared store", "working alone", logging.getLogger("test.outage"))
    caplog.set_level(logging.WARNING, "test.outage")
    outage.up()
    assert outage.reason is None
    for _ in range(3):
        outage.down(ConnectionRefusedError("redis://user:secret@host"))
    assert outage.reason == "shared store unavailable (ConnectionRefusedError); working alone"
    outage.up()
    outage.up()
    assert outage.reason is None
    assert [r.getMessage() for r in caplog.records] == [
        "shared store unavailable (ConnectionRefusedError); working alone",
        "shared store is back",
    ]
    assert "secret" not in caplog.text  # only the error's type is ever said


class Flaky:
    """A dependency that fails, hangs or answers, as a test sets it."""

    def __init__(self) -> None:
        self.mode = "answer"
        self.calls = 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.mode == "fail":
            raise ConnectionRefusedError
        if self.mode == "hang":
            await asyncio.sleep(3600)
        return "ok"


async def test_a_hung_dependency_costs_calls_their_deadline_for_a_while_then_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dependency = Flaky()
    guard = Guard(
        Outage("store", "alone", logging.getLogger("test.guard")),
        dependency,
        deadline=0.02,
        patience=0.1,
        probe_every=0.02,
        steady=3,
    )
    caplog.set_level(logging.WARNING, "test.guard")
    assert await guard.call(dependency) == "ok"
    dependency.mode = "hang"
    while guard.reason is None:  # missed deadlines, until nothing has answered for its patience
        with pytest.raises(DependencyDown):
            await guard.call(dependency)
    used = dependency.calls
    for _ in range(50):  # skipped at once: the dependency is not touched
        with pytest.raises(DependencyDown):
            await guard.call(dependency)
    assert dependency.calls <= used + 3  # only the background probe reached it meanwhile
    for mode in ("fail", "answer", "fail", "answer"):  # flapping: one line down, one line back
        dependency.mode = mode
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # three probes 0.02 s apart, with room for a loaded machine
    assert guard.reason is None
    assert await guard.call(dependency) == "ok"
    assert [r.getMessage() for r in caplog.records] == [
        "store unavailable (TimeoutError); alone",
        "store is back",
    ]
    await guard.aclose()


async def test_one_slow_answer_is_not_an_outage(caplog: pytest.LogCaptureFixture) -> None:
    """A missed deadline now and then (a busy process's own lag) serves that call alone and
    says nothing; an answer in time starts the count again."""
    dependency = Flaky()
    guard = Guard(
        Outage("store", "alone", logging.getLogger("test.guard")), dependency, deadline=0.02, patience=0.5
    )
    caplog.set_level(logging.WARNING, "test.guard")
    for _ in range(5):
        dependency.mode = "hang"
        slow = [asyncio.ensure_future(guard.call(dependency)) for _ in range(10)]  # many at once
        for each in await asyncio.gather(*slow, return_exceptions=True):
            assert isinstance(each, DependencyDown)
        dependency.mode = "answer"
        assert await guard.call(dependency) == "ok"
    assert guard.reason is None
    assert caplog.records == []
    dependency.mode = "fail"  # a refusal is an outage at once
    with pytest.raises(DependencyDown):
        await guard.call(dependency)
    assert guard.reason is not None
    await guard.aclose()
