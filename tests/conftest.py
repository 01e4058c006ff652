"""Shared test set-up.

- The sandbox RS fixtures (``sandbox``, ``sandbox_factory``: one fresh server per test)
  come from the sandbox's own pytest plugin.
- ``shared_sandbox``: one sandbox RS for the whole session, served from its own thread
  and event loop, so tests on any loop scope can reach it over real HTTP. Tests that
  count RS calls reset its log first.
- ``stdio_gateway``: a real ``pdpp-gateway stdio`` subprocess driven by the SDK's real
  client, once per test module and protocol era (``legacy`` handshake, and ``auto`` which
  negotiates 2026-07-28 with ``server/discover``).
  Modules that use it run on a module-scoped loop
  (``pytestmark = pytest.mark.asyncio(loop_scope="module")``).
- ``strict_tool_results`` (autouse): every tool result received through the SDK client
  is checked against its tool's ``outputSchema`` as the TypeScript SDK 1.x and the MCP
  Inspector check it, errors included, and for tokens (``tests/strict_client.py``).
- ``no_token_in_logs`` (autouse): no in-process log line of the whole suite holds a
  sandbox token (checked when the session ends).
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mcp import Client, StdioServerParameters

from pdpp_gateway.local.credentials import write_credential
from pdpp_gateway.sandbox.config import TOKENS
from pdpp_gateway.sandbox.runner import start_sandbox
from tests import strict_client

pytest_plugins = ["tests.sandbox_fixtures"]

# "auto" probes server/discover and, against this server, settles on 2026-07-28 (asserted in
# test_stdio_door); a pinned "2026-07-28" would skip discover and so never see the instructions.
ERAS = ("legacy", "auto")


class ThreadedSandbox:
    """A sandbox RS running on its own event loop in a daemon thread."""

    def __init__(self) -> None:
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._error: BaseException | None = None
        self.server: Any = None
        self._thread = threading.Thread(target=self._run, name="sandbox-rs", daemon=True)

    def start(self) -> None:
        self._thread.start()
        if not self._ready.wait(timeout=60):
            raise RuntimeError("sandbox RS did not start within 60 s")
        if self._error is not None:
            raise RuntimeError("sandbox RS failed to start") from self._error

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as error:  # surfaced to the test session by start()
            self._error = error
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with start_sandbox() as server:
            self.server = server
            self._ready.set()
            await self._stop.wait()

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=30)


class TokenInLogs(logging.Handler):
    """Keeps every log record (INFO and up, any logger) whose text holds a sandbox token."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.leaks: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        if any(token in text for token in TOKENS.values()):
            self.leaks.append(f"{record.name}: {text[:300]}")


@pytest.fixture(scope="session", autouse=True)
def no_token_in_logs() -> Iterator[None]:
    """No log line written in this process during the whole suite holds a token.

    Subprocess doors (stdio, serve) have their own stderr checks; this one covers every
    in-process stage, the RS client, aiohttp's own loggers and the sandbox.
    """
    handler, root = TokenInLogs(), logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
    assert not handler.leaks, handler.leaks[:5]


@pytest.fixture(scope="session", autouse=True)
def strict_tool_results() -> Iterator[None]:
    """Every tool result any test receives must pass the strict clients' outputSchema check."""
    with strict_client.install():
        yield


@pytest.fixture(scope="session")
def shared_sandbox() -> Iterator[Any]:
    runner = ThreadedSandbox()
    runner.start()
    try:
        yield runner.server
    finally:
        runner.stop()


class ClientHost:
    """Keeps an MCP client connected inside one owner task.

    anyio requires a client's context to be entered and left by the same task; a
    wider-scoped fixture's set-up and tear-down run in different tasks, so a dedicated
    task owns the connection and tests talk to the client it yields.
    """

    def __init__(self, connect: Callable[[], AbstractAsyncContextManager[Client]]) -> None:
        self._connect = connect
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._client: Client | None = None
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Client:
        self._task = asyncio.create_task(self._own())
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait({ready, self._task}, return_when=asyncio.FIRST_COMPLETED)
        if not self._ready.is_set():
            ready.cancel()
            await self._task  # raises the connection error
        assert self._client is not None
        return self._client

    async def _own(self) -> None:
        async with self._connect() as client:
            self._client = client
            self._ready.set()
            await self._stop.wait()

    async def __aexit__(self, *exc: object) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task


USER_DATA = tempfile.mkdtemp(prefix="pdpp-gateway-tests-data-")


def gateway_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Environment for a gateway subprocess: the test interpreter's paths, nothing secret,
    and a settings directory with no ``pdpp-gateway/gateway.toml`` (so a settings file of
    the person running the tests never reaches a test's gateway)."""
    tests = Path(__file__).resolve().parent
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(tests.parent),
        "XDG_CONFIG_HOME": str(tests / "no-user-config"),
        "XDG_DATA_HOME": USER_DATA,  # never the person's own credential cache
    }
    env.update(extra or {})
    return env


def as_person(home: Path) -> dict[str, str]:
    """A person's environment for ``run_cli``: their own HOME, the per-user cache under it."""
    return {"HOME": str(home), "XDG_DATA_HOME": "", "PYTHONPATH": ""}


def run_cli(
    *args: str,
    env: dict[str, str] | None = None,
    stdin: str = "",
    cwd: Path | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``python -m pdpp_gateway ARGS`` as a person would run it, with ``gateway_env``."""
    return subprocess.run(  # noqa: S603 - our own interpreter and module
        [sys.executable, "-m", "pdpp_gateway", *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=gateway_env(env),
        cwd=cwd,
        timeout=timeout,
        check=False,
    )


async def run_cli_async(*args: str) -> tuple[int | None, str]:
    """``python -m pdpp_gateway ARGS`` from async code: (exit code, stderr); stdout dropped."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pdpp_gateway",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=gateway_env(),
    )
    _, err = await asyncio.wait_for(process.communicate(), timeout=60)
    return process.returncode, err.decode()


def stdio_params(
    provider_url: str, cache_root: Path, *args: str, env: dict[str, str] | None = None
) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "pdpp_gateway",
            "stdio",
            "--provider-url",
            provider_url,
            "--cache-root",
            str(cache_root),
            *args,
        ],
        env=gateway_env(env),
    )


@asynccontextmanager
async def connect_stdio(
    sandbox: Any, cache_root: Path, *, token: str = "client_broad", era: str = "legacy"
) -> AsyncIterator[Client]:
    """A real stdio gateway on ``sandbox`` with ``token``'s grant, connected in ``era``."""
    write_credential(cache_root, sandbox.url, sandbox.tokens[token])
    async with Client(stdio_params(sandbox.url, cache_root), mode=era, cache=None) as client:  # type: ignore[arg-type]
        yield client


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=ERAS)
async def stdio_gateway(
    request: pytest.FixtureRequest, shared_sandbox: Any, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Client]:
    cache_root = tmp_path_factory.mktemp("cache") / ".pdpp"
    host = ClientHost(lambda: connect_stdio(shared_sandbox, cache_root, era=request.param))
    async with host as client:
        yield client


@pytest.fixture
def stdio_connect() -> Callable[..., AbstractAsyncContextManager[Client]]:
    """``stdio_connect(sandbox, cache_root, token=..., era=...)``: a gateway for one test."""
    return connect_stdio
