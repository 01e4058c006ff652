"""A real nginx in front of gateways, run with the guide's own configuration file.

``config/nginx/pdpp-gateway.conf`` is what README.md tells an operator to include: TLS ending
at the proxy, the gateway under the path prefix ``/pdpp``, replicas in one upstream (a replica
that refuses a connection is left out for a second and its call retried on another),
``X-Forwarded-*`` set, the operational endpoints refused, the RS behind ``/``. The tests run
that file unchanged but for its addresses (``guide_config``): the replicas' ports, the listen
address (a free loopback port: not the default one, so the Host a client sends carries it),
the certificate files and the RS's address; this module only wraps it in an ``http`` block
with a pid, logs and temp files of its own under ``directory``.

``scripts/test`` installs Debian's nginx where the machine allows (root with apt);
elsewhere the tests that need it skip and say why. ``nginx_proxy(directory, ports)`` runs
it in the foreground (``daemon off``) and stops it at the block's end. A port may name a
gateway that is not (or no longer) running: nginx then sends its calls to another, as a
platform's router does with an instance that comes or goes, and without a reload (which
closes the proxy's idle client connections).
"""

from __future__ import annotations

import getpass
import os
import re
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
GUIDE_CONFIG = Path(__file__).resolve().parents[1] / "config" / "nginx" / "pdpp-gateway.conf"
PREFIX = "/pdpp"  # the path prefix the guide's configuration serves the gateway under
_REPLICA = re.compile(r"^( *)server 127\.0\.0\.1:\d+( [^;]*;)\n", re.MULTILINE)


def guide_config(ports: list[int], listen: int, tls: TlsFiles, rs: str | None) -> str:
    """``config/nginx/pdpp-gateway.conf`` with its addresses replaced: one upstream server line
    per port in ``ports`` (each with the guide's own parameters), a listen on ``listen`` at the
    loopback address, ``tls``'s certificate and key, and ``rs`` (an origin) behind ``/``. Each
    replaced line must be in the file, or the tests would run something else than the guide."""
    text = GUIDE_CONFIG.read_text(encoding="utf-8")
    replicas = _REPLICA.findall(text)
    assert replicas, "the guide's upstream names no replica"
    indent, parameters = replicas[0]
    lines = "".join(f"{indent}server 127.0.0.1:{port}{parameters}\n" for port in ports)
    first = _REPLICA.search(text)
    assert first is not None
    text = text[: first.start()] + lines + _REPLICA.sub("", text[first.end() :])
    for old, new in (
        ("listen 443 ssl;", f"listen 127.0.0.1:{listen} ssl;"),
        ("ssl_certificate /etc/ssl/certs/data.example.com.pem;", f"ssl_certificate {tls.certificate};"),
        ("ssl_certificate_key /etc/ssl/private/data.example.com.key;", f"ssl_certificate_key {tls.key};"),
        ("proxy_pass http://127.0.0.1:7663;", f"proxy_pass {rs or 'http://127.0.0.1:9'};"),
    ):
        assert text.count(old) == 1, f"the guide's configuration no longer says {old!r}"
        text = text.replace(old, new)
    return text


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Nginx:
    directory: Path
    port: int
    tls: TlsFiles
    rs: str | None  # the RS's origin behind ``/``, when there is one
    prefix: str = PREFIX
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
        included = self.directory / "pdpp-gateway.conf"
        included.write_text(guide_config(ports, self.port, self.tls, self.rs), encoding="utf-8")
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
  include {included};
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
    directory: Path, ports: list[int], *, port: int = 0, rs: str | None = None
) -> Iterator[Nginx]:
    """nginx on ``port`` (a free one when 0) in front of the gateways on ``ports``."""
    binary = shutil.which("nginx") or next(
        (path for path in ("/usr/sbin/nginx", "/sbin/nginx") if Path(path).is_file()), None
    )
    if binary is None:
        pytest.skip("nginx is not installed (scripts/test installs it where apt is available)")
    directory.mkdir(parents=True, exist_ok=True)
    proxy = Nginx(directory, port or free_port(), tls_files(directory), rs)
    proxy.start(binary, ports)
    try:
        yield proxy
    finally:
        proxy.stop()
