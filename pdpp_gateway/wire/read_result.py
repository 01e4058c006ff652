"""A resource read's JSON-RPC ``result`` as the SDK writes it, shaped without the SDK.

Contract (orjson and the standard library only: the stdio door answers reads with it
before the SDK has loaded; ``tests/wire`` holds it to the SDK's bytes):

- ``json_contents(uri, body)``: one JSON body as the SDK writes a text resource,
  ``{"mimeType": "application/json", "text": <body indented by two>, "uri"}``;
  ``blob_contents(uri, data, mime_type)``: bytes as ``{"blob": <base64>, "mimeType", "uri"}``.
- ``result_wire(contents, modern=..., stamp=...)``: the read's ``result``; in the
  2026-07-28 era with the SDK's defaults (``cacheScope`` ``private``, ``resultType``,
  ``ttlMs`` 0) and the server's identity ``stamp`` (``envelope.stamped``).
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

from pdpp_gateway.wire.envelope import COMPLETE, RESULT_TYPE, stamped


def json_contents(uri: str, body: Any) -> dict[str, Any]:
    return {
        "mimeType": "application/json",
        "text": orjson.dumps(body, option=orjson.OPT_INDENT_2).decode(),
        "uri": uri,
    }


def blob_contents(uri: str, data: bytes, mime_type: str) -> dict[str, Any]:
    return {"blob": base64.b64encode(data).decode("ascii"), "mimeType": mime_type, "uri": uri}


def result_wire(
    contents: list[dict[str, Any]], *, modern: bool, stamp: dict[str, Any] | None
) -> dict[str, Any]:
    if not modern:
        return {"contents": contents}
    return stamped({"cacheScope": "private", "contents": contents, RESULT_TYPE: COMPLETE, "ttlMs": 0}, stamp)
