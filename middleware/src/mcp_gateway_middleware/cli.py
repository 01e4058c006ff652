"""The way in for a small MCP gateway: stdio, or Streamable HTTP behind API keys, from one call.

Contract (extra ``mcp``; ``--http aiohttp`` needs the extra ``http`` too):

- ``run(server_for, description=..., http="asgi")`` parses the command line and serves until stopped:

  - ``--stdio`` (or no ``--keys``): ``server_for(lambda ctx: "local")`` over stdio (one local
    caller, no door: the process's own user);
  - ``--keys keys.json [--host H] [--port P] [--http asgi|aiohttp]``: Streamable HTTP behind the
    door (``sdk.asgi_app``, the SDK's app on uvicorn, or ``sdk_aiohttp.mcp_app``; ``http`` is
    the default), where
    ``keys.json`` is ``{"<API key>": "<caller name>"}`` (keys stay off the command line) and
    ``server_for(caller_of)`` gets the function naming the caller the door accepted
    (``caller_of(ctx)``). It prints ``<name> on http://H:P/mcp`` once listening
    (``--port 0`` picks a free port).
- ``api_keys(keys)``: the door's ``authenticate`` over such a table: ``Authorization: Bearer
  <key>`` of a listed key answers its caller; anything else a 401 ``unknown_key`` that never
  echoes what was sent.
- A keys file that cannot be read, or is not such an object, ends the program with a message
  saying what to write (never a traceback).
"""

from __future__ import annotations

try:
    import mcp  # noqa: F401 - only to say which extra is missing, plainly
except ModuleNotFoundError as missing:  # test_installs_alone reads this message
    raise ModuleNotFoundError(
        "mcp_gateway_middleware.cli needs the MCP SDK: pip install 'mcp-gateway-middleware[mcp]'"
    ) from missing

import argparse
import json
import socket
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from mcp.server import Server, ServerRequestContext

from mcp_gateway_middleware import asgi
from mcp_gateway_middleware.doors import Refusal
from mcp_gateway_middleware.sdk import asgi_app, serve_stdio

__all__ = ["CallerOf", "api_keys", "run"]

CallerOf = Callable[[ServerRequestContext], Any]


def api_keys(keys: Mapping[str, str]) -> Callable[[str | None], Awaitable[str | Refusal]]:
    """``authenticate`` for a table of API keys (module contract)."""
    refusal = Refusal(401, "unknown_key", "Send a known API key: Authorization: Bearer <key>.")

    async def authenticate(header: str | None) -> str | Refusal:
        scheme, _, key = (header or "").partition(" ")
        caller = keys.get(key.strip()) if scheme.lower() == "bearer" else None
        return caller or refusal

    return authenticate


def run(server_for: Callable[[CallerOf], Server[Any]], *, description: str, http: str = "asgi") -> None:
    """Serve ``server_for``'s server as the command line says (module contract)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--stdio", action="store_true", help="serve one local caller over stdio (the default)"
    )
    parser.add_argument("--keys", type=Path, help='JSON file {"<API key>": "<caller name>"}: serve HTTP')
    parser.add_argument("--http", choices=["asgi", "aiohttp"], default=http)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8080, help="0 picks a free port")
    options = parser.parse_args()
    if options.stdio or options.keys is None:
        serve_stdio(server_for(lambda ctx: "local"))
        return
    authenticate = api_keys(_read_keys(options.keys))
    with socket.create_server((options.host, options.port)) as listening:
        url = f"http://{options.host}:{listening.getsockname()[1]}/mcp"
        if options.http == "aiohttp":
            _serve_aiohttp(server_for, authenticate, options.host, listening, url)
        else:
            _serve_asgi(server_for, authenticate, options.host, listening, url)


def _serve_asgi(server_for: Any, authenticate: Any, host: str, listening: socket.socket, url: str) -> None:
    import uvicorn

    app = asgi_app(server_for(lambda ctx: asgi.accepted(ctx.request)), authenticate=authenticate, host=host)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(f"{server_for.__name__} on {url}", flush=True)
    server.run(sockets=[listening])


def _serve_aiohttp(server_for: Any, authenticate: Any, host: str, listening: socket.socket, url: str) -> None:
    from aiohttp import web

    from mcp_gateway_middleware import http
    from mcp_gateway_middleware.sdk_aiohttp import mcp_app

    app = mcp_app(server_for(lambda ctx: http.accepted(ctx.request)), host=host, authenticate=authenticate)
    print(f"{server_for.__name__} on {url}", flush=True)
    web.run_app(app, sock=listening, print=None, access_log=None)


def _read_keys(path: Path) -> dict[str, str]:
    try:
        keys = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SystemExit(f"cannot read the keys file {path}: {type(error).__name__}") from None
    if not isinstance(keys, dict) or not keys or not all(isinstance(v, str) for v in keys.values()):
        raise SystemExit(
            f'{path} must be a JSON object {{"<API key>": "<caller name>", ...}} with one key or more.'
        )
    return keys
