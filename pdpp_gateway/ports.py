"""Default ports that step aside: the sandbox and the demo take their usual port when it is
free, and any free one (said on stderr) when another program holds it.

Contract: ``port_or_free(host, asked, default, what)``: ``asked`` (a ``--port`` the person
typed) is returned as it is, busy or not, so a busy explicit port still fails with its
own one-line error; with none asked, ``default`` when it can be bound on ``host`` now,
else ``0`` (the server picks a free one) after one stderr line naming the busy port.
"""

from __future__ import annotations

import errno
import socket
import sys


def port_or_free(host: str, asked: int | None, default: int, what: str) -> int:
    if asked is not None:
        return asked
    if _free(host, default):
        return default
    print(
        f"pdpp-gateway: port {default} is in use by another program; the {what} takes a free port instead "
        f"(--{'gateway-' if 'gateway' in what else ''}port chooses one)",
        file=sys.stderr,
        flush=True,
    )
    return 0


def _free(host: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the servers bind
        try:
            probe.bind((host, port))
        except OSError as error:  # another problem than a busy port: the server's own bind says it
            return error.errno != errno.EADDRINUSE
    return True
