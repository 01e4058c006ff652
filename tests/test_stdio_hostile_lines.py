"""No stdin line takes a stdio session down: every real call between hostile lines is answered.

One real ``python -m pdpp_gateway stdio`` per protocol era (the handshake era through
``initialize``, and 2026-07-28 through ``server/discover``) reads raw bytes. Hypothesis
draws runs of hostile lines (nesting up to a million deep, numbers of thousands of digits,
lone surrogate escapes, invalid UTF-8, NUL bytes, long lines, random bytes and text), bare
or as the arguments of a request, and after each run a real ``tools/list`` and a real
``schema`` call must be answered with their results. Every line the gateway writes must
be a JSON-RPC frame. A 50 MB line nested 25 million deep is always among the examples.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pdpp_gateway.fast_start.build import envelope
from pdpp_gateway.local.credentials import write_credential
from pdpp_gateway.tools.specs import TOOL_NAMES
from tests.conftest import gateway_env
from tests.frames import INITIALIZED, initialize

RUNS: Final = 25
ANSWER_SECONDS: Final = 60.0
MODERN: Final = envelope("2026-07-28")


class RawSession:
    """A stdio gateway fed raw bytes; its frames and its stderr are read by threads of their own."""

    def __init__(self, sandbox: Any, cache_root: Path, *, modern: bool) -> None:
        self.modern = modern
        write_credential(cache_root, sandbox.url, sandbox.tokens["client_broad"])
        command = ["stdio", "--provider-url", sandbox.url, "--cache-root", str(cache_root)]
        self.process = subprocess.Popen(  # noqa: S603 - our own interpreter and module
            [sys.executable, "-m", "pdpp_gateway", *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=gateway_env(),
        )
        self.frames: queue.Queue[bytes] = queue.Queue()
        self.stderr: list[bytes] = []
        self.readers = [
            threading.Thread(target=self._read_frames, daemon=True),
            threading.Thread(target=self.stderr.extend, args=(self.process.stderr,), daemon=True),
        ]
        for reader in self.readers:
            reader.start()

    def _read_frames(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.frames.put(raw)
        self.frames.put(b"")

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def call(self, request_id: str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a real request and return its answer; every frame on the way must be JSON-RPC."""
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        self.send(json.dumps(frame).encode())
        while True:
            try:
                raw = self.frames.get(timeout=ANSWER_SECONDS)
            except queue.Empty:
                pytest.fail(f"no answer to {request_id} within {ANSWER_SECONDS:.0f} s; {self.tail()}")
            if not raw:
                pytest.fail(
                    f"the session ended (exit {self.process.wait()}) before {request_id}; {self.tail()}"
                )
            reply = json.loads(raw)
            assert reply["jsonrpc"] == "2.0"
            assert ("result" in reply) != ("error" in reply)
            if reply["id"] == request_id:
                return dict(reply)

    def tail(self) -> str:
        return b"".join(self.stderr)[-2000:].decode(errors="replace")

    def close(self) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        assert self.process.stderr is not None
        self.process.stdin.close()
        self.process.wait(timeout=ANSWER_SECONDS)
        for reader in self.readers:
            reader.join(timeout=ANSWER_SECONDS)
        self.process.stdout.close()
        self.process.stderr.close()


@pytest.fixture(params=["handshake", "2026-07-28"])
def session(request: pytest.FixtureRequest, shared_sandbox: Any, tmp_path: Path) -> Iterator[RawSession]:
    raw = RawSession(shared_sandbox, tmp_path / ".pdpp", modern=request.param != "handshake")
    try:
        if raw.modern:
            opened = raw.call("open", "server/discover", MODERN)
        else:
            opened = raw.call("open", "initialize", initialize()["params"])
            raw.send(json.dumps(INITIALIZED).encode())
        assert "result" in opened, opened
        yield raw
    finally:
        raw.close()
    assert raw.process.returncode == 0, raw.tail()
    assert "Traceback" not in raw.tail()


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _request(argument: bytes, request_id: int) -> bytes:
    """A tools/call whose one argument is ``argument``, raw: it may not be JSON at all."""
    return (
        b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"schema","arguments":{"x":%s}}}'
        % (request_id, argument)
    )


VALUES = st.one_of(
    st.integers(150, 1_000_000).map(_deep),
    st.integers(300, 20_000).map(lambda digits: b"9" * digits),
    st.integers(300, 20_000).map(lambda digits: b"1e" + b"9" * digits),
    st.sampled_from([b'"\\ud800"', b'"\\udc00x"', b'"\\ud800\\ud800"', b'"a\x00b"', b'"\xed\xa0\x80"']),
    st.binary(max_size=64),
    st.integers(100_000, 2_000_000).map(lambda size: b'"' + b"x" * size + b'"'),
    st.text(max_size=64).map(lambda text: text.encode("utf-8", "surrogatepass")),
)
HOSTILE = st.tuples(st.booleans(), VALUES, st.integers(-(2**63), 2**63)).map(
    lambda drawn: (_request(drawn[1], drawn[2]) if drawn[0] else drawn[1]).translate(None, b"\r\n")
)


def test_every_real_call_between_hostile_lines_is_answered_in_both_eras(session: RawSession) -> None:
    calls = 0

    @settings(
        max_examples=RUNS,
        deadline=None,
        derandomize=bool(os.environ.get("CI")),
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(lines=st.lists(HOSTILE, min_size=1, max_size=4))
    @example(lines=[_request(_deep(25_000_000), 9)])  # a 50 MB line, a million times past the depth limit
    @example(lines=[_request(_deep(1_000), 9)])  # the line that once ended the session
    def run(lines: list[bytes]) -> None:
        nonlocal calls
        for line in lines:
            session.send(line)
        meta = MODERN if session.modern else None
        calls += 1
        listed = session.call(f"list-{calls}", "tools/list", meta)
        assert [tool["name"] for tool in listed["result"]["tools"]] == list(TOOL_NAMES)
        schema = session.call(
            f"schema-{calls}", "tools/call", {"name": "schema", "arguments": {}, **(meta or {})}
        )
        assert not schema["result"].get("isError"), schema
        assert session.process.poll() is None

    run()
    assert calls >= RUNS
