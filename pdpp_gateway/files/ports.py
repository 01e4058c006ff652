"""Default ports that step aside, and stay put: the sandbox and the demo take the port they
had last time when it is free, else their usual one, else any free one, saying so on stderr.

Contract: ``port_or_free(host, asked, default, what, last=None)``: ``asked`` (a ``--port`` the
person typed) is returned as it is, busy or not, so a busy explicit port still fails with its
own one-line error. With none asked: ``last`` (the port this server took last time, from
``LastPorts``) when it can be bound on ``host`` now, with one stderr line when it is not the
default (so a client entry that names it keeps working); else ``default`` when free; else a
free port the system gives (a real number, so what is keyed by the port can be found before
the server binds), after one stderr line naming the busy port.

``LastPorts(path)``: the ports each server chose by itself last time, by role and host, in
one small JSON file (written whole, 0600, ``files.private``); ``path=None`` remembers
nothing. An unreadable file is taken as empty and replaced at the next ``remember``.
"""

from __future__ import annotations

import errno
import json
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from pdpp_gateway.files.private import write_private


def port_or_free(host: str, asked: int | None, default: int, what: str, last: int | None = None) -> int:
    if asked is not None:
        return asked
    flag = f"--{'gateway-' if 'gateway' in what else ''}port"
    if last is not None and last != default:
        if _free(host, last):
            _say(f"the {what} takes port {last} again, as last time ({flag} chooses another)")
            return last
        _say(
            f"port {last}, which the {what} took last time, is in use by another program "
            "(a client entry that names it needs the new address)"
        )
    if _free(host, default):
        return default
    _say(
        f"port {default} is in use by another program; the {what} takes a free port instead ({flag} chooses one)"
    )
    return _any_free(host)


@dataclass(frozen=True, slots=True)
class LastPorts:
    path: Path | None

    def get(self, role: str, host: str) -> int | None:
        port = self._read().get(f"{role}@{host}")
        return port if isinstance(port, int) and 0 < port < 65536 else None

    def remember(self, host: str, ports: dict[str, int]) -> None:
        """Record ``ports`` (role -> port) taken on ``host``, keeping the other roles'."""
        if self.path is None or not ports:
            return
        known = self._read() | {f"{role}@{host}": port for role, port in ports.items()}
        write_private(self.path, json.dumps(known, indent=2, sort_keys=True))

    def _read(self) -> dict[str, object]:
        if self.path is None:
            return {}
        try:
            known = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return known if isinstance(known, dict) else {}


def _say(text: str) -> None:
    print(f"pdpp-gateway: {text}", file=sys.stderr, flush=True)


def _family(host: str) -> socket.AddressFamily:
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def _free(host: str, port: int) -> bool:
    with socket.socket(_family(host), socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
        try:
            probe.bind((host, port))
        except OSError as error:  # another problem than a busy port: the server's own bind says it
            return error.errno != errno.EADDRINUSE
    return True


def _any_free(host: str) -> int:
    with socket.socket(_family(host), socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, 0))
        except OSError:  # the server's own bind on this host says what is wrong
            return 0
        port: int = probe.getsockname()[1]
        return port
