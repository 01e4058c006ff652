"""One owner token, every door: the same cause is refused with the same code and words.

The hosted ``/mcp`` (403 JSON-RPC), the stdio door at start (exit 77), the stdio door
when the RS could only be asked at the first read (a typed tool error), and a terminal
command (exit 77) all render ``owner_token_refused`` from the one refusal table, each
with its own way to a scoped grant, and none reads data with the token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp import Client

from pdpp_gateway.caller import Rejection
from pdpp_gateway.hosted.embedded import start_gateway
from pdpp_gateway.local.credentials import write_credential
from pdpp_gateway.refusals import REFUSALS, explain, local_connect
from pdpp_gateway.sandbox.fronting import sandbox_settings
from tests.conftest import run_cli, stdio_params
from tests.hosted.test_bearer_check import post
from tests.strict_client import error_of
from tests.upstreams import Switchboard

OWNER = Rejection("owner_token_refused", kind="owner")
SAID, _ = explain(OWNER, "")  # the table's words for the cause, whichever door says them


async def test_an_owner_token_reads_the_same_refusal_at_every_door(
    tmp_path: Path, shared_sandbox: Any
) -> None:
    owner = shared_sandbox.tokens["owner"]
    url = shared_sandbox.url
    shared_sandbox.calls.clear()

    async with start_gateway(sandbox_settings(url)) as mcp_url:
        status, _, body = await post(mcp_url, owner)
    assert status == REFUSALS[OWNER.code].http_status == 403
    assert body["error"]["data"]["code"] == OWNER.code
    assert SAID in body["error"]["message"]
    assert "/.well-known/oauth-protected-resource/mcp" in body["error"]["data"]["next_step"]

    cache_root = tmp_path / ".pdpp"
    write_credential(cache_root, url, owner)  # unlabelled: only the RS can tell
    args = ("--provider-url", url, "--cache-root", str(cache_root))
    for done in (run_cli("stdio", *args), run_cli("call", "schema", "{}", *args)):
        assert done.returncode == REFUSALS[OWNER.code].exit_code == 77, done.stderr
        assert done.stdout == ""
        assert SAID in done.stderr
        assert local_connect(url) in done.stderr
        assert owner not in done.stderr
    assert {call.path for call in shared_sandbox.calls} == {"/v1/schema"}  # probes only, never data

    board = Switchboard(url, down=True)
    async with board.serve() as late_url:
        write_credential(cache_root, late_url, owner)
        async with Client(stdio_params(late_url, cache_root), mode="legacy", cache=None) as client:  # type: ignore[arg-type]
            board.down = False
            result = await client.call_tool("search", {"query": "invoice"})
    assert result.is_error
    assert error_of(result)["code"] == OWNER.code
    assert SAID in result.content[0].text  # type: ignore[union-attr]
    assert local_connect(late_url) in result.content[0].text  # type: ignore[union-attr]
    assert board.data_reads() == []
