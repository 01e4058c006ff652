"""``middleware.outage``: an outage is logged once when it starts and once when it ends."""

from __future__ import annotations

import logging

import pytest

from middleware.outage import Outage


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
