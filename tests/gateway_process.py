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
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[dict[str, Any]] = []
        self.raw: list[str] = []

    async def wait_listening(self, count: int = 1) -> str:
        urls: list[str] = []
        assert self.process.stderr is not None
        while len(urls) < count:
            line = await asyncio.wait_for(self.process.stderr.readline(), timeout=60)
            assert line, f"the gateway exited early: {''.join(self.raw)}"
            self._keep(line)
            if self.lines and self.lines[-1].get("event") == "listening":
                urls.append(self.lines[-1]["url"])
        return urls[0]

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
        assert self.process.stderr is not None
        rest = await asyncio.wait_for(self.process.stderr.read(), timeout=60)
        for line in rest.splitlines(keepends=True):
            self._keep(line)
        return await asyncio.wait_for(self.process.wait(), timeout=60)


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
        assert process.stderr is not None
        await process.stderr.read()  # to end of file, so the pipe transport closes
        await process.wait()
