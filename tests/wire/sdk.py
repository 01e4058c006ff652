"""The oracle: what the real SDK writes, over stdio, for one request to a server of ours.

``sdk_answer(server, method, params, modern=...)`` opens a session with ``server`` in the
handshake era (``initialize``) or sends the request with the 2026-07-28 envelope, and
returns the frame the SDK writes for the request (id 7), newline included, exactly as its
``stdio_server`` writes it (``fast_start.build.sdk_frames``).
"""

from __future__ import annotations

import json
from typing import Any, Final

from hypothesis import strategies as st
from mcp.server import Server

from pdpp_gateway.fast_start.build import envelope, sdk_frames

V2026: Final = "2026-07-28"
HANDSHAKE: Final = "2025-11-25"
REQUEST_ID: Final = 7
OPENING: Final = [
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": HANDSHAKE,
                "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    ),
    '{"jsonrpc":"2.0","method":"notifications/initialized"}',
]
# JSON values the pipeline's results and RS bodies hold: orjson writes each (64-bit integers,
# finite floats, text without lone surrogates).
JSON_LEAVES: Final = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
JSON_VALUES: Final = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)
JSON_OBJECTS: Final = st.dictionaries(st.text(), JSON_VALUES, max_size=5)


def sdk_answer(server: Server, method: str, params: dict[str, Any], *, modern: bool) -> bytes:
    if modern:
        params = {**params, **envelope(V2026)}
    request = json.dumps({"jsonrpc": "2.0", "id": REQUEST_ID, "method": method, "params": params})
    frames = sdk_frames([request] if modern else [*OPENING, request], server=server)
    return (frames[-1] + "\n").encode()
