"""A throw-away certificate authority and a server certificate for 127.0.0.1, for tests.

``tls_files(directory)`` makes them with the ``openssl`` command (Debian's, which nginx's
tests need anyway), or skips the test and says why. Clients trust the test CA through
``TlsFiles.client_context()``: verification stays on, only the trust anchor is the test's.
"""

from __future__ import annotations

import shutil
import ssl
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True, slots=True)
class TlsFiles:
    ca: Path
    certificate: Path
    key: Path

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))


def tls_files(directory: Path) -> TlsFiles:
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("the openssl command is not installed (it makes the proxy's test certificate)")
    ca, ca_key = directory / "ca.pem", directory / "ca.key"
    certificate, key = directory / "server.pem", directory / "server.key"
    key_options = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"]
    _run(
        openssl,
        "req", "-x509", *key_options, "-keyout", ca_key, "-out", ca, "-subj", "/CN=pdpp-gateway test CA",
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    _run(
        openssl,
        "req", "-x509", *key_options, "-keyout", key, "-out", certificate, "-subj", "/CN=127.0.0.1",
        "-CA", ca, "-CAkey", ca_key,
        "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-addext", "basicConstraints=critical,CA:FALSE",
        "-addext", "keyUsage=critical,digitalSignature",
        "-addext", "extendedKeyUsage=serverAuth",
    )  # fmt: skip
    return TlsFiles(ca, certificate, key)


def _run(*args: str | Path) -> None:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, check=False, timeout=60)  # noqa: S603
    if done.returncode != 0:
        raise RuntimeError(f"openssl failed: {done.stderr.strip()[-500:]}")
