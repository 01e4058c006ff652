"""The evidence ladder and its edges, end to end over stdio in both eras.

Expand gate, projection, protocol vs tool errors, blobs as resources, metadata-only
hits, small fields inline, binary fields with an explicit continuation.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import orjson
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.strict_client import error_of

pytestmark = pytest.mark.asyncio(loop_scope="module")
WORK = "cin_mail_work"


async def _call(client: Client, tool: str, **arguments: Any) -> tuple[Any, str]:
    result = await client.call_tool(tool, arguments)
    return result, result.content[0].text  # type: ignore[union-attr]


async def test_expand_gate_refuses_unadvertised_relations_before_reading_records(
    stdio_gateway: Client, shared_sandbox: Any
) -> None:
    shared_sandbox.calls.clear()
    result, text = await _call(
        stdio_gateway, "query_records", stream="threads", connection_id=WORK, expand=["messages"]
    )
    assert result.is_error
    assert error_of(result)["code"] == "invalid_expand"
    assert "'threads'" in text
    # the schema read (or none: the caller's memo knew the stream already), no records read
    assert {call.path for call in shared_sandbox.calls} <= {"/v1/schema"}


async def test_expand_gate_forwards_advertised_relations(stdio_gateway: Client) -> None:
    result, text = await _call(
        stdio_gateway,
        "query_records",
        stream="messages",
        connection_id=WORK,
        limit=2,
        expand=["message_bodies", "attachments"],
        expand_limit={"attachments": 1},
    )
    assert not result.is_error, result.structured_content
    for record in result.structured_content["data"]["data"]:
        body = record["expanded"]["message_bodies"]
        assert body["data"]["message_id"] == record["id"]  # has_one: one record
        assert record["expanded"]["attachments"]["object"] == "list"  # has_many, bounded
        # a content-only model sees the expanded handles, ready for fetch / read_record_field
        assert f"expanded message_bodies: {WORK}/message_bodies:{body['id']}; attachments: " in text


async def test_fetch_fields_projects_before_rendering(stdio_gateway: Client) -> None:
    result, text = await _call(
        stdio_gateway,
        "fetch",
        id=f"{WORK}/message_bodies:body_lisbon_lease",
        fields=["id", "message_received_at"],
    )
    document = result.structured_content
    assert "body_text" not in text  # the unrequested body never leaks into text or metadata
    assert set(orjson.loads(document["text"])) == {"id", "message_received_at"}
    assert "text_field" not in document["metadata"]  # no text-like field survived the projection


async def test_fetch_of_a_long_body_is_cut_with_an_explicit_continuation(stdio_gateway: Client) -> None:
    result, text = await _call(stdio_gateway, "fetch", id=f"{WORK}/message_bodies:body_porto_trip")
    document = result.structured_content
    assert document["metadata"]["text_truncated"] is True
    assert document["metadata"]["text_total_chars"] > 50_000
    assert len(text) < 14_000  # bounded, and the marker says so
    assert (
        'read_record_field {"id":"cin_mail_work/message_bodies:body_porto_trip","field":"body_text","offset_chars":12000}'
        in document["text"]
    )
    # or aimed at the words a model is after, which may lie anywhere in the 50k characters
    assert document["text"].endswith(
        'or pass it "near": "<the words you need>" in place of offset_chars to read where the field speaks of them'
    )


async def test_unknown_tool_is_a_protocol_error(stdio_gateway: Client) -> None:
    with pytest.raises(MCPError) as caught:
        await stdio_gateway.call_tool("export_everything", {})
    assert "Unknown tool" in caught.value.message


async def test_metadata_only_hits_show_no_invented_body_window(stdio_gateway: Client) -> None:
    result, text = await _call(stdio_gateway, "search", query="citystorage", mode="lexical", limit=3)
    hits = result.structured_content["results"]
    assert hits
    assert all(hit["evidence"] == [] for hit in hits)
    assert not re.search(r"^\s+evidence \w+:", text, re.M)  # no body window line
    assert "no text evidence (matched from_email)" in text
    assert f'fetch {{"id":"{hits[0]["id"]}"}}' in text


async def test_small_fields_come_back_whole_and_inline(stdio_gateway: Client) -> None:
    result, text = await _call(
        stdio_gateway,
        "read_record_field",
        connection_id=WORK,
        stream="messages",
        record_id="msg_work_0001",
        field="subject",
    )
    window = result.structured_content["window"]
    assert window["complete"] is True
    assert window["start_chars"] == 0
    assert window["end_chars"] == window["total_chars"]
    assert text.endswith(window["text"])
    assert "next:" not in text
    assert "pdpp://field-window" not in text


async def test_binary_fields_escalate_to_a_readable_blob_resource(stdio_gateway: Client) -> None:
    result, _ = await _call(stdio_gateway, "fetch", id=f"{WORK}/attachments:att_0000")
    metadata = result.structured_content["metadata"]
    assert metadata["blob_mime_type"] == "image/png"
    assert metadata["blob_size_bytes"] > 0
    read, text = await _call(
        stdio_gateway, "read_record_field", id=f"{WORK}/attachments:att_0000", field="blob_ref"
    )
    assert not read.is_error, text  # metadata and a continuation, not a bare 422
    blob = read.structured_content["blob"]
    assert blob == {
        "uri": metadata["blob_uri"],
        "blob_id": metadata["blob_id"],
        "media_type": "image/png",
        "size_bytes": metadata["blob_size_bytes"],
    }
    assert read.structured_content["window"]["text"] == ""  # never inline bytes
    assert "image/png" in text
    assert f"{metadata['blob_size_bytes']} bytes" in text
    uri = re.search(r"resource (pdpp://blob/\S+) ", text)
    assert uri, text
    assert uri.group(1) == metadata["blob_uri"]
    content = (await stdio_gateway.read_resource(uri.group(1))).contents[0]
    assert content.mime_type == "image/png"
    assert base64.b64decode(content.blob).startswith(b"\x89PNG")  # type: ignore[union-attr]


async def test_non_text_non_blob_fields_keep_the_rs_refusal(stdio_gateway: Client) -> None:
    refused, _ = await _call(
        stdio_gateway, "read_record_field", id=f"{WORK}/attachments:att_0000", field="size_bytes"
    )
    assert refused.is_error
    assert error_of(refused)["code"] == "field_not_text"


async def test_query_records_text_shows_readable_blob_uris(stdio_gateway: Client) -> None:
    _, text = await _call(stdio_gateway, "query_records", stream="attachments", connection_id=WORK)
    uris = re.findall(r'"blob":"([^"]+)","size_bytes":(\d+),"uri":"(pdpp://blob/[^"]+)"', text)
    assert len(uris) == 2, text
    for media_type, size, uri in uris:
        content = (await stdio_gateway.read_resource(uri)).contents[0]
        assert content.mime_type == media_type
        assert len(base64.b64decode(content.blob)) == int(size)  # type: ignore[union-attr]
