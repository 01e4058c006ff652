"""Builds ``answers.json``: the SDK's own answers to the requests the stdio door answers early.

Run ``python -m pdpp_gateway.fast_start.build`` after changing the tools, the
instructions, the server's identity or the ``mcp`` version (``--check`` only compares);
``tests/fast_start`` fails until the file matches what the SDK produces.

Contract:

- ``sdk_frames(lines, name=...)`` feeds raw stdin lines to the gateway's real ``Server``
  (``build_server``, or the ``server`` given) over memory streams, parsed exactly as the
  SDK's ``stdio_server`` parses them, and returns every frame the server writes,
  serialised exactly as ``stdio_server`` writes them (no trailing newline). To the
  gateway's own server only requests it answers without a caller context may be sent (no
  tool calls, no resource reads); ``tests/wire`` passes servers of its own for those.
- ``build_table()`` holds, per protocol version the SDK serves, the ``result`` text of
  each early-answered method, with the server name replaced by ``NAME_PLACEHOLDER``,
  plus the SDK's version lists and the server identity it stamps into a 2026-era result
  (``server_info``), so the early path never restates a protocol fact.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final

import anyio
import mcp.types as types
import orjson
from mcp.server import Server, ServerRequestContext
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION, MODERN_PROTOCOL_VERSIONS

from pdpp_gateway import __version__
from pdpp_gateway.context import GatewayContext
from pdpp_gateway.fast_start.answers import (
    ANSWERS_PATH,
    HANDSHAKE_METHODS,
    MODERN_METHODS,
    NAME_PLACEHOLDER,
    sources_crc32,
)
from pdpp_gateway.server import build_server
from pdpp_gateway.wire.plain import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY

ANSWER_SECONDS: Final = 10.0


def _no_context(_ctx: ServerRequestContext) -> GatewayContext:
    raise RuntimeError("the early answers never need a caller context")


def sdk_frames(lines: list[str], *, name: str = NAME_PLACEHOLDER, server: Server | None = None) -> list[str]:
    """The frames the gateway's SDK server named ``name`` (or ``server``) writes for ``lines``
    (one JSON-RPC message each)."""
    return anyio.run(_serve, lines, server or build_server(_no_context, name=name))


async def _serve(lines: list[str], server: Server) -> list[str]:
    inbound_send, inbound_receive = anyio.create_memory_object_stream[SessionMessage | Exception](len(lines))
    outbound_send, outbound_receive = anyio.create_memory_object_stream[SessionMessage](len(lines))
    requests = 0
    frames: list[str] = []
    async with inbound_receive, outbound_receive, anyio.create_task_group() as group:
        group.start_soon(server.run, inbound_receive, outbound_send, server.create_initialization_options())
        async with inbound_send:
            for line in lines:
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError as error:  # as stdio_server: the loop is told, nothing is answered
                    await inbound_send.send(error)
                    continue
                requests += isinstance(message, types.JSONRPCRequest)
                await inbound_send.send(SessionMessage(message))
            with anyio.fail_after(ANSWER_SECONDS):
                while len(frames) < requests:
                    answer = await outbound_receive.receive()
                    frames.append(answer.message.model_dump_json(by_alias=True, exclude_unset=True))
    return frames


def _request(request_id: int, method: str, params: dict[str, Any] | None = None) -> str:
    frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        frame["params"] = params
    return orjson.dumps(frame).decode()


def envelope(protocol_version: str) -> dict[str, Any]:
    """The 2026-era ``_meta`` envelope of a minimal client."""
    return {
        "_meta": {
            PROTOCOL_VERSION_KEY: protocol_version,
            CLIENT_INFO_KEY: {"name": "build", "version": "1"},
            CLIENT_CAPABILITIES_KEY: {},
        }
    }


def _results(lines: list[str], methods: tuple[str, ...]) -> dict[str, str]:
    """Each method's ``result`` text, by the request id it was sent with (1, 2, ...)."""
    frames = sdk_frames(lines, name=NAME_PLACEHOLDER)
    results: dict[str, str] = {}
    for frame in frames:
        request_id = orjson.loads(frame)["id"]
        prefix = f'{{"jsonrpc":"2.0","id":{request_id},"result":'
        if not (frame.startswith(prefix) and frame.endswith("}")):
            raise RuntimeError(f"the SDK did not answer request {request_id} with a result: {frame[:200]}")
        results[methods[request_id - 1]] = frame[len(prefix) : -1]
    return results


def build_table() -> dict[str, Any]:
    handshake: dict[str, dict[str, str]] = {}
    for protocol_version in HANDSHAKE_PROTOCOL_VERSIONS:
        opening = {
            "protocolVersion": protocol_version,
            "capabilities": {},
            "clientInfo": {"name": "build", "version": "1"},
        }
        lines = [_request(1, "initialize", opening), '{"jsonrpc":"2.0","method":"notifications/initialized"}']
        lines += [_request(index, method) for index, method in enumerate(HANDSHAKE_METHODS[1:], start=2)]
        handshake[protocol_version] = _results(lines, HANDSHAKE_METHODS)
    modern: dict[str, dict[str, str]] = {}
    for protocol_version in MODERN_PROTOCOL_VERSIONS:
        lines = [
            _request(index, method, envelope(protocol_version))
            for index, method in enumerate(MODERN_METHODS, start=1)
        ]
        modern[protocol_version] = _results(lines, MODERN_METHODS)
    return {
        "gateway_version": __version__,
        "sources_crc32": sources_crc32(),
        "sdk_version": version("mcp"),
        "handshake_versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
        "latest_handshake_version": LATEST_HANDSHAKE_VERSION,
        "modern_versions": list(MODERN_PROTOCOL_VERSIONS),
        "handshake": handshake,
        "modern": modern,
        # What the SDK stamps into a 2026-era result's ``_meta`` (a tool call's too).
        "server_info": orjson.dumps(
            build_server(_no_context, name=NAME_PLACEHOLDER).server_info_stamp
        ).decode(),
    }


def render(table: dict[str, Any]) -> bytes:
    return orjson.dumps(table, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale; write nothing")
    args = parser.parse_args(argv)
    wanted = render(build_table())
    current = ANSWERS_PATH.read_bytes() if ANSWERS_PATH.exists() else b""
    if args.check:
        if current != wanted:
            print(f"{ANSWERS_PATH} is stale: run python -m pdpp_gateway.fast_start.build", file=sys.stderr)
            return 1
        return 0
    if current != wanted:
        Path(ANSWERS_PATH).write_bytes(wanted)
        print(f"wrote {ANSWERS_PATH}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
