"""Resource reads through their pipeline, in process against the sandbox RS: a blob past the
cap is refused with its size, never cut; an unknown URI, or one outside the grant, is the
caller's to fix."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError
from mcp_gateway_middleware import ToolError

from pdpp_gateway.local.credentials import load_credentials, write_credential
from pdpp_gateway.local.package import MemberStart
from pdpp_gateway.local.readers import caller_context
from pdpp_gateway.resources import reads as resource_reads
from pdpp_gateway.resources.answers import error_object
from pdpp_gateway.resources.handlers import read

BLOB = "pdpp://blob/cin_mail_work/blob_receipt_png"


async def test_a_blob_past_the_cap_is_refused_with_its_size(
    shared_sandbox: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_credential(tmp_path, shared_sandbox.url, shared_sandbox.tokens["client_broad"])
    members = [MemberStart(c.provider_url, c) for c in load_credentials(shared_sandbox.url, tmp_path)]
    async with contextlib.AsyncExitStack() as stack:
        context = await caller_context(stack, members, tmp_path)
        whole = await read(context, BLOB)
        size = len(whole.contents[0].blob) * 3 // 4  # base64: about 4 characters per 3 bytes
        monkeypatch.setattr(resource_reads, "MAX_BLOB_BYTES", 16)
        with pytest.raises(MCPError) as capped:
            await read(context, BLOB)
        with pytest.raises(MCPError) as unknown:
            await read(context, "pdpp://folder/x")
    assert size > 16
    assert capped.value.error.code == -32602
    assert capped.value.error.data["code"] == "blob_too_large"
    assert "resource reads stop at 16 bytes" in capped.value.error.message
    assert capped.value.error.data["uri"] == BLOB
    assert unknown.value.error.code == -32602
    assert "readable: pdpp://stream/{name}" in unknown.value.error.message


async def test_a_uri_outside_the_grant_is_the_callers_to_fix(shared_sandbox: Any, tmp_path: Path) -> None:
    write_credential(tmp_path, shared_sandbox.url, shared_sandbox.tokens["client_work_mail"])
    members = [MemberStart(c.provider_url, c) for c in load_credentials(shared_sandbox.url, tmp_path)]
    async with contextlib.AsyncExitStack() as stack:
        context = await caller_context(stack, members, tmp_path)
        with pytest.raises(MCPError) as other_source:
            await read(context, "pdpp://record/cin_slack_acme%2Fmessages%3Ax")
        with pytest.raises(MCPError) as other_stream:
            await read(context, "pdpp://stream/issues")
    # the RS answers 401 (the reference's own codes), yet the credential is fine: fix the URI
    assert other_source.value.error.code == -32602
    assert other_source.value.error.data["code"] == "context.instance_mismatch"
    assert "not granted for this stream" in other_source.value.error.message
    assert other_stream.value.error.code == -32602
    assert other_stream.value.error.data["code"] == "context.stream_not_allowed"
    # its data says what the message says (the tool error's words), not the RS's failed token
    # check with advice to get another credential
    for refused in (other_source.value.error.data, other_stream.value.error.data):
        assert refused["type"] == "permission_error"
        assert "Token introspection" not in refused["message"]
        assert "resource_metadata" not in refused
        assert "owner" not in refused["next_step"]
    assert 'Stream "issues" is not in this grant' in other_stream.value.error.data["message"]
    assert "call schema()" in other_stream.value.error.data["next_step"]


@pytest.mark.parametrize(
    ("rs_message", "said"),
    [
        ("Token introspection failed closed", "Token introspection failed closed. That connection_id"),
        ("Connection not granted.", "Connection not granted. That connection_id"),
        ("Is it granted?", "Is it granted? That connection_id"),
    ],
)
def test_the_rs_message_and_the_next_step_read_as_two_sentences(rs_message: str, said: str) -> None:
    """The reference RS words some refusals without a full stop; the step after it must not run on
    (a refusal whose words the gateway keeps: a stream URI names no connection to word it by)."""
    refused = ToolError(
        {"type": "authentication_error", "code": "context.instance_mismatch", "message": rs_message},
        http_status=401,
    )
    message = error_object(refused, "pdpp://stream/issues", modern=False)["message"]
    assert message.startswith(f"context.instance_mismatch: {said} is not granted for this stream")
