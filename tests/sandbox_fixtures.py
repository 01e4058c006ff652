"""Pytest fixtures for the sandbox RS: ``sandbox`` (fresh per test) and ``sandbox_factory``;
``set_grant_status`` revokes (or expires, or restores) a grant while a sandbox serves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest_asyncio

from pdpp_gateway.sandbox.access import STATUS_OVERRIDES
from pdpp_gateway.sandbox.config import GrantStatus, SandboxConfig
from pdpp_gateway.sandbox.runner import SandboxServer, start_sandbox


def set_grant_status(server: SandboxServer, token_name: str, status: GrantStatus) -> None:
    """From now on the grant behind token ``token_name`` reads as ``status`` (its RS reads
    and its introspection alike), as when its owner revokes it."""
    server.app[STATUS_OVERRIDES][token_name] = status


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
