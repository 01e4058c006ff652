"""JSON-RPC error codes the gateway answers with, and the one HTTP status → code table.

Contract (standard library and the middleware library's framework-free door only: the stdio
door words errors before the SDK has loaded):

- ``for_status(status, caller_fault=...)`` is the code of a refusal or failure that an
  HTTP status describes, on every door and for tool calls and resource reads alike:

  =========  ====================================================================
  401, 403   ``CREDENTIAL_REFUSED`` (-32001): no usable credential for this read
  404        ``NOT_FOUND`` (-32002): the resource does not exist (the 2026-07-28 era
             retired it; ``resources`` answers ``INVALID_PARAMS`` there)
  429        ``RATE_LIMITED`` (-32029): too many calls, retry after the stated wait
  503, 504   ``UNAVAILABLE`` (-32000): try again shortly
  other 4xx  ``caller_fault``: the caller's mistake, as the door names it (the hosted
             door's malformed request ``INVALID_REQUEST``, a bad URI ``INVALID_PARAMS``)
  the rest   ``INTERNAL_ERROR`` (-32603)
  =========  ====================================================================

- The JSON-RPC 2.0 codes (``PARSE_ERROR``, ``INVALID_REQUEST``, ``INVALID_PARAMS``,
  ``INTERNAL_ERROR``) are named here once; the server-defined ones above and the hosted
  door's ``SERVER_RESTARTING`` too, and ``HANDLER_EXCEPTION`` (0), the code the SDK's
  stdio dispatcher answers an exception out of a handler with (kept for its v1 clients).
"""

from __future__ import annotations

from typing import Final

from mcp_gateway_middleware.doors import RPC_CODES, rpc_code

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
UNAVAILABLE: Final = -32000  # try again shortly
CREDENTIAL_REFUSED: Final = -32001  # no usable credential
NOT_FOUND: Final = -32002  # resource not found (handshake era)
SERVER_RESTARTING: Final = -32003  # the server stopped the call
RATE_LIMITED: Final = -32029  # too many requests
HANDLER_EXCEPTION: Final = 0  # the SDK's stdio answer to a handler's exception


BY_STATUS: Final = RPC_CODES  # the statuses with a code of their own (the table above)


def for_status(status: int, *, caller_fault: int) -> int:
    """The JSON-RPC code for a refusal or failure with HTTP ``status`` (module table: the
    library door's ``mcp_gateway_middleware.doors.RPC_CODES``, whose codes are named above)."""
    return rpc_code(status, caller_fault=caller_fault)
