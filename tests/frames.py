"""JSON-RPC frames the tests send to a gateway (stdio or hosted)."""

from __future__ import annotations

from typing import Any

PROTOCOL_VERSION = "2025-06-18"
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def initialize(request_id: int = 1) -> dict[str, Any]:
    """A fresh ``initialize`` request from a minimal client."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
