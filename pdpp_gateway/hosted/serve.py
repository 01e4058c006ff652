"""Running the hosted app as a web process: one or several workers, graceful shutdown.

Contract:

- ``serve_workers(settings)`` binds first, in the calling process, so a busy or
  forbidden address is one ``BindError`` line (the serve command exits 64) instead of
  a traceback, and ``--port 0`` is resolved once: every worker serves the same port.
- One worker: ``serve(settings, sock)`` serves on that socket until SIGTERM or SIGINT.
- ``workers > 1``: the parent holds a bound, non-listening ``SO_REUSEPORT`` socket on
  the chosen port (it reserves the port and never receives connections), then starts
  that many worker processes that each listen on that port with ``SO_REUSEPORT`` (the
  kernel spreads connections), forwards SIGTERM/SIGINT to them, and exits when they all
  have; a worker that dies unexpectedly ends the pool with a non-zero code so the
  platform restarts it. The workers share one Prometheus view through a multiprocess
  directory.
- Shutdown (each worker): ``/readyz`` turns 503 at once; the listener stays open while
  requests are in flight (at most half of ``shutdown_grace_seconds``, so a load
  balancer probing readiness sees the 503 and stops routing), then it closes. Every call
  in flight, or arriving meanwhile, is answered by 60% of the grace: a call
  still running then is stopped and answered with a JSON-RPC error (503
  ``server_restarting``, ``Retry-After``), never a closed connection; then upstream
  clients close, the last spans are exported in what is left of the grace (a collector
  that does not answer costs those spans, never the deadline: ``tracing.stop_tracing``),
  and the process exits within the grace. Each worker logs
  one ``listening`` line with the bound URL, what it advertises as its public MCP URL
  (``OriginPolicy.advertised``: the public URL with its path prefix, or what trusted
  proxies may forward), its pid, its event loop and the settings file read
  (``config_file``, null when none). With no settings file read, a
  ``config/gateway.toml`` in the working directory is named in one warning: it is not
  read unless passed with ``--config`` (or ``PDPP_GATEWAY_CONFIG``).
- Connections are served by ``http_server.GatewayRunner`` (malformed HTTP answered and
  logged without its content, no request decompression, a 408 ends its connection,
  idle, header and keep-alive timeouts and a connection ceiling from the settings:
  ``connections``), and every log record goes through ``RedactBearers``.
- Once serving, the start-up heap is frozen out of the cyclic GC (``gc.freeze``), so
  full collections stay short however many calls are in flight.
- Each worker runs its event loop on ``uvloop`` where it is installed (every platform
  but Windows), else on asyncio's own loop: ``run_loop``. The loop carries the same
  bytes either way; uvloop's transports and scheduler cost less CPU per request (see
  the README's hosted-hop figures).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gc
import logging
import multiprocessing
import os
import signal
import socket
import tempfile
from collections.abc import Callable, Coroutine
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

from aiohttp import web

from pdpp_gateway.settings import HostedSettings

_log = logging.getLogger("pdpp_gateway.serve")
LOCAL_CONFIG: Final = "config/gateway.toml"  # the repository's sample settings file


class BindError(Exception):
    """The listening address could not be bound; the message is one line for the operator."""


def bind_socket(host: str, port: int, *, reuse_port: bool = False, listen: bool = True) -> socket.socket:
    """A TCP socket bound to ``host:port`` (listening unless ``listen=False``); binding
    first tells the real port before the app is built."""
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError as error:
        raise BindError(f"cannot open a socket for {host}: {error.strerror or error}") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        if listen:
            sock.listen(1024)
        sock.setblocking(False)
    except OSError as error:
        sock.close()
        shown = f"[{host}]" if ":" in host else host
        reason = "address already in use" if error.errno == errno.EADDRINUSE else error.strerror or str(error)
        raise BindError(f"cannot listen on {shown}:{port}: {reason}") from None
    return sock


ANSWER_BY_SHARE: Final = 0.6  # of the shutdown grace: every call in flight is answered by then


async def serve(settings: HostedSettings, sock: socket.socket) -> None:
    from pdpp_gateway.hosted.app import create_app
    from pdpp_gateway.hosted.connections import ConnectionLimits
    from pdpp_gateway.hosted.http_server import GatewayRunner
    from pdpp_gateway.hosted.ops import DRAIN
    from pdpp_gateway.hosted.origin import OriginPolicy
    from pdpp_gateway.observe.tracing import start_tracing, stop_tracing

    settings = replace(settings, port=sock.getsockname()[1])
    start_tracing()  # per worker process: the exporter's thread does not cross a fork or spawn
    app = create_app(settings)
    half = settings.shutdown_grace_seconds / 2
    limits = ConnectionLimits.from_settings(settings)
    runner = GatewayRunner(app, limits=limits, handle_signals=False, shutdown_timeout=half)
    await runner.setup()
    await web.SockSite(runner, sock).start()
    freeze_start_up_objects()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    host = f"[{settings.host}]" if ":" in settings.host else settings.host
    url = f"http://{host}:{settings.port}/mcp"
    advertised = OriginPolicy.from_settings(settings).advertised()
    _log.info(
        "listening on %s, advertising %s (provider %s, settings file %s)",
        url,
        advertised,
        settings.provider_url,
        settings.config_file or "none",
        extra={
            "fields": {
                "event": "listening",
                "url": url,
                "advertised": advertised,
                "pid": os.getpid(),
                "loop": _loop_name(loop),
                "config_file": settings.config_file,
            }
        },
    )
    try:
        await stop.wait()
    finally:
        # Stopping is already under way: a repeated SIGTERM (a supervisor's, or one sent
        # while the loop closes, when its handler is gone) must not kill the drain or the
        # exit code. The grace bound still ends the process.
        loop.remove_signal_handler(signal.SIGTERM)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        drain = app[DRAIN]
        grace = settings.shutdown_grace_seconds
        grace_ends = loop.time() + grace
        drain.answer_everything_by(loop.time() + grace * ANSWER_BY_SHARE)
        _log.info(
            "draining: /readyz answers 503; %d request(s) in flight (grace %.0f s)",
            drain.in_flight,
            settings.shutdown_grace_seconds,
            extra={"fields": {"event": "draining", "in_flight": drain.in_flight}},
        )
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(drain.idle.wait(), half)
        await runner.cleanup()
        stop_tracing(grace_ends - loop.time())  # the last spans, in what is left of the grace
        _log.info("stopped", extra={"fields": {"event": "stopped"}})


def freeze_start_up_objects() -> None:
    """Move everything alive after start-up (imported modules, the SDK's models, the app)
    out of the cyclic collector's reach (``gc.freeze``). Those ~100k objects live as long
    as the process, yet every full collection walked them all: under concurrency more
    request objects survive the young generations, full collections come more often,
    and each took tens of milliseconds (the benchmark's p99 and its throughput drop
    from 16 to 64 concurrent calls)."""
    gc.collect()
    gc.freeze()


def configure_serve_logging(level: str) -> None:
    """JSON lines on stderr, each record passed through ``RedactBearers`` first."""
    from pdpp_gateway.hosted.http_server import RedactBearers
    from pdpp_gateway.observe.logs import configure_logging

    configure_logging(level, json_lines=True)
    for handler in logging.getLogger().handlers:
        handler.addFilter(RedactBearers())


def run_worker(settings: HostedSettings, reuse_port: bool) -> None:
    """A worker process: bind ``settings.port`` (already chosen by the parent) and serve."""
    configure_serve_logging(settings.log_level)
    sock = bind_socket(settings.host, settings.port, reuse_port=reuse_port)
    run_loop(serve(settings, sock))


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop]:
    """uvloop's event loop when it is installed, else asyncio's default loop."""
    try:
        import uvloop
    except ImportError:  # Windows, or an install without it: same answers, more CPU
        return asyncio.new_event_loop
    return uvloop.new_event_loop


def _loop_name(loop: asyncio.AbstractEventLoop) -> str:
    """``uvloop`` or ``asyncio``: which loop serves, for the ``listening`` line."""
    return type(loop).__module__.partition(".")[0]


def run_loop(main: Coroutine[Any, Any, None]) -> None:
    """``asyncio.run(main)`` on the loop ``loop_factory`` picks."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        runner.run(main)


def serve_workers(settings: HostedSettings) -> int:
    """Serve until a signal; raises ``BindError`` before anything starts when the
    address cannot be bound."""
    configure_serve_logging(settings.log_level)
    if settings.workers <= 1:
        sock = bind_socket(settings.host, settings.port)
        _warn_unread_local_config(settings)
        run_loop(serve(settings, sock))
        return 0
    reservation = bind_socket(settings.host, settings.port, reuse_port=True, listen=False)
    _warn_unread_local_config(settings)
    try:
        return _pool(replace(settings, port=reservation.getsockname()[1]))
    finally:
        reservation.close()


def _warn_unread_local_config(settings: HostedSettings) -> None:
    local = Path(LOCAL_CONFIG)
    if settings.config_file is None and local.is_file():
        _log.warning(
            "%s in the working directory is not read: pass --config %s (or set PDPP_GATEWAY_CONFIG) "
            "to use it",
            LOCAL_CONFIG,
            LOCAL_CONFIG,
            extra={"fields": {"event": "config_not_read", "path": str(local.absolute())}},
        )


def _pool(settings: HostedSettings) -> int:
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
