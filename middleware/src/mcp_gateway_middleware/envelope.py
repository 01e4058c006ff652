"""One posted JSON-RPC message's envelope, checked before any server reads it: framework-free.

Contract (standard library only; ``sdk_aiohttp`` uses it, and so may any door that reads a body):

- ``envelope_fault(message)`` checks a decoded JSON body, in this order, else ``None``:

  1. not one object (a batch, a scalar) → ``Fault("batch", INVALID_REQUEST, None)``;
  2. ``"jsonrpc"`` not ``"2.0"``, ``method`` not a string, or an ``id`` that is neither a string
     nor an integer (a boolean is not one) → ``Fault("envelope", INVALID_REQUEST, id)``;
  3. ``params`` present, not ``null`` and not an object → ``Fault("params", INVALID_PARAMS, id)``.

  ``id`` is the message's own id only when it is a valid one and ``method`` is a string (JSON-RPC
  2.0 §5 keeps ``null`` for a request whose id could not be read), else ``None``. A message
  without ``id`` is a notification, which passes with no id to echo.
- ``Fault.reason`` lets a gateway word each case its own way; ``Fault.code`` is the typed code
  (``invalid_request``, ``invalid_params``); both doors answer a fault with HTTP 400.
- ``valid_id(value)``: whether ``value`` can be a JSON-RPC request id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["INVALID_PARAMS", "INVALID_REQUEST", "Fault", "envelope_fault", "valid_id"]

INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602


@dataclass(frozen=True, slots=True)
class Fault:
    reason: Literal["batch", "envelope", "params"]
    rpc_code: int
    request_id: str | int | None  # the id to answer with

    @property
    def code(self) -> str:
        return "invalid_params" if self.reason == "params" else "invalid_request"


def valid_id(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def envelope_fault(message: object) -> Fault | None:
    """What is wrong with this decoded message's envelope (module contract), else ``None``."""
    if not isinstance(message, dict):
        return Fault("batch", INVALID_REQUEST, None)
    notification = "id" not in message
    method = message.get("method")
    id_valid = not notification and valid_id(message["id"])
    echo = message["id"] if id_valid and isinstance(method, str) else None
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str) or not (notification or id_valid):
        return Fault("envelope", INVALID_REQUEST, echo)
    if message.get("params") is not None and not isinstance(message["params"], dict):
        return Fault("params", INVALID_PARAMS, echo)
    return None
