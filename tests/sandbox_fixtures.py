"""Pytest fixtures for the sandbox RS: ``sandbox`` (fresh per test) and ``sandbox_factory``."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest_asyncio

from pdpp_gateway.sandbox.config import SandboxConfig
from pdpp_gateway.sandbox.runner import SandboxServer, start_sandbox


@pytest_asyncio.fixture
async def sandbox() -> AsyncIterator[SandboxServer]:
    async with start_sandbox() as server:
        yield server


@pytest_asyncio.fixture
async def sandbox_factory() -> AsyncIterator[Callable[..., Any]]:
    async with AsyncExitStack() as stack:

        async def start(**overrides: Any) -> SandboxServer:
            return await stack.enter_async_context(start_sandbox(SandboxConfig(**overrides)))

        yield start
