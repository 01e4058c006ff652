"""No dead ends: every handle any tool shows is callable as shown.

Calls every tool on the sandbox (over stdio, both eras), collects every handle from the
model-visible text AND the structured output (``pdpp://`` URIs, ``tool {json}`` calls,
read-more and fetch arguments, record ids, cursors), then calls each one, and the handles
those calls show in turn (two levels). Each must succeed: a resource read without a
protocol error, a tool call without ``isError``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from mcp import Client

pytestmark = pytest.mark.asyncio(loop_scope="module")
WORK = "cin_mail_work"
PORTO = f"{WORK}/message_bodies:body_porto_trip"
ATTACHMENT = f"{WORK}/attachments:att_0000"
TOOLS = ("schema", "query_records", "aggregate", "search", "fetch", "read_record_field")
_CALL = re.compile(r"\b(" + "|".join(TOOLS) + r") (\{.*\})$", re.M)
_URI = re.compile(r"pdpp://(?:record|blob|stream)/[^\s\"'<>)\]}]+")
RECORDS_PER_LIST = 6

START: list[tuple[str, dict[str, Any]]] = [
    ("schema", {}),
    ("schema", {"stream": "messages"}),
    ("query_records", {"stream": "messages", "limit": 3}),
    ("query_records", {"stream": "messages", "connection_id": WORK, "limit": 5}),
    ("query_records", {"stream": "message_bodies", "connection_id": WORK, "limit": 25}),
    ("query_records", {"stream": "attachments", "connection_id": WORK}),
    (
        "aggregate",
        {
            "stream": "messages",
            "connection_id": WORK,
            "metric": "count",
            "group_by_time": "received_at",
            "granularity": "quarter",
        },
    ),
    ("search", {"query": "invoice", "limit": 25}),
    ("search", {"query": "citystorage", "limit": 3}),
    ("search", {"query": "Porto booking confirmation code", "limit": 5}),
    ("search", {"query": "lisbon apartment lease", "mode": "semantic", "limit": 5}),
    ("search", {"query": "storage unit locker", "mode": "hybrid", "limit": 5}),
    ("fetch", {"id": PORTO}),
    ("fetch", {"id": ATTACHMENT}),
    ("read_record_field", {"id": PORTO, "field": "body_text", "limit_chars": 2000}),
    ("read_record_field", {"id": PORTO, "field": "body_text", "offset_chars": 1_000_000}),
    ("read_record_field", {"id": ATTACHMENT, "field": "blob_ref"}),
]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _handles(
    tool: str, arguments: dict[str, Any], text: str, structured: dict[str, Any]
) -> tuple[list[tuple[str, dict[str, Any]]], set[str]]:
    """Every (tool, arguments) continuation and pdpp:// URI shown by one result."""
    calls: list[tuple[str, dict[str, Any]]] = []
    uris: set[str] = set()
    try:  # fetch's text is its document as JSON: read the strings a model would unescape
        texts = list(_strings(orjson.loads(text)))
    except orjson.JSONDecodeError:
        texts = [text]
    for shown in [*texts, *_strings(structured)]:
        uris.update(_URI.findall(shown))
        for name, raw in _CALL.findall(shown):
            calls.append((name, orjson.loads(raw)))
        for cursor in re.findall(r"^next_cursor=(\S+)", shown, re.M):
            calls.append((tool, {**arguments, "cursor": cursor}))
        for handle, rest in re.findall(r"^\[\d+\] (?:id=)?(\S+)((?: connection_id=\S+)?)", shown, re.M)[
            :RECORDS_PER_LIST
        ]:
            if ":" in handle:
                extra = {"connection_id": rest.split("=", 1)[1]} if rest else {}
                calls.append(("fetch", {"id": handle, **extra}))
    for hit in structured.get("results") or []:
        calls.append(("fetch", {"id": hit["id"]}))
        for evidence in hit.get("evidence") or []:
            if "read" in evidence:  # a short field shown whole has nothing more to read
                calls.append((evidence["read"]["tool"], evidence["read"]["arguments"]))
    data = structured.get("data")
    if isinstance(data, dict) and data.get("next_cursor"):
        calls.append((tool, {**arguments, "cursor": data["next_cursor"]}))
    if tool == "query_records" and isinstance(data, dict):
        for record in (data.get("data") or [])[:RECORDS_PER_LIST]:
            legacy = f"{record.get('stream') or arguments['stream']}:{record['id']}"
            calls.append(("fetch", {"id": legacy, "connection_id": record["connection_id"]}))
    if "blob" in structured and isinstance(structured["blob"], dict):
        uris.add(structured["blob"]["uri"])
    return calls, uris


async def test_every_shown_handle_is_callable(stdio_gateway: Client) -> None:
    queue = [(tool, arguments, 0) for tool, arguments in START]
    done_calls: set[str] = set()
    done_uris: set[str] = set()
    checked = {"calls": 0, "uris": 0, "kinds": set()}
    while queue:
        tool, arguments, depth = queue.pop(0)
        key = tool + orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS).decode()
        if key in done_calls:
            continue
        done_calls.add(key)
        result = await stdio_gateway.call_tool(tool, arguments)
        text = result.content[0].text  # type: ignore[union-attr]
        assert not result.is_error, (tool, arguments, text)
        checked["calls"] += 1  # type: ignore[operator]
        checked["kinds"].add(tool)  # type: ignore[attr-defined]
        if depth >= 2:
            continue
        calls, uris = _handles(tool, arguments, text, result.structured_content or {})
        queue.extend((name, args, depth + 1) for name, args in calls)
        for uri in sorted(uris - done_uris):
            done_uris.add(uri)
            read = await stdio_gateway.read_resource(uri)  # raises on a dead URI
            assert read.contents, uri
            checked["uris"] += 1  # type: ignore[operator]
    assert checked["kinds"] == set(TOOLS)
    assert checked["calls"] > 60  # type: ignore[operator]
    assert {uri.split("/")[2] for uri in done_uris} >= {"blob"}
