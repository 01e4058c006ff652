"""A real nginx in front of gateways, as an operator deploys one: TLS ends at the proxy,
the gateway is served under a path prefix, and the proxy says so in ``X-Forwarded-*``.

``scripts/test`` installs Debian's nginx where the machine allows (root with apt);
elsewhere the tests that need it skip and say why. ``nginx_proxy(directory, ports)``
runs it in the foreground (``daemon off``) on a free loopback port with a config, pid,
logs and temp files of its own under ``directory``, proxying

- ``https://127.0.0.1:<port><prefix>/...`` to ``/...`` of the gateways on ``ports`` (one
  upstream, round robin, kept-alive connections, a call a replica dropped retried on
  another, as the README's proxy settings say), with ``X-Forwarded-Proto``,
  ``X-Forwarded-Host`` (host and port, as the client sent them) and, unless
  ``forward_prefix=False``, ``X-Forwarded-Prefix``;
- ``https://127.0.0.1:<port>/.well-known/oauth-protected-resource<prefix>/mcp``, the path
  RFC 9728 gives the metadata of ``<prefix>/mcp``, to the gateways unchanged.

A port may name a gateway that is not (or no longer) running: nginx then sends its calls
to another (a refused connection is retried on the next server and the server is left
out for a second), as a platform's router does with an instance that comes or goes, and
without a reload (which closes the proxy's idle client connections). The block's end
stops it.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tls_files import TlsFiles, tls_files

START_SECONDS = 10.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Nginx:
    directory: Path
    port: int
    prefix: str
    tls: TlsFiles
    forward_prefix: bool
    process: subprocess.Popen[bytes] | None = None

    @property
    def origin(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def base(self) -> str:
        """Where the gateway is public: the proxy's origin and the prefix."""
        return self.origin + self.prefix

    @property
    def error_log(self) -> str:
        path = self.directory / "error.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else ""

    def write_config(self, ports: list[int]) -> Path:
        for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi"):
            (self.directory / name).mkdir(exist_ok=True)
        servers = "\n".join(f"    server 127.0.0.1:{port} max_fails=1 fail_timeout=1s;" for port in ports)
        forwarded_prefix = (
            f"proxy_set_header X-Forwarded-Prefix {self.prefix};" if self.forward_prefix else ""
        )
        # nginx started by root hands its workers to an unprivileged user; keep it the caller.
        user = f"user {getpass.getuser()};" if os.geteuid() == 0 else ""
        d = self.directory
        config = f"""
{user}
worker_processes 1;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 512; }}
http {{
  access_log off;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  upstream pdpp_gateway {{
{servers}
    keepalive 32;
  }}
  server {{
    listen 127.0.0.1:{self.port} ssl;
    ssl_certificate {self.tls.certificate};
    ssl_certificate_key {self.tls.key};
    client_max_body_size 4m;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_set_header Host $http_host;
    proxy_set_header X-Forwarded-Proto $scheme;
    proxy_set_header X-Forwarded-Host $http_host;
    {forwarded_prefix}
    # Every call is a read: one a replica dropped (it went away) is safe to send to another.
    proxy_next_upstream error timeout non_idempotent;
    location {self.prefix}/ {{ proxy_pass http://pdpp_gateway/; }}
    location = /.well-known/oauth-protected-resource{self.prefix}/mcp {{ proxy_pass http://pdpp_gateway; }}
  }}
}}
"""
        path = self.directory / "nginx.conf"
        path.write_text(config, encoding="utf-8")
        return path

    def start(self, binary: str, ports: list[int]) -> None:
        config = self.write_config(ports)
        with (self.directory / "error.log").open("ab") as output:
            self.process = subprocess.Popen(  # noqa: S603 - the test machine's own nginx
                [binary, "-p", str(self.directory), "-e", str(self.directory / "error.log"),
                 "-c", str(config), "-g", "daemon off;"],
                stdout=output,
                stderr=output,
            )  # fmt: skip
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"nginx exited at start: {self.error_log}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"nginx did not listen within {START_SECONDS:.0f} s: {self.error_log}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)


@contextmanager
def nginx_proxy(
    directory: Path, ports: list[int], *, prefix: str = "/pdpp", forward_prefix: bool = True, port: int = 0
) -> Iterator[Nginx]:
    """nginx on ``port`` (a free one when 0) in front of the gateways on ``ports``."""
    binary = shutil.which("nginx") or next(
        (path for path in ("/usr/sbin/nginx", "/sbin/nginx") if Path(path).is_file()), None
    )
    if binary is None:
        pytest.skip("nginx is not installed (scripts/test installs it where apt is available)")
    directory.mkdir(parents=True, exist_ok=True)
    proxy = Nginx(directory, port or free_port(), prefix, tls_files(directory), forward_prefix)
    proxy.start(binary, ports)
    try:
        yield proxy
    finally:
        proxy.stop()
