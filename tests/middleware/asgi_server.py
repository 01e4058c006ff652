"""An ASGI app served by uvicorn on 127.0.0.1 for the length of a test (a real HTTP server)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import uvicorn


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """``app`` on a free port; yields its base URL (``http://127.0.0.1:<port>``)."""
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, lifespan="on", log_level="warning", access_log=False
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()  # it failed to start: say why
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
