"""Import aiohttp without waiting, on the importing thread, for the system's CA bundle.

When its connector module is imported, aiohttp builds its two default TLS contexts, and each
reads the system CA bundle (``SSLContext.set_default_verify_paths``): about 35 ms apiece on
this project's reference machine, a quarter of what a stdio process does before its first
tool answer. OpenSSL parses the bundle without the interpreter lock, so the read can run
beside the imports that follow.

``import_aiohttp()`` imports aiohttp with those reads, and only those made by the importing
thread while it imports, handed to one helper thread each; it returns a ``TrustLoad``
whose ``wait()`` returns once every read has finished (re-raising a failure), after which
the contexts are exactly what aiohttp builds on its own. The caller waits before anything
can open a connection (the stdio loader waits before the session may read). A context made
by any other thread in that window loads its trust at once, as usual; if aiohttp is already
imported nothing is deferred.
"""

from __future__ import annotations

import importlib
import ssl
import sys
import threading
from collections.abc import Callable
from types import ModuleType


class TrustLoad:
    """The CA-bundle reads moved off the importing thread; ``wait()`` joins them."""

    def __init__(self) -> None:
        self._threads: list[threading.Thread] = []
        self._errors: list[BaseException] = []

    @property
    def deferred(self) -> int:
        return len(self._threads)

    def start(self, read: Callable[[ssl.SSLContext], None], context: ssl.SSLContext) -> None:
        def run() -> None:
            try:
                read(context)
            except BaseException as error:  # re-raised by wait(), on the caller's thread
                self._errors.append(error)

        thread = threading.Thread(target=run, name="tls-trust", daemon=True)
        self._threads.append(thread)
        thread.start()

    def wait(self) -> None:
        for thread in self._threads:
            thread.join()
        if self._errors:
            raise self._errors[0]


def import_aiohttp(name: str = "aiohttp") -> tuple[ModuleType, TrustLoad]:
    """Import aiohttp (or ``name``) with its CA-bundle reads in helper threads; ``wait()`` before
    connecting."""
    load = TrustLoad()
    if name in sys.modules:
        return sys.modules[name], load
    real = ssl.SSLContext.set_default_verify_paths
    importer = threading.get_ident()

    def read_aside(context: ssl.SSLContext) -> None:
        if threading.get_ident() == importer:
            load.start(real, context)
        else:
            real(context)

    ssl.SSLContext.set_default_verify_paths = read_aside  # type: ignore[method-assign,assignment]
    try:
        module = importlib.import_module(name)
    finally:
        ssl.SSLContext.set_default_verify_paths = real  # type: ignore[method-assign]
    return module, load
