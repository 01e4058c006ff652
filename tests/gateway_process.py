"""``pdpp-gateway serve`` as a real process for tests: started with ``gateway_env``, its
JSON log lines kept and parsed, stopped with SIGTERM (``GatewayProcess.stop``) or, when
the block ends with it still running, killed with its whole process group.

``serve(*args)`` binds port 0 unless the arguments name a ``--port`` (the last one wins);
``wait_listening()`` returns the ``/mcp`` URL of its ``listening`` line.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.conftest import gateway_env


class GatewayProcess:
    """The process and every line it writes, read as it writes them (a pipe left unread fills,
    and a gateway blocked writing its log answers nothing: a test would see a hang that no
    deployment has, where the platform drains its output)."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []
        self._listening: list[str] = []
        self._news = asyncio.Event()  # set on each line read and at the end of the output
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stderr is not None
        try:
            while line := await self.process.stderr.readline():
                self._keep(line)
                if self.lines[-1].get("event") == "listening":
                    self._listening.append(self.lines[-1]["url"])
                self._news.set()
        finally:
            self._news.set()

    async def wait_listening(self, count: int = 1) -> str:
        async def listening() -> str:
            while len(self._listening) < count:
                assert not self._reader.done(), f"the gateway exited early: {''.join(self.raw)}"
                self._news.clear()
                await self._news.wait()
            return self._listening[0]

        return await asyncio.wait_for(listening(), timeout=60)

    def _keep(self, line: bytes) -> None:
        text = line.decode()
        self.raw.append(text)
        try:
            self.lines.append(json.loads(text))
        except json.JSONDecodeError:
            self.lines.append({"unparsed": text})

    async def stop(self, *, already_signalled: bool = False) -> int:
        """SIGTERM (unless the test sent it already: a second one could land after the
        event loop closed, when the default action kills the process) and wait for exit."""
        if not already_signalled:
            self.process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(asyncio.shield(self._reader), timeout=60)  # its output to the end
        return await asyncio.wait_for(self.process.wait(), timeout=60)

    async def closed(self) -> None:
        """The output read to its end (the process gone), so the pipe transport closes."""
        await self._reader


@asynccontextmanager
async def serve(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> AsyncIterator[GatewayProcess]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pdpp_gateway",
        "serve",
        "--port",
        "0",
        *args,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=gateway_env(env),
        cwd=cwd,
        start_new_session=True,  # its own process group: workers included in the kill below
    )
    gateway = GatewayProcess(process)
    try:
        yield gateway
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        await gateway.closed()
        await process.wait()
