"""The fast path and the SDK path agree on any arguments, hostile ones included.

(The oracle of ``wire.call_result`` and ``wire.plain`` through the hosted door: moved here
from ``tests/hosted`` with the wire kernel; it reuses that door's ``Paths``.)

Hypothesis draws ``tools/call`` arguments for every tool (the argument fuzzer's own
strategies: valid, near-valid, hostile and type-swapped objects) and sends each, in
both protocol eras, through one gateway twice: the fast path, then the SDK path. The
answers must be the same bytes and add the same metrics (``test_fast_call.Paths``).
The gateway runs without a rate limit here, so a refusal for calling too fast never
stands in for an answer.
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import os
from collections.abc import Iterator
from typing import Any

import aiohttp
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.sandbox.fronting import sandbox_settings
from pdpp_gateway.tools.specs import TOOL_NAMES
from tests.hosted.test_fast_call import Paths, _first_difference, call
from tests.tools.test_fuzz_arguments import arguments_for

CASES = 120


class Door:
    """A gateway on its own event loop, and an HTTP session to it."""

    def __init__(self, sandbox: Any) -> None:
        self.runner = asyncio.Runner()
        self._gateway = start_gateway(
            dataclasses.replace(sandbox_settings(sandbox.url), rate_limit=0.0), public_self=True
        )
        self.url = self.runner.run(self._gateway.__aenter__())
        self.http = self.runner.run(self._session())

    @staticmethod
    async def _session() -> aiohttp.ClientSession:
        return aiohttp.ClientSession()

    def close(self) -> None:
        self.runner.run(self.http.close())
        self.runner.run(self._gateway.__aexit__(None, None, None))
        self.runner.close()


@pytest.fixture
def door(shared_sandbox: Any) -> Iterator[Door]:
    door = Door(shared_sandbox)
    try:
        yield door
    finally:
        door.close()


def _finite(value: Any) -> bool:
    """Whether ``value`` has no float JSON cannot carry (the client writes ``-Infinity``, which
    the door refuses as unparsable before either path runs)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(_finite(v) for v in value)
    return True


CALLS = st.sampled_from(TOOL_NAMES).flatmap(lambda tool: st.tuples(st.just(tool), arguments_for(tool)))


def test_fast_and_sdk_paths_agree_on_any_arguments(
    door: Door, shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = Paths(door.url, shared_sandbox.tokens["client_broad"], monkeypatch)
    taken = []

    @settings(
        max_examples=CASES,
        deadline=None,
        derandomize=bool(os.environ.get("CI")),
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(drawn=CALLS, era=st.sampled_from(["default", "2026"]))
    def run(drawn: tuple[str, dict[str, Any]], era: str) -> None:
        tool, arguments = drawn
        door.runner.run(paths.send(door.http, era, call("schema")))  # the token is cached for the pair
        fast, sdk, took_fast = door.runner.run(paths.both(door.http, era, call(tool, arguments)))
        assert fast == sdk, (tool, era, _first_difference(fast[2], sdk[2]))
        taken.append(took_fast or not _finite(arguments))  # -inf/NaN: no JSON, refused before either path

    run()
    assert all(taken)  # every drawn call is a plain one: the fast path answered each
