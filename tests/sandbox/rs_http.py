"""Talking to the sandbox RS over HTTP in the route tests: one GET, and the paths they share.

``get(sandbox, path, token)`` sends ``Authorization: Bearer`` with the named fixture token
(or the literal one given, or none) and returns (status, body: JSON or bytes, headers).
``token_of`` encodes a payload the way the sandbox encodes its cursors and tokens, so a
test can forge one.
"""

from __future__ import annotations

import base64
from typing import Any

import aiohttp
import orjson

Q = "/v1/streams/messages/records"
WORK = "connection_id=cin_mail_work"
WINDOW = "/v1/streams/message_bodies/records/body_lisbon_lease/field-window?" + WORK


async def get(
    sandbox: Any, path: str, token: str | None = "client_broad", **headers: str
) -> tuple[int, Any, Any]:
    if token is not None:
        headers["Authorization"] = f"Bearer {sandbox.tokens.get(token, token)}"
    async with (
        aiohttp.ClientSession() as session,
        session.get(sandbox.url + path, headers=headers) as response,
    ):
        raw = await response.read()
        body = orjson.loads(raw) if response.content_type == "application/json" else raw
        return response.status, body, response.headers


def basic(user: str, secret: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode()


def token_of(payload: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(payload, option=orjson.OPT_SORT_KEYS)).decode().rstrip("=")
