"""Running the hosted app as a web process: one or several workers, graceful shutdown.

Contract:

- ``serve(settings)`` binds ``host:port`` and serves until SIGTERM or SIGINT. Then it
  stops accepting connections, turns ``/readyz`` to 503, lets in-flight requests finish
  (at most ``shutdown_grace_seconds``) and closes its upstream clients. It logs one
  ``listening`` line with the bound URL (useful with ``--port 0``).
- ``serve_workers(settings)`` with ``workers > 1`` starts that many worker processes
  that share the port (``SO_REUSEPORT``; the kernel spreads connections), forwards
  SIGTERM/SIGINT to them, and exits when they all have; a worker that dies
  unexpectedly ends the pool with a non-zero code so the platform restarts it. The
  workers share one Prometheus view through a multiprocess directory.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import socket
import tempfile
from dataclasses import replace
from typing import Any

from aiohttp import web

from pdpp_gateway.settings import HostedSettings

_log = logging.getLogger("pdpp_gateway.serve")


def bind_socket(host: str, port: int, *, reuse_port: bool = False) -> socket.socket:
    """A listening TCP socket; binding first tells the real port before the app is built."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if reuse_port:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


async def serve(settings: HostedSettings, *, reuse_port: bool = False) -> None:
    from pdpp_gateway.hosted.app import create_app

    sock = bind_socket(settings.host, settings.port, reuse_port=reuse_port)
    settings = replace(settings, port=sock.getsockname()[1])
    app = create_app(settings)
    runner = web.AppRunner(
        app, access_log=None, handle_signals=False, shutdown_timeout=settings.shutdown_grace_seconds
    )
    await runner.setup()
    await web.SockSite(runner, sock).start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    url = f"http://{host}:{settings.port}/mcp"
    _log.info(
        "listening on %s (provider %s)",
        url,
        settings.provider_url,
        extra={"fields": {"event": "listening", "url": url, "pid": os.getpid()}},
    )
    try:
        await stop.wait()
    finally:
        _log.info("draining in-flight requests (up to %.0f s)", settings.shutdown_grace_seconds)
        await runner.cleanup()
        _log.info("stopped", extra={"fields": {"event": "stopped"}})


def run_worker(settings: HostedSettings, reuse_port: bool) -> None:
    from pdpp_gateway.logs import configure_logging

    configure_logging(settings.log_level, json_lines=True)
    asyncio.run(serve(settings, reuse_port=reuse_port))


def serve_workers(settings: HostedSettings) -> int:
    if settings.workers <= 1:
        run_worker(settings, reuse_port=False)
        return 0
    from pdpp_gateway.logs import configure_logging

    configure_logging(settings.log_level, json_lines=True)
    metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    cleanup: tempfile.TemporaryDirectory[str] | None = None
    if not metrics_dir:
        cleanup = tempfile.TemporaryDirectory(prefix="pdpp-gateway-metrics-")
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = cleanup.name
    context = multiprocessing.get_context("spawn")
    single = replace(settings, workers=1)
    workers = [
        context.Process(target=run_worker, args=(single, True), name=f"worker-{n}")
        for n in range(settings.workers)
    ]
    for worker in workers:
        worker.start()
    stopping = False

    def forward(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True
        for worker in workers:
            if worker.pid and worker.is_alive():
                os.kill(worker.pid, signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    code = 0
    try:
        while any(worker.is_alive() for worker in workers):
            for worker in workers:
                worker.join(timeout=0.5)
                if not worker.is_alive() and worker.exitcode not in (0, None) and not stopping:
                    _log.error("worker %s exited with %s; stopping the pool", worker.name, worker.exitcode)
                    code = 1
                    forward(signal.SIGTERM, None)
    finally:
        if cleanup is not None:
            cleanup.cleanup()
    return code
