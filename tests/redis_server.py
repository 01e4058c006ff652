"""A real ``redis-server`` for tests, on a free loopback port, or a skip with the reason.

``scripts/test`` installs Debian's ``redis-server`` where the machine allows (root with
apt); elsewhere the tests that need it skip and say why. ``RedisServer.kill()`` stops it
mid-test, to show what the gateway does when Redis goes away, and ``restart()`` brings a new,
empty one back on the same port; ``freeze()`` / ``thaw()`` stop and resume it (SIGSTOP /
SIGCONT), a Redis that hangs.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest


class RedisServer:
    def __init__(self, binary: str) -> None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            self.port = sock.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self._binary = binary
        self._start()

    def restart(self) -> None:
        """A new, empty redis-server on the same port (the old one killed): an outage that ends."""
        self.kill()
        self._start()

    def _start(self) -> None:
        self._process = subprocess.Popen(  # noqa: S603 - the test machine's own redis-server
            [
                self._binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.kill()
        raise RuntimeError("redis-server did not start within 10 s")

    @property
    def pid(self) -> int:
        return self._process.pid

    def freeze(self) -> None:
        """SIGSTOP: the server keeps its port and answers nothing (a hung Redis)."""
        self._process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self._process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        if self._process.poll() is None:
            self._process.kill()
            self._process.wait(timeout=10)


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server is not installed (scripts/test installs it where apt is available)")
    server = RedisServer(binary)
    try:
        yield server
    finally:
        server.kill()
